import BatchStore
import Foundation
import GRDB
import Testing

/// Every write refused because the store, the table or the column cannot be written carries
/// `.readOnly`, whichever API asked.
@Suite struct ReadOnlyCodeTests {
    static let sql = """
        CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, twice INTEGER GENERATED ALWAYS AS (v * 2) VIRTUAL);
        INSERT INTO n(id, v) VALUES (1, 10), (2, 20);
        CREATE VIEW nv AS SELECT id, v FROM n;
        """

    /// The code `body` throws with (nil when it does not throw, or throws something else).
    func code(_ body: () throws -> Any) -> BatchStoreError.Code? {
        do { _ = try body(); return nil } catch let error as BatchStoreError { return error.code } catch { return nil }
    }

    @Test("a store opened read-only refuses every kind of write with .readOnly and writes nothing")
    func readOnlyStore() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.sql)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let context = try ManagedObjectContext(store: store)
        let all = FetchRequest(entityName: "n")
        #expect(code { try context.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("v", .constant(0))])) } == .readOnly)
        #expect(code { try context.execute(BatchDeleteRequest(fetchRequest: all)) } == .readOnly)
        #expect(code { try context.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: try store.entity(named: "n"), key: .rowid(1))])) } == .readOnly)
        #expect(code { try context.execute(BatchInsertRequest(entityName: "n", objects: [["v": 3]])) } == .readOnly)
        #expect(code { try context.insertObject(into: "n", values: ["v": 3]) } == .readOnly)
        let object = try #require(try context.fetchAll(all).first)
        #expect(code { try object.setValue(.integer(0), forKey: "v") } == .readOnly)
        #expect(code { try context.delete(object) } == .readOnly)
        let rows = try context.fetchBatched(all)
        #expect(code { try rows.execute(BatchDeleteRequest(fetchRequest: all)) } == .readOnly)
        #expect(code { try rows.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("v", .constant(0))])) } == .readOnly)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)

        let several = try CoordinatedContext(coordinator: PersistentStoreCoordinator(stores: [store]))
        #expect(code { try several.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("v", .constant(0))])) } == .readOnly)
        #expect(code { try several.execute(BatchDeleteRequest(fetchRequest: all)) } == .readOnly)
    }

    @Test("views and generated columns refuse writes with .readOnly, in a writable store too")
    func viewsAndGeneratedColumns() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.sql)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        #expect(code { try context.execute(BatchUpdateRequest(entityName: "nv", propertiesToUpdate: [("v", .constant(0))])) } == .readOnly)
        #expect(code { try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "nv"))) } == .readOnly)
        #expect(code { try context.insertObject(into: "nv") } == .readOnly)
        #expect(code { try context.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("twice", .constant(0))])) } == .readOnly)
        #expect(code { try context.execute(BatchInsertRequest(entityName: "n", objects: [["v": 1, "twice": 2]])) } == .readOnly)
        let object = try #require(try context.fetchAll(FetchRequest(entityName: "n")).first)
        #expect(code { try object.setValue(.integer(0), forKey: "twice") } == .readOnly)
        let view = try context.fetchBatched(FetchRequest(entityName: "nv"))
        #expect(code { try view.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "nv"))) } == .readOnly)
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT v FROM n ORDER BY id") } == [10, 20])
    }
}
