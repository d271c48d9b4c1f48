import BatchStore
import Foundation
import GRDB
import Testing

/// A save writes parents before children and deletes children before parents, by the tables'
/// foreign keys, whatever the tables' names: before, it went by name, and a child table that
/// sorted first failed the save.
@Suite("The order a save writes in")
struct SaveOrderTests {
    static let schema = """
        CREATE TABLE a_child(id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES m_parent(id), note TEXT);
        CREATE TABLE m_parent(id INTEGER PRIMARY KEY, root_id INTEGER REFERENCES z_root(id));
        CREATE TABLE z_root(id INTEGER PRIMARY KEY);
        """

    @Test("a root, its parent and its child inserted in one save (the child's table sorts first) go in; deleted in one save, they go out")
    func parentsFirst() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        _ = try context.insertObject(into: "a_child", values: ["id": 1, "parent_id": 10, "note": "child"])
        _ = try context.insertObject(into: "m_parent", values: ["id": 10, "root_id": 100])
        _ = try context.insertObject(into: "z_root", values: ["id": 100])
        try context.save()
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT (SELECT count(*) FROM a_child) || (SELECT count(*) FROM m_parent) || (SELECT count(*) FROM z_root)") } == "111")
        for (table, id) in [("z_root", 100), ("a_child", 1), ("m_parent", 10)] {
            let object = try context.existingObject(with: ObjectID(entity: try context.entity(named: table), key: .rowid(Int64(id))))
            try context.delete(object)
        }
        try context.save()
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT (SELECT count(*) FROM a_child) || (SELECT count(*) FROM m_parent) || (SELECT count(*) FROM z_root)") } == "000")
    }
}
