import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// Unsaved changes and `save()` over PostgreSQL beyond the shared model (`PostgresSaveModelTests`):
/// what the server adds (types, defaults, generated columns, keys it makes) and what it refuses.
@Suite("Saving over PostgreSQL: types, defaults, keys, refusals, one transaction", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresSavingTests {
    static let tableSQL = """
        CREATE TABLE p(id serial PRIMARY KEY, n int NOT NULL DEFAULT 5, t text, g int GENERATED ALWAYS AS (n * 2) STORED);
        INSERT INTO p(n, t) VALUES (1, 'a'), (2, 'b');
        CREATE TABLE k(v int); INSERT INTO k VALUES (1);
        CREATE VIEW w AS SELECT id, t FROM p;
        """

    static func open(_ server: PostgresServer) throws -> (PostgresContext, String) {
        let database = try server.makeDatabase("save", sql: tableSQL)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        return (PostgresContext(store: store), database)
    }

    static func id(_ context: PostgresContext, _ key: Int64) throws -> ObjectID {
        ObjectID(entity: try context.entity(named: "p"), key: .primaryKey([.integer(key)]))
    }

    @Test("an insert takes the key, the defaults and the generated values the server made; a value is read by its column's type")
    func serverValues() throws {
        let server = try PostgresServer.require()
        let (context, database) = try Self.open(server)
        let inserted = try context.insertObject(into: "p", values: ["t": .text("new")])
        #expect(inserted.isInserted && context.hasChanges)
        #expect(try server.psql("SELECT count(*) FROM p", database: database) == "2", "nothing written before the save")
        try context.save()
        #expect(!context.hasChanges && !inserted.isInserted)
        #expect(inserted.objectID == (try Self.id(context, 3)), "the serial's key")
        #expect(context.registeredObject(for: try Self.id(context, 3)) === inserted)
        #expect(!inserted.isFault, "the row came back with the insert")
        #expect(try inserted.value(forKey: "n") == .integer(5))
        #expect(try inserted.value(forKey: "g") == .integer(10))
        #expect(try inserted.value(forKey: "t") == .text("new"))

        let first = try context.existingObject(with: try Self.id(context, 1))
        try first.setValue(.text("12"), forKey: "n")
        #expect(try first.value(forKey: "n") == .text("12"), "unsaved, the value as given")
        try context.save()
        #expect(try first.value(forKey: "n") == .integer(12), "saved, the value as the column holds it")
        #expect(try first.value(forKey: "g") == .integer(24))
        #expect(try server.psql("SELECT n, g FROM p WHERE id = 1", database: database) == "12|24")
    }

    @Test("a bad value or a broken constraint fails the whole save in one line naming the object; nothing is written and the changes stay")
    func allOrNothing() throws {
        let server = try PostgresServer.require()
        let (context, database) = try Self.open(server)
        let before = try server.psql("SELECT id, n, t FROM p ORDER BY id", database: database)
        let first = try context.existingObject(with: try Self.id(context, 1))
        try first.setValue(.real(1.5), forKey: "n")
        let bad = #expect(throws: BatchStoreError.self) { try context.save() }
        #expect(bad?.message.contains("nothing was written") == true, "\(bad?.message ?? "")")
        #expect(bad?.message.contains("\n") == false)
        #expect(context.hasChanges)
        context.rollback()
        #expect(!context.hasChanges)
        #expect(try first.value(forKey: "n") == .integer(1))

        // The duplicate key comes last (deletes, then updates, then inserts): the delete and the
        // update before it are rolled back with it.
        try context.delete(try context.existingObject(with: try Self.id(context, 2)))
        try first.setValue(.text("x"), forKey: "t")
        let duplicate = try context.insertObject(into: "p", values: ["id": .integer(1), "t": .text("dup")])
        let failed = #expect(throws: BatchStoreError.self) { try context.save() }
        #expect(failed?.code == .constraint)
        #expect(failed?.message.contains("saving an inserted p") == true, "\(failed?.message ?? "")")
        #expect(try server.psql("SELECT id, n, t FROM p ORDER BY id", database: database) == before)
        #expect(context.changedObjects.count == 3)
        try context.delete(duplicate)
        try context.save()
        #expect(try server.psql("SELECT id, n, t FROM p ORDER BY id", database: database) == "1|1|x")
    }

    @Test("an update of a row another session deleted fails the save with objectNotFound")
    func rowGone() throws {
        let server = try PostgresServer.require()
        let (context, database) = try Self.open(server)
        let second = try context.existingObject(with: try Self.id(context, 2))
        try second.setValue(.text("late"), forKey: "t")
        _ = try server.psql("DELETE FROM p WHERE id = 2", database: database)
        let error = #expect(throws: BatchStoreError.self) { try context.save() }
        #expect(error?.code == .objectNotFound)
        #expect(context.hasChanges)
    }

    @Test("keys of saved objects, generated columns, views and tables without a primary key refuse changes, saying why")
    func refusals() throws {
        let server = try PostgresServer.require()
        let (context, _) = try Self.open(server)
        let first = try context.existingObject(with: try Self.id(context, 1))
        let key = #expect(throws: BatchStoreError.self) { try first.setValue(.integer(9), forKey: "id") }
        #expect(key?.message.contains("primary key") == true, "\(key?.message ?? "")")
        let generated = #expect(throws: BatchStoreError.self) { try first.setValue(.integer(9), forKey: "g") }
        #expect(generated?.code == .readOnly)
        let view = #expect(throws: BatchStoreError.self) { _ = try context.insertObject(into: "w", values: ["t": .text("v")]) }
        #expect(view?.message.contains("w is a view") == true, "\(view?.message ?? "")")
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "k", fetchBatchSize: 10), residentBatches: 2, firstBatch: nil, progress: nil)
        let row = try #require(try result.object(at: 0))
        let keyless = #expect(throws: BatchStoreError.self) { try row.setValue(.integer(2), forKey: "v") }
        #expect(keyless?.message.contains("no primary key") == true, "\(keyless?.message ?? "")")
        #expect(!context.hasChanges)
    }

    @Test("an open result shows a saved update at once, and a saved insert after its refresh")
    func openResults() throws {
        let server = try PostgresServer.require()
        let (context, _) = try Self.open(server)
        let request = BatchStore.FetchRequest(entityName: "p", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 10)
        let result = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
        let first = try #require(try result.object(at: 0))
        try first.setValue(.text("z"), forKey: "t")
        _ = try context.insertObject(into: "p", values: ["n": .integer(7)])
        try context.save()
        #expect(try result.object(at: 0) === first)
        #expect(try result.object(at: 0)?.value(forKey: "t") == .text("z"))
        #expect(result.count == 2)
        _ = try result.refresh()
        #expect(result.count == 3)
        #expect(try result.object(at: 2)?.value(forKey: "n") == .integer(7))
    }
}

