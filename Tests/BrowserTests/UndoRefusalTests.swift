import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// An edit undo cannot restore runs without undo and says why; the browser tells by the error's
/// code, not its text.
@Suite("Edits that cannot be undone")
struct UndoRefusalTests {
    @Test("D on a table other tables cascade from deletes without undo, says why, and u then has nothing to undo")
    func cascadeDeletesWithoutUndo() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, director_id INTEGER REFERENCES director(id) ON DELETE CASCADE);
            INSERT INTO director VALUES (1, 'Varda'), (2, 'Ozu');
            INSERT INTO movie VALUES (10, 1), (11, 2);
            """)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "director"))
        #expect(b.state.count == 2)
        b.send(keys("vD"))
        #expect(term.text.suffix(2).joined(separator: " ").hasSuffix("from director — CANNOT BE UNDONE: deleting from director can change movie through foreign-key actions, which undo could not restore? y/N"),
                "\(term.text.suffix(3))")
        b.send(.char("y"))
        #expect(b.state.message?.hasPrefix("deleted 1 row from director; cannot be undone, as its question said") == true,
                "\(b.state.message ?? "no message")")
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM director") } == [2])
        b.send(.char("u"))
        #expect(b.state.message == "nothing to undo")
    }

    @Test("a question that promised undo is kept: when undo became impossible between the question and y (a cascading key added meanwhile), y changes nothing and says why; asked again, the question says it cannot be undone")
    func promisedUndoIsKept() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            INSERT INTO director VALUES (1, 'Varda'), (2, 'Ozu');
            """)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "director"))
        b.send(keys("vD"))
        #expect(term.text.last == "Delete the 1 marked row from director? y/n", "\(term.text.suffix(3))")
        // Another program adds a table that cascades from director while the question is up.
        try direct(path) { try $0.execute(sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, director_id INTEGER REFERENCES director(id) ON DELETE CASCADE); INSERT INTO movie VALUES (10, 1)") }
        b.send(.char("y"))
        #expect(b.state.messageIsError && b.state.message?.hasPrefix("undo is no longer possible: deleting from director can change movie through foreign-key actions") == true
                && b.state.message?.contains("nothing was changed") == true, "\(b.state.message ?? "no message")")
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM director ORDER BY id") } == [1, 2])
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM movie") } == [10])
        b.send(keys("D"))
        #expect(term.text.suffix(2).joined(separator: " ").contains("CANNOT BE UNDONE: deleting from director can change movie"), "\(term.text.suffix(3))")
    }

    @Test("U of a key another table's foreign key updates with (declared without parent columns: the primary key) says CANNOT BE UNDONE before y")
    func onUpdateActionByPrimaryKey() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE director(code TEXT PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, director_code TEXT REFERENCES director ON UPDATE SET NULL);
            INSERT INTO director VALUES ('a', 'Varda'); INSERT INTO movie VALUES (10, 'a');
            """)
        let (b, term) = try makeBrowser(path, width: 160, options: BrowserOptions(table: "director"))
        b.send([.char("U")] + keys("code = code || \"x\"") + [.enter])
        #expect(term.text.suffix(3).joined(separator: " ").contains("CANNOT BE UNDONE: this update of director can change movie through foreign-key actions"), "\(term.text.suffix(3))")
        b.send(.char("n"))
        b.send([.char("U")] + keys("name = \"x\"") + [.enter])
        #expect(!term.text.suffix(3).joined(separator: " ").contains("CANNOT BE UNDONE"), "\(term.text.suffix(3))")
    }

    @Test("D on a table whose delete trigger writes another table says CANNOT BE UNDONE before y and names the trigger; y then deletes without undo")
    func triggerRefusesUndo() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE item(id INTEGER PRIMARY KEY, v INTEGER);
            CREATE TABLE log(id INTEGER);
            CREATE TRIGGER logged AFTER DELETE ON item BEGIN INSERT INTO log VALUES (old.id); END;
            INSERT INTO item VALUES (1, 10), (2, 20);
            """)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "item"))
        b.send(keys("vD"))
        #expect(term.text.suffix(2).joined(separator: " ").hasSuffix("CANNOT BE UNDONE: deleting from item fires trigger logged, whose writes undo could not take back? y/N"),
                "\(term.text.suffix(3))")
        b.send(.char("y"))
        #expect(b.state.message?.hasPrefix("deleted 1 row from item; cannot be undone, as its question said") == true, "\(b.state.message ?? "no message")")
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM log") } == [1])
    }

    @Test("u on a key-less table whose deleted row's rowid went to a new row since: the question and the result say it comes back under a new rowid, and it does")
    func keylessUndoSaysRenumbered() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE loose(a, b); INSERT INTO loose VALUES ('x', 1), ('y', 2);")
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "loose"))
        b.send(keys("jvD"))
        b.send(.char("y"))
        #expect(b.state.count == 1)
        try direct(path) { try $0.execute(sql: "INSERT INTO loose VALUES ('new', 9)") }
        b.send(.char("u"))
        #expect(term.text.suffix(2).joined(separator: " ").contains("1 row comes back under a new rowid (SQLite gave its to a new row since)?"), "\(term.text.suffix(3))")
        b.send(.char("y"))
        #expect(b.state.message?.contains("1 row came back under a new rowid") == true, "\(b.state.message ?? "no message")")
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT a FROM loose ORDER BY a") } == ["new", "x", "y"])
    }
}
