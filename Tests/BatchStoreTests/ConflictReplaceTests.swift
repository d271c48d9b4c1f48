import BatchStore
import Foundation
import Testing
import TestSupport

/// A column declared `UNIQUE ON CONFLICT REPLACE` makes a plain UPDATE or INSERT that repeats a
/// value delete the other row holding it, silently. Every write here says OR ABORT instead: the
/// conflict fails the write, which changes nothing and names the constraint.
@Suite("Tables whose constraints say ON CONFLICT REPLACE")
struct ConflictReplaceTests {
    func file(_ dir: TempDir) throws -> String {
        let path = dir.path("u.sqlite")
        _ = try sqlite3(path, """
            CREATE TABLE u(id INTEGER PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE, n INTEGER);
            INSERT INTO u VALUES (1, 'a@x', 1), (2, 'b@x', 2), (3, 'c@x', 3);
            """)
        return path
    }

    func rows(_ path: String) throws -> String { try sqlite3(path, "SELECT id || ' ' || email FROM u ORDER BY id") }

    @Test("a batch update, a save, a batch insert and an undo that would repeat a value fail and change nothing; no other row is deleted")
    func nothingReplaced() throws {
        let dir = TempDir()
        let path = try file(dir)
        let before = try rows(path)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        #expect(throws: BatchStoreError.self) {
            try context.execute(BatchUpdateRequest(entityName: "u", predicate: try FetchPredicate(format: "id == 3"), propertiesToUpdate: [("email", .constant(.text("a@x")))]), undoable: true)
        }
        #expect(try rows(path) == before)
        #expect(throws: BatchStoreError.self) {
            try context.execute(BatchInsertRequest(entityName: "u", objects: [["id": .integer(9), "email": .text("b@x")]]))
        }
        #expect(try rows(path) == before)
        let object = try #require(try context.fetchAll(FetchRequest(entityName: "u", predicate: try FetchPredicate(format: "id == 2"))).first)
        try object.setValue(.text("c@x"), forKey: "email")
        #expect(throws: BatchStoreError.self) { try context.save() }
        context.rollback()
        #expect(try rows(path) == before)
        // Undo that would put back a value another program took since: it fails, and changes nothing.
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "u", predicate: try FetchPredicate(format: "id == 2"))), undoable: true)
        _ = try sqlite3(path, "INSERT INTO u VALUES (5, 'b@x', 55)")
        let taken = try rows(path)
        #expect(throws: BatchStoreError.self) { try context.undo() }
        #expect(try rows(path) == taken, "row 5 is not deleted by the undo")
    }
}