/// The save order over PostgreSQL: parents before children, children before parents when deleted.
@Suite("PostgreSQL save order", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresSaveOrderTests {
    @Test("a root, its parent and its child inserted in one save (the child's table sorts first) go in; deleted in one save, they go out")
    func parentsFirst() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("saveorder", sql: """
            CREATE TABLE z_root(id int PRIMARY KEY);
            CREATE TABLE m_parent(id int PRIMARY KEY, root_id int REFERENCES z_root(id));
            CREATE TABLE a_child(id int PRIMARY KEY, parent_id int NOT NULL REFERENCES m_parent(id), note text);
            """)
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        func counts() throws -> String { try server.psql("SELECT (SELECT count(*) FROM a_child) || '' || (SELECT count(*) FROM m_parent) || (SELECT count(*) FROM z_root)", database: database) }
        _ = try context.insertObject(into: "a_child", values: ["id": 1, "parent_id": 10, "note": "child"])
        _ = try context.insertObject(into: "m_parent", values: ["id": 10, "root_id": 100])
        _ = try context.insertObject(into: "z_root", values: ["id": 100])
        try context.save()
        #expect(try counts() == "111")
        for (table, id) in [("z_root", 100), ("a_child", 1), ("m_parent", 10)] {
            try context.delete(try context.existingObject(with: ObjectID(entity: try context.entity(named: table), key: .primaryKey([.integer(Int64(id))]))))
        }
        try context.save()
        #expect(try counts() == "000")
    }
}

@Suite("PostgreSQL: one object per row after a save", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresSupersededTests {
    @Test("a fault registered for a key, then an insert that takes the key: after the save the inserted object stands for the row; the fault says so")
    func insertTakesAFaultsKey() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("superseded", sql: "CREATE TABLE t(k text PRIMARY KEY, v int)")
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        let id = ObjectID(entity: try context.entity(named: "t"), key: .primaryKey(["a"]))
        let fault = context.object(with: id)
        let inserted = try context.insertObject(into: "t", values: ["k": "a", "v": 1])
        try context.save()
        #expect(context.registeredObject(for: id) === inserted)
        do {
            _ = try fault.value(forKey: "v")
            Issue.record("the superseded fault read a value")
        } catch let error as BatchStoreError {
            #expect(error.code == .objectNotFound && error.message.contains("stands for the row now"), "\(error.message)")
        }
        try inserted.setValue(3, forKey: "v")
        try context.save()
        #expect(try server.psql("SELECT v FROM t", database: database) == "3")
    }
}
