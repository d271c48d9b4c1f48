import BatchStore
import BatchStorePostgres
import Browser
import Foundation
import Testing
import TerminalCore
import TestSupport

/// Over PostgreSQL, an edit's question says before `y` whether undo will be possible, from the
/// same catalog checks the edit meets when it runs (foreign keys that cascade or set NULL,
/// inheritance children), not only the undo limit; and a question that promised undo is kept.
@Suite("PostgreSQL: undo said in the question", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresUndoQuestionTests {
    /// The question's lines (it wraps over the grid), trimmed and joined.
    static func last(_ terminal: MemoryTerminal) -> String? {
        terminal.lines.suffix(3).map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }.filter { !$0.hasPrefix(" ") }.joined(separator: " ")
    }
    static func screen(_ terminal: MemoryTerminal) -> String {
        terminal.lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }.joined(separator: "\n")
    }

    @Test("D on a table another cascades from, and U of a column another's key updates with, say CANNOT BE UNDONE before y; y then runs without undo; a cascade added between question and y fails the delete, changing nothing")
    func catalogRefusalsBeforeY() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("undoq", sql: """
            CREATE TABLE director(id int PRIMARY KEY, code text UNIQUE, name text);
            INSERT INTO director VALUES (1, 'a', 'Varda'), (2, 'b', 'Ozu'), (3, 'c', 'Kiarostami');
            CREATE TABLE movie(id int PRIMARY KEY, director_id int REFERENCES director ON DELETE CASCADE,
                               director_code text REFERENCES director(code) ON UPDATE CASCADE);
            INSERT INTO movie VALUES (10, 1, 'a'), (11, 2, 'b');
            CREATE TABLE plain(id int PRIMARY KEY, v int);
            INSERT INTO plain VALUES (1, 1), (2, 2);
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let terminal = MemoryTerminal(width: 200, height: 12)
        let browser = try Browser(context: PostgresContext(store: store), name: "undoq", options: BrowserOptions(table: "director", batchSize: 20), backend: terminal)
        browser.start()
        browser.send([.char("v"), .char("D")])
        #expect(Self.last(terminal)?.contains("Delete the 1 marked row from director — CANNOT BE UNDONE: deleting from director can change movie through foreign-key actions, which undo could not restore? y/N") == true,
                "\(Self.screen(terminal))")
        browser.send(.char("y"))
        #expect(browser.state.message?.hasPrefix("deleted 1 row from director; cannot be undone, as its question said") == true, "\(browser.state.message ?? "")")
        #expect(try server.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM movie", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "11")
        // An update of the referenced column: the same, asked first.
        browser.send([.char("U")] + "code = \"z\"".map { Key.char($0) } + [.enter])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE: this update of director can change movie through foreign-key actions") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        // The column named in another case: the same refusal (the edit matches names without regard to case).
        browser.send([.char("U")] + "CODE = \"z\"".map { Key.char($0) } + [.enter])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE: this update of director can change movie through foreign-key actions") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        // An update of a column nothing refers to promises undo.
        browser.send([.char("U")] + "name = \"x\"".map { Key.char($0) } + [.enter])
        #expect(Self.last(terminal)?.contains("in director: name = \"x\" — e.g. id 2: \"Ozu\" → \"x\"; id 3: \"Kiarostami\" → \"x\"? y/n") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))

        // A table nothing refers to: the question promises undo; a cascade added before y fails the delete.
        let fresh = try Browser(context: PostgresContext(store: store), name: "undoq", options: BrowserOptions(table: "plain", batchSize: 20), backend: terminal)
        fresh.start()
        fresh.send([.char("v"), .char("D")])
        #expect(Self.last(terminal)?.hasSuffix("Delete the 1 marked row from plain? y/n") == true, "\(Self.screen(terminal))")
        try server.psql("CREATE TABLE child(id int PRIMARY KEY, plain_id int REFERENCES plain ON DELETE SET NULL); INSERT INTO child VALUES (1, 1)", database: database)
        fresh.send(.char("y"))
        #expect(fresh.state.messageIsError && fresh.state.message?.hasPrefix("undo is no longer possible: deleting from plain can change child through foreign-key actions") == true
                && fresh.state.message?.contains("nothing was changed") == true, "\(fresh.state.message ?? "")")
        #expect(try server.psql("SELECT count(*) FROM plain", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        #expect(try server.psql("SELECT plain_id FROM child", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        fresh.send(.char("u"))
        #expect(fresh.state.message == "nothing to undo")
    }

    @Test("U's question shows a few rows old → new as the column's type writes them (numeric, timestamptz), and the non-NULL values it would turn into NULL; update --dry-run says the same")
    func updatePreview() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("preview", sql: """
            CREATE TABLE f(id int PRIMARY KEY, fare numeric(8,2), w int, at timestamptz);
            INSERT INTO f VALUES (1, 10.50, 2, '2013-01-01 05:00+00'), (2, NULL, 2, NULL), (3, 30, NULL, '2013-01-02 00:00+00'), (4, 40, NULL, NULL);
            """)
        try server.psql("ALTER DATABASE \(database) SET timezone TO 'UTC'", database: database)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let terminal = MemoryTerminal(width: 200, height: 12)
        let browser = try Browser(context: PostgresContext(store: store), name: "preview", options: BrowserOptions(table: "f", batchSize: 20), backend: terminal)
        browser.start()
        browser.send([.char("U")] + "fare = fare * w".map { Key.char($0) } + [.enter])
        let question = terminal.lines.suffix(3).map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }.joined(separator: " ")
        #expect(question.contains("in f: fare = fare * w — 2 non-NULL values of fare would become NULL — e.g. id 1: 10.50 → 21.00; id 2: nil → nil; id 3: 30.00 → nil; …? y/n"),
                "\(Self.screen(terminal))")
        browser.send(.char("n"))
        let dry = try CLI.run(["update", server.url(database: database), "--table", "f", "--all", "--set", "at = nil", "--dry-run"],
                              environment: ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()])
        #expect(dry.status == 0 && dry.stdout == "4\n", "\(dry.stderr)")
        #expect(dry.stderr.hasPrefix("e.g. id 1: \"2013-01-01 05:00:00+00\" → nil; id 2: nil → nil; id 3: \"2013-01-02 00:00:00+00\" → nil; …\nnote: 2 non-NULL values of at would become NULL\n"), "\(dry.stderr)")
        #expect(try server.psql("SELECT count(*) FROM f WHERE at IS NULL", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "2")
    }

    @Test("D on a table whose ON DELETE trigger writes another table, and U of a column an UPDATE OF trigger watches, say CANNOT BE UNDONE before y, naming the trigger; U of another column and a disabled trigger promise undo")
    func triggersBeforeY() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("undotrig", sql: """
            CREATE TABLE item(id int PRIMARY KEY, v int, note text);
            INSERT INTO item VALUES (1, 10, 'a'), (2, 20, 'b');
            CREATE TABLE log(what text, id int);
            CREATE FUNCTION log_it() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO log VALUES (TG_OP, OLD.id); RETURN NULL; END $$;
            CREATE TRIGGER logged_delete AFTER DELETE ON item FOR EACH ROW EXECUTE FUNCTION log_it();
            CREATE TRIGGER logged_v AFTER UPDATE OF v ON item FOR EACH ROW EXECUTE FUNCTION log_it();
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let terminal = MemoryTerminal(width: 200, height: 12)
        let browser = try Browser(context: PostgresContext(store: store), name: "undotrig", options: BrowserOptions(table: "item", batchSize: 20), backend: terminal)
        browser.start()
        browser.send([.char("v"), .char("D")])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE: deleting from item (or its undo) fires trigger logged_delete, and undo could not take back what a trigger function may have written? y/N") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        browser.send([.char("U")] + "v = v + 1".map { Key.char($0) } + [.enter])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE: this update of item fires trigger logged_v") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        browser.send([.char("U")] + "note = \"z\"".map { Key.char($0) } + [.enter])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE") == false && Self.last(terminal)?.hasSuffix("? y/n") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        try server.psql("ALTER TABLE item DISABLE TRIGGER logged_delete", database: database)
        browser.send([.char("D")])
        #expect(Self.last(terminal)?.contains("CANNOT BE UNDONE") == false && Self.last(terminal)?.hasSuffix("? y/n") == true, "\(Self.screen(terminal))")
        browser.send(.char("n"))
        #expect(try server.psql("SELECT count(*) FROM log", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }
}
