import BatchStore
import Foundation
import Testing
import TestSupport

/// Files made by the sqlite3 shell (foreign keys unchecked) often hold rows whose key refers to
/// nothing. A delete of such rows must come back whole on undo: before, the undo's re-insert
/// tripped SQLite's key check and failed, leaving every row deleted.
@Suite("Undo of a delete over rows whose foreign keys dangle")
struct UndoForeignKeyTests {
    func file(_ dir: TempDir) throws -> String {
        let path = dir.path("pets.sqlite")
        // Made by the shell, as a user's file would be: pet 3's owner 99 does not exist.
        _ = try sqlite3(path, """
            CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE pet(id INTEGER PRIMARY KEY, owner INTEGER REFERENCES person(id), name TEXT);
            CREATE TABLE employee(id INTEGER PRIMARY KEY, boss INTEGER REFERENCES employee(id));
            INSERT INTO person VALUES (1, 'Ann'), (2, 'Bo');
            INSERT INTO pet VALUES (1, 1, 'Rex'), (2, 2, 'Tom'), (3, 99, 'Stray'), (4, 1, 'Kit'), (5, NULL, 'Nobody''s');
            INSERT INTO employee VALUES (1, NULL), (2, 1), (3, 2), (4, 1);
            """)
        return path
    }

    @Test("D of every pet, u: all five rows back byte for byte, the dangling one counted; keys are checked again afterwards")
    func deleteThenUndo() throws {
        let dir = TempDir()
        let path = try file(dir)
        let before = try sqlite3(path, "SELECT quote(id), quote(owner), quote(name) FROM pet ORDER BY id")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let deleted = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "pet"), resultType: .count), undoable: true)
        #expect(deleted.count == 5)
        #expect(try sqlite3(path, "SELECT count(*) FROM pet").hasPrefix("0"))
        let changes = try context.undo()
        #expect(changes.insertedCount == 5 && changes.danglingReferences == 1)
        #expect(try sqlite3(path, "SELECT quote(id), quote(owner), quote(name) FROM pet ORDER BY id") == before)
        #expect(!context.canUndo)
        // The connection checks keys again: an update to a missing owner is refused, nothing changed.
        #expect(throws: BatchStoreError.self) {
            _ = try context.execute(BatchUpdateRequest(entityName: "pet", predicate: try FetchPredicate(format: "id == 1"), propertiesToUpdate: [("owner", .constant(.integer(77)))]))
        }
        #expect(try sqlite3(path, "SELECT quote(id), quote(owner), quote(name) FROM pet ORDER BY id") == before)
    }

    @Test("rows that refer to each other come back together: none counted as dangling")
    func selfReference() throws {
        let dir = TempDir()
        let path = try file(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "employee"), resultType: .count), undoable: true)
        let changes = try context.undo()
        #expect(changes.insertedCount == 4 && changes.danglingReferences == 0)
        #expect(try sqlite3(path, "SELECT count(*) FROM employee").hasPrefix("4"))
    }
}
