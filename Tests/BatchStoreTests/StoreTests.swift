import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct StoreTests {
    /// SQLite's files next to `path` (-wal, -shm, -journal) that exist now.
    func sidecars(_ path: String) -> [String] {
        ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: path + $0) }
    }

    @Test("walAtFirstWrite: fetching, faulting, searching and counting leave the file byte for byte; the first write switches it to WAL")
    func walAtFirstWrite() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 2000)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(before[18] == 1 && before[19] == 1, "a rollback-journal file to start with")
        do {
            let store = try PersistentStore(path: path, options: .init(walAtFirstWrite: true))
            let context = try ManagedObjectContext(store: store)
            let request = FetchRequest(entityName: "n", predicate: try FetchPredicate(format: "v > 100"),
                                       sortDescriptors: [SortDescriptor(key: "name", ascending: false)], fetchBatchSize: 50)
            let rows = try context.fetchBatched(request)
            _ = try rows.object(at: 1500)
            _ = try rows.firstPosition(matching: try FetchPredicate(format: "name CONTAINS \"99\""), after: 0)
            _ = try rows.refresh(keeping: [3])
            _ = try context.count(for: FetchRequest(entityName: "n"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "reading changed the file")
            #expect(sidecars(path).isEmpty)
            _ = try context.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate(format: "id == 1"),
                                                       propertiesToUpdate: [("v", .constant(.integer(0)))]))
            #expect(try context.dataVersion() >= 0)
        }
        let after = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(after[18] == 2 && after[19] == 2, "the first write switched the file to WAL")
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT v FROM n WHERE id = 1") } == 0)
    }

    @Test("walAtFirstWrite: the context's own switch to WAL is no change of data_version, and a first write that fails switches the file back; another program's write still is seen")
    func ownWALSwitchIsNoOutsideChange() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO t VALUES (1, 1), (2, 2);")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path, options: .init(walAtFirstWrite: true)))
        let start = try context.dataVersion()
        // The update fails (NOT NULL) after the switch: nothing written, the file back in its own mode.
        #expect(throws: BatchStoreError.self) {
            _ = try context.execute(BatchUpdateRequest(entityName: "t", predicate: nil, propertiesToUpdate: [("v", .constant(.null))]))
        }
        #expect(try direct(path) { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "delete")
        #expect(try context.dataVersion() == start, "our own switches are not another program's write")
        // The next write that succeeds switches it to WAL for good.
        _ = try context.execute(BatchUpdateRequest(entityName: "t", predicate: nil, propertiesToUpdate: [("v", .constant(.integer(5)))]))
        #expect(try direct(path) { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try context.dataVersion() == start)
        try direct(path) { try $0.execute(sql: "UPDATE t SET v = 3 WHERE id = 1") }
        #expect(try context.dataVersion() != start, "another program's write is seen")
    }

    @Test func missingPathIsAnErrorAndIsNotCreated() throws {
        let dir = TempDir()
        let path = dir.path("missing.sqlite")
        #expect(throws: BatchStoreError(.fileNotFound, "\(path): no such file")) { try PersistentStore(path: path) }
        #expect(throws: BatchStoreError.self) { try PersistentStore(path: path, options: .init(readOnly: true)) }
        #expect(!FileManager.default.fileExists(atPath: path))
        let created = try PersistentStore(path: path, options: .init(create: true))
        #expect(created.schema.entities.isEmpty)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func directoriesAndNonDatabasesAreRefused() throws {
        let dir = TempDir()
        do { _ = try PersistentStore(path: dir.url.path); Issue.record("opened a directory") } catch let e as BatchStoreError {
            #expect(e.code == .notADatabase)
            #expect(e.message.contains("directory"))
        }
        let junk = dir.path("junk.txt")
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: junk))
        do { _ = try PersistentStore(path: junk); Issue.record("opened junk") } catch let e as BatchStoreError {
            #expect(e.code == .notADatabase)
        }
        // Nothing was written to the junk file.
        #expect(try Data(contentsOf: URL(fileURLWithPath: junk)) == Data(repeating: 0x41, count: 4096))
    }

    @Test func schemaBecomesEntities() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE child(
              id INTEGER PRIMARY KEY,
              parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE,
              other INTEGER REFERENCES parent ON DELETE SET NULL,
              qty REAL NOT NULL DEFAULT 1.5,
              twice INTEGER GENERATED ALWAYS AS (qty * 2) VIRTUAL);
            CREATE TABLE kv(k TEXT, n INTEGER, v BLOB, PRIMARY KEY (k, n)) WITHOUT ROWID;
            CREATE VIEW big AS SELECT * FROM parent WHERE id > 10;
            CREATE INDEX child_qty ON child(qty);
            """)
        let store = try PersistentStore(path: path)
        #expect(store.schema.entities.map(\.name) == ["child", "kv", "parent", "big"])
        let child = try store.entity(named: "child")
        #expect(child.kind == .table)
        #expect(child.attributes.map(\.name) == ["id", "parent_id", "other", "qty", "twice"])
        let qty = try #require(child.attribute(named: "qty"))
        #expect(qty.declaredType == "REAL" && qty.isNotNull && qty.defaultValueSQL == "1.5")
        #expect(child.attribute(named: "twice")?.isGenerated == true)
        #expect(child.primaryKey == ["id"])
        #expect(child.relationship(named: "parent")?.deleteRule == .cascade)
        #expect(child.relationship(named: "other")?.deleteRule == .nullify)
        #expect(child.relationship(named: "other")?.destinationEntityName == "parent")
        #expect(child.indexedColumns.contains("qty"))
        let parent = try store.entity(named: "parent")
        #expect(parent.uniquenessConstraints.contains(["name"]))
        let kv = try store.entity(named: "kv")
        #expect(kv.kind == .withoutRowidTable)
        #expect(kv.primaryKey == ["k", "n"])
        let view = try store.entity(named: "big")
        #expect(view.kind == .view && view.isReadOnly)
        #expect(throws: BatchStoreError.self) { try store.entity(named: "nope") }
    }

    @Test func identifiersOfAnySpellingWorkEverywhere() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE "order ""items"" 表" ("select" INTEGER, "naïve col" TEXT, "we""ird" TEXT);
            INSERT INTO "order ""items"" 表" VALUES (3, 'c', 'x'), (1, 'a', 'y'), (2, 'b', 'z');
            """)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let name = "order \"items\" 表"
        let request = FetchRequest(entityName: name, predicate: try FetchPredicate("#select >= 2 AND `naïve col` != 'zz'"),
                                   sortDescriptors: try SortDescriptor.parse("`select` desc"), fetchBatchSize: 2)
        let rows = try context.fetchBatched(request)
        #expect(rows.count == 2)
        #expect(try rows.map { try $0?.value(forKey: "naïve col") } == [.text("c"), .text("b")])
        let withKey = try FetchPredicate("%K == %@", .key("we\"ird"), "y")
        #expect(try context.count(for: FetchRequest(entityName: name, predicate: withKey)) == 1)
        let object = try #require(rows[rows.startIndex])
        try object.setValue("changed", forKey: "we\"ird")
        try context.save()
        let check = try direct(path) { db in try String.fetchOne(db, sql: "SELECT \"we\"\"ird\" FROM \"order \"\"items\"\" 表\" WHERE \"select\" = 3") }
        #expect(check == "changed")
    }

    @Test func readOnlyStoresRefuseWrites() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 3)
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        #expect(store.isReadOnly)
        let context = try ManagedObjectContext(store: store)
        let object = try context.existingObject(with: ObjectID(entity: try store.entity(named: "n"), key: .rowid(1)))
        #expect(throws: BatchStoreError.self) { try object.setValue(5, forKey: "v") }
        #expect(throws: BatchStoreError.self) { try context.insertObject(into: "n") }
    }
}
