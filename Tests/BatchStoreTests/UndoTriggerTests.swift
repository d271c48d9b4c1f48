@testable import BatchStore
import Foundation
import Testing
import TestSupport

/// Undo puts back the rows an edit journaled, nothing else: a trigger's writes to other tables
/// are not in the journal, so an edit that fires one is refused undo before it runs (and its
/// question says so). And a key-less table's deleted rows come back even when SQLite gave their
/// rowid to a new row since.
@Suite("Undo: triggers and key-less tables")
struct UndoTriggerTests {
    func file(_ dir: TempDir) throws -> String {
        let path = dir.path("t.sqlite")
        _ = try sqlite3(path, """
            CREATE TABLE item(id INTEGER PRIMARY KEY, v INTEGER, w INTEGER, note TEXT);
            INSERT INTO item VALUES (1, 10, 1, 'a'), (2, 20, 2, 'b'), (3, 30, 3, 'c');
            CREATE TABLE log(what TEXT, id INTEGER);
            CREATE TRIGGER "logged delete" AFTER DELETE ON item BEGIN INSERT INTO log VALUES ('deleted', old.id); END;
            CREATE TRIGGER logged_v AFTER UPDATE OF v ON item BEGIN INSERT INTO log VALUES ('v', new.id); END;
            CREATE TRIGGER checked_w BEFORE UPDATE OF w ON item WHEN new.w < 0 BEGIN SELECT RAISE(ABORT, 'w < 0'); END;
            CREATE TABLE stamped(id INTEGER PRIMARY KEY, v);
            INSERT INTO stamped VALUES (1, 1);
            CREATE TRIGGER stamp AFTER INSERT ON stamped BEGIN INSERT INTO log VALUES ('inserted', new.id); END;
            CREATE TABLE loose(a, b);
            INSERT INTO loose VALUES ('x', 1), ('y', 2), ('z', 3);
            """)
        return path
    }

