@testable import BatchStore
import Foundation
import GRDB
import Testing

@Suite("Hardening")
struct HardeningTests {
    @Test("a full disk (max_page_count) rolls a batch update and insert back with a clear message")
    func fullDisk() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20_000)
        let before = try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(name) FROM n") }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        try context.withDatabase { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            _ = try Int.fetchOne(db, sql: "PRAGMA max_page_count = \(pages + 2)")
        }
        let update = BatchUpdateRequest(entityName: "n", propertiesToUpdate: try UpdateExpression.parseAssignments("name = name || ' and a much longer text that needs new pages'"))
        let error = #expect(throws: BatchStoreError.self) { try context.execute(update) }
        #expect(error?.message.contains("the disk is full") == true)
        var insert = BatchInsertRequest(entityName: "n", objects: (0..<5000).map { ["v": .integer(Int64($0)), "name": .text(String(repeating: "x", count: 200))] })
        insert.resultType = .count
        #expect(throws: BatchStoreError.self) { try context.execute(insert) }
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(name) FROM n") } == before)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 20_000)
        #expect(try direct(path) { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test("a view or trigger in the file cannot call our SQL functions or load extensions")
    func untrustedSchema() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, x TEXT);
            INSERT INTO t VALUES (1, 'a');
            CREATE VIEW uses_ours AS SELECT bs_fold(x, 1) AS f FROM t;
            CREATE VIEW loads AS SELECT load_extension('/tmp/evil') AS e;
            CREATE TABLE log(msg TEXT);
            CREATE TRIGGER on_update AFTER UPDATE ON t BEGIN INSERT INTO log VALUES (bs_case(new.x, 1)); END;
            """)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        #expect(store.schema.unreadableViews.keys.sorted() == ["loads", "uses_ours"])
        let error = #expect(throws: BatchStoreError.self) { _ = try context.fetchAll(FetchRequest(entityName: "loads")) }
        #expect(error?.message == "the view \"loads\" cannot be read: unsafe use of load_extension()")
        #expect(error?.code == .invalidQuery)
        #expect(throws: BatchStoreError.self) { _ = try context.fetchAll(FetchRequest(entityName: "uses_ours")) }
        let update = BatchUpdateRequest(entityName: "t", propertiesToUpdate: try UpdateExpression.parseAssignments("x = 'b'"))
        #expect(throws: BatchStoreError.self) { try context.execute(update) }
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT x FROM t") } == "a")
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM log") } == 0)
        // Our own queries still use them.
        #expect(try context.count(for: FetchRequest(entityName: "t", predicate: try FetchPredicate("x ==[c] 'A'"))) == 1)
    }

    @Test("empty files, corrupt pages and a locked file: one clear error each")
    func badFiles() throws {
        let dir = TempDir()
        let empty = dir.path("empty.sqlite")
        FileManager.default.createFile(atPath: empty, contents: Data())
        let store = try PersistentStore(path: empty)
        #expect(store.schema.entities.isEmpty)
        #expect(throws: BatchStoreError.self) { try store.entity(named: "movie") }

        let corruptDir = TempDir()
        let corrupt = try makeNumbers(corruptDir, count: 5000)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: corrupt))
        try h.seek(toOffset: 4096 * 3)
        h.write(Data(repeating: 0xA5, count: 4096 * 4))
        try h.close()
        let error = #expect(throws: BatchStoreError.self) {
            let c = try ManagedObjectContext(store: try PersistentStore(path: corrupt))
            _ = try c.fetchAll(FetchRequest(entityName: "n"))
        }
        #expect(error?.message.contains("not a usable SQLite database") == true || error?.message.contains("malformed") == true, "\(String(describing: error))")
        #expect(error?.code == .notADatabase)

        let lockedDir = TempDir()
        let locked = try makeNumbers(lockedDir, count: 10)
        var config = Configuration()
        config.allowsUnsafeTransactions = true   // the other writer keeps its lock between accesses
        let holder = try DatabaseQueue(path: locked, configuration: config)
        // Another writer holds an exclusive lock: even opening waits, then says so.
        try holder.inDatabase { try $0.execute(sql: "BEGIN EXCLUSIVE; DELETE FROM n WHERE id = 1") }
        let openError = #expect(throws: BatchStoreError.self) { _ = try PersistentStore(path: locked, options: .init(busyTimeout: 0.2)) }
        #expect(openError?.code == .busy && openError?.message.contains("locked by another connection") == true)
        try holder.inDatabase { try $0.execute(sql: "ROLLBACK") }
        // A write lock: reading works, the batch waits its timeout and fails, having written nothing.
        let busyStore = try PersistentStore(path: locked, options: .init(busyTimeout: 0.2))
        try holder.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE; DELETE FROM n WHERE id = 1") }
        let context = try ManagedObjectContext(store: busyStore)
        #expect(try context.count(for: FetchRequest(entityName: "n")) == 10)
        let busy = #expect(throws: BatchStoreError.self) {
            try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n")))
        }
        #expect(busy?.code == .busy)
        try holder.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try direct(locked) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 10)
    }
}
