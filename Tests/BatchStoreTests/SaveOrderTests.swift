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

    @Test("an existing row pointed at a parent inserted in the same save: the keys are checked at the commit, so the update written before the insert goes in; a key that still names nothing fails the save, which writes nothing")
    func updateToNewParent() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema + "INSERT INTO z_root VALUES (100); INSERT INTO m_parent VALUES (10, 100); INSERT INTO a_child VALUES (1, 10, 'old');")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let child = try context.existingObject(with: ObjectID(entity: try context.entity(named: "a_child"), key: .rowid(1)))
        _ = try context.insertObject(into: "m_parent", values: ["id": 11, "root_id": 100])
        try child.setValue(.integer(11), forKey: "parent_id")
        try context.save()
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT parent_id || ':' || (SELECT count(*) FROM m_parent) FROM a_child") } == "11:2")
        // A key naming nothing even at the end: the whole save fails, nothing written.
        try child.setValue(.integer(99), forKey: "parent_id")
        _ = try context.insertObject(into: "z_root", values: ["id": 101])
        #expect(throws: BatchStoreError.self) { try context.save() }
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT parent_id || ':' || (SELECT count(*) FROM z_root) FROM a_child") } == "11:1")
    }
}

/// One live object per row after any save.
@Suite("One object per row after a save")
struct SupersededTests {
    @Test("a fault registered for a key, then an insert that takes the key: after the save the inserted object stands for the row; the fault says so instead of reading or saving on its own", arguments: [false, true])
    func insertTakesAFaultsKey(textKey: Bool) throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: textKey ? "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID" : "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER)")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let entity = try context.entity(named: "t")
        let key: SQLValue = textKey ? "a" : 5
        let id = ObjectID(entity: entity, key: textKey ? .primaryKey([key]) : .rowid(5))
        let fault = context.object(with: id)
        #expect(throws: BatchStoreError.self) { _ = try fault.value(forKey: "v") }
        let inserted = try context.insertObject(into: "t", values: ["k": key, "v": 1])
        try context.save()
        #expect(context.registeredObject(for: id) === inserted)
        #expect(context.object(with: id) === inserted)
        do {
            _ = try fault.value(forKey: "v")
            Issue.record("the superseded fault read a value")
        } catch let error as BatchStoreError {
            #expect(error.code == .objectNotFound && error.message.contains("stands for the row now"), "\(error.message)")
        }
        #expect(throws: BatchStoreError.self) { try fault.setValue(2, forKey: "v") }
        // Changes go through the one object and are saved.
        try inserted.setValue(3, forKey: "v")
        try context.save()
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT v FROM t") } == 3)
        #expect(!context.hasChanges)
    }
}