    @Test("a delete or an update that fires a trigger that writes is refused undo, named in the reason; a trigger that only checks, or one on other columns, is not; nothing is changed by a refused undoable edit")
    func triggersRefuseUndo() throws {
        let dir = TempDir()
        let path = try file(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let item = try #require(context.store.schema.entity(named: "item"))
        #expect(context.undoRefusal(item, rows: 1, deleting: true, assigning: []) == "deleting from item fires trigger logged delete, whose writes undo could not take back")
        #expect(context.undoRefusal(item, rows: 1, deleting: false, assigning: ["V"]) == "this update of item fires trigger logged_v, whose writes undo could not take back")
        #expect(context.undoRefusal(item, rows: 1, deleting: false, assigning: ["w"]) == nil, "a trigger that only raises writes nothing")
        // A delete's undo inserts the rows again: an insert trigger that writes refuses undo too.
        let stamped = try #require(context.store.schema.entity(named: "stamped"))
        #expect(context.undoRefusal(stamped, rows: 1, deleting: true, assigning: []) == "putting the rows back into stamped would fire trigger stamp, whose writes undo could not take back")
        #expect(context.undoRefusal(stamped, rows: 1, deleting: false, assigning: ["v"]) == nil)
        #expect(context.undoRefusal(item, rows: 1, deleting: false, assigning: ["note"]) == nil, "UPDATE OF v does not fire on note")
        #expect(throws: BatchStoreError.self) {
            try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "item")), undoable: true)
        }
        #expect(try sqlite3(path, "SELECT count(*) FROM item").hasPrefix("3"))
        #expect(try sqlite3(path, "SELECT count(*) FROM log").hasPrefix("0"))
        // A trigger another program adds after the file was opened counts too.
        _ = try sqlite3(path, "CREATE TRIGGER late AFTER UPDATE ON item BEGIN UPDATE log SET id = id; END;")
        #expect(context.undoRefusal(item, rows: 1, deleting: false, assigning: ["note"]) == "this update of item fires trigger late, whose writes undo could not take back")
        // Without undo, the edit runs and its trigger writes.
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "item", predicate: try FetchPredicate(format: "id == 1"))))
        #expect(try sqlite3(path, "SELECT what || ' ' || id FROM log") == "deleted 1")
    }

    @Test("trigger texts are read for their event: quoted names, IF NOT EXISTS, schema prefixes, INSTEAD OF, comments, UPDATE OF lists")
    func triggerEvents() {
        #expect(TriggerEvent(sql: "CREATE TRIGGER t AFTER DELETE ON x BEGIN SELECT 1; END") == .delete)
        #expect(TriggerEvent(sql: "create temp trigger if not exists main.\"a b\" before insert on x begin select 1; end") == .insert)
        #expect(TriggerEvent(sql: "CREATE TRIGGER [update] /* c */ INSTEAD OF UPDATE ON v BEGIN SELECT 1; END") == .update(columns: []))
        #expect(TriggerEvent(sql: "CREATE TRIGGER `t` -- c\n UPDATE OF \"a\", b ON x BEGIN SELECT 1; END") == .update(columns: ["a", "b"]))
        #expect(TriggerEvent(sql: "CREATE TRIGGER delete_log UPDATE ON x BEGIN DELETE FROM y; END") == .update(columns: []))
        #expect(TriggerEvent(sql: "CREATE VIEW v AS SELECT 1") == nil)
        #expect(TriggerEvent.bodyWrites(sql: "CREATE TRIGGER t AFTER DELETE ON x BEGIN SELECT RAISE(ABORT, 'insert'); END") == false)
        #expect(TriggerEvent.bodyWrites(sql: "CREATE TRIGGER t AFTER DELETE ON x BEGIN SELECT 1; REPLACE INTO y VALUES (1); END") == true)
        #expect(TriggerEvent.bodyWrites(sql: "CREATE TRIGGER \"begin\" AFTER DELETE ON \"insert\" WHEN 1 BEGIN SELECT 'delete'; END") == false)
    }

    @Test("a key-less table: a deleted row whose rowid SQLite gave to a new row comes back under a new rowid, said before and after; the new row is kept")
    func keylessRowidReused() throws {
        let dir = TempDir()
        let path = try file(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let deleted = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "loose", predicate: try FetchPredicate(format: "a != 'x'")), resultType: .count), undoable: true)
        #expect(deleted.count == 2)
        // Another program inserts: SQLite gives it rowid 2, the rowid of the deleted 'y'.
        _ = try sqlite3(path, "INSERT INTO loose VALUES ('new', 9)")
        #expect(try sqlite3(path, "SELECT rowid FROM loose WHERE a = 'new'") == "2")
        let summary = try #require(try context.undoSummary())
        #expect(summary.rows == 2 && summary.changedSince == 0 && summary.renumbered == 1)
        let changes = try context.undo()
        #expect(changes.insertedCount == 2 && changes.renumbered == 1 && changes.changedSince == 0)
        #expect(try sqlite3(path, "SELECT a || ' ' || b FROM loose ORDER BY a") == "new 9\nx 1\ny 2\nz 3")
        #expect(try sqlite3(path, "SELECT rowid FROM loose WHERE a = 'z'") == "3", "a free rowid is kept")
        #expect(try sqlite3(path, "SELECT rowid > 3 FROM loose WHERE a = 'y'") == "1")
    }

    @Test("a key-less table: an updated row deleted since, whose rowid SQLite gave to a new row holding the same value, is left alone by undo and counted; the other rows get their old values")
    func keylessUpdateRowidReused() throws {
        let dir = TempDir()
        let path = try file(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        _ = try context.execute(BatchUpdateRequest(entityName: "loose", propertiesToUpdate: [("b", .constant(.integer(0)))]), undoable: true)
        // Another program deletes the last row and inserts one that takes its rowid, with b = 0 too.
        _ = try sqlite3(path, "DELETE FROM loose WHERE rowid = 3; INSERT INTO loose VALUES ('other', 0);")
        #expect(try sqlite3(path, "SELECT rowid FROM loose WHERE a = 'other'") == "3")
        let summary = try #require(try context.undoSummary())
        #expect(summary.rows == 3 && summary.changedSince == 1)
        let changes = try context.undo()
        #expect(changes.updatedCount == 2 && changes.changedSince == 1)
        #expect(try sqlite3(path, "SELECT a || ' ' || b FROM loose ORDER BY rowid") == "x 1\ny 2\nother 0")
    }

    @Test("a table keyed by a text primary key (a hidden rowid): a deleted row whose key another row took since is left alone and counted; one whose rowid only was taken comes back")
    func textKeyedRowidReused() throws {
        let dir = TempDir()
        let path = dir.path("k.sqlite")
        _ = try sqlite3(path, "CREATE TABLE k(code TEXT PRIMARY KEY, v); INSERT INTO k VALUES ('a', 1), ('b', 2), ('c', 3);")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "k", predicate: try FetchPredicate(format: "code != 'a'"))), undoable: true)
        // 'd' takes rowid 2 (b's); then 'c' is inserted again by another program, under rowid 3.
        _ = try sqlite3(path, "INSERT INTO k VALUES ('d', 4); INSERT INTO k VALUES ('c', 30);")
        let summary = try #require(try context.undoSummary())
        #expect(summary.rows == 2 && summary.changedSince == 1 && summary.renumbered == 1)
        let changes = try context.undo()
        #expect(changes.insertedCount == 1 && changes.changedSince == 1 && changes.renumbered == 1)
        #expect(try sqlite3(path, "SELECT code || ' ' || v FROM k ORDER BY code") == "a 1\nb 2\nc 30\nd 4")
    }

    @Test("a context whose file was replaced after it wrote empties its WAL when it goes, so the file now at the path reads as itself")
    func movedFileWALEmptiedOnClose() throws {
        let dir = TempDir()
        let path = try file(dir)
        do {
            let context = try ManagedObjectContext(store: try PersistentStore(path: path, options: .init(walAtFirstWrite: true)))
            _ = try context.execute(BatchUpdateRequest(entityName: "item", propertiesToUpdate: [("note", .constant(.text("z")))]))
            var info = stat()
            #expect(stat(path + "-wal", &info) == 0 && info.st_size > 0)
            _ = try sqlite3(dir.path("new.sqlite"), "CREATE TABLE fresh(x); INSERT INTO fresh VALUES (1);")
            #expect(rename(dir.path("new.sqlite"), path) == 0)
            #expect(context.fileProblem != nil)
        }
        var info = stat()
        #expect(stat(path + "-wal", &info) != 0 || info.st_size == 0, "no frame of the old file at the path")
        #expect(try sqlite3(path, "SELECT group_concat(name) FROM sqlite_schema") == "fresh")
        #expect(try sqlite3(path, "PRAGMA integrity_check") == "ok")
    }
}
