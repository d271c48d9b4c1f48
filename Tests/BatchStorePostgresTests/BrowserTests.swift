import BatchStore
import BatchStorePostgres
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore
import TestSupport

/// The browser over a PostgreSQL store (`PostgresContext`), and what it relies on: the first
/// batch before the ID fetch, progress and cancel of the ID fetch, counts and lookups. The main
/// test drives two browsers with the same keys, one over a SQLite file and one over a PostgreSQL
/// database holding the same rows, and compares their screens after every key.
@Suite("PostgreSQL browser", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresBrowserTests {
    static let rowCount = 3_000
    static let names = ["Ran", "ran", "Été", "ete", "Straße", "STRASSE", "東京", "title", "Élan", "zebra"]

    /// `movie(id, title, year, score)`: titles that differ by case and accents, NULL years, reals.
    static func rows() -> [[SQLValue]] {
        var g = SeededGenerator(state: 15)
        return (1...rowCount).map { id in
            [.integer(Int64(id)), .text("\(g.pick(names)) \(g.next(400))"),
             id % 10 == 0 ? .null : .integer(Int64(1930 + g.next(90))),
             g.next(8) == 0 ? .null : .real(Double(g.next(200)) / 4),
             g.next(9) == 0 ? .null : .integer(Int64(1 + g.next(20)))]
        }
    }

    /// The same rows in a SQLite file and in a PostgreSQL database.
    static func stores(_ server: PostgresServer, _ dir: TempDir) throws -> (sqlite: String, postgres: PostgresStore, database: String) {
        let rows = rows()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id integer PRIMARY KEY, title text NOT NULL, year integer, score double precision, director_id integer REFERENCES director(id));
            """)
        try direct(path) { db in
            for d in 1...20 { try db.execute(sql: "INSERT INTO director VALUES (?, ?)", arguments: [d, "director \(d)"]) }
            for row in rows {
                try db.execute(sql: "INSERT INTO movie VALUES (?, ?, ?, ?, ?)", arguments: statementArguments(row))
            }
        }
        let values = rows.map { "(" + $0.map { postgresLiteral($0) }.joined(separator: ", ") + ")" }.joined(separator: ",\n")
        let database = try server.makeDatabase("browse", sql: """
            CREATE TABLE director(id int PRIMARY KEY, name text);
            INSERT INTO director SELECT g, 'director ' || g FROM generate_series(1, 20) g;
            CREATE TABLE movie(id int PRIMARY KEY, title text NOT NULL, year int, score float8, director_id int REFERENCES director);
            INSERT INTO movie VALUES \(values);
            CREATE TABLE heap(v int);
            INSERT INTO heap SELECT g FROM generate_series(1, 250) g;
            CREATE VIEW old AS SELECT title, year FROM movie WHERE year < 1950;
            """)
        return (path, try PostgresStore(url: server.url(database: database), environment: noPasswordFile), database)
    }

    /// The grid and the status line (without the read-only note only SQLite shows, and the help after it): what must
    /// match between the engines. The message line says which engine and how long, so it differs.
    static func comparable(_ terminal: MemoryTerminal) -> [String] {
        let lines = terminal.lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
        // The status line's padding before `? help` depends on what precedes it (a read-only SQLite file says so).
        return lines.dropLast().map {
            // (A long status line cuts the note short, and the help after it.)
            $0.replacingOccurrences(of: " │ read-only", with: "").replacingOccurrences(of: #"( │ (read-?o?n?l?y?|r?e?a?…)| +\? help)$"#, with: "", options: .regularExpression)
        }
    }

    @Test("the same keys give the same screens over SQLite and over PostgreSQL holding the same rows")
    func sameScreens() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (path, pg, _) = try Self.stores(server, dir)
        let options = BrowserOptions(table: "movie", batchSize: 50, residentBatches: 4)
        let sqliteTerminal = MemoryTerminal(width: 90, height: 14)
        let pgTerminal = MemoryTerminal(width: 90, height: 14)
        let onSQLite = try Browser(store: try PersistentStore(path: path, options: .init(readOnly: true)), options: options, backend: sqliteTerminal)
        // The same name on screen as the file's: the sheet path shows it.
        let onPostgres = try Browser(context: PostgresContext(store: pg), name: (path as NSString).lastPathComponent, options: options, backend: pgTerminal)
        onSQLite.start()
        onPostgres.start()
        #expect(onPostgres.state.count == Self.rowCount)
        #expect(pgTerminal.lines.last?.contains("IDs in PostgreSQL") == true, "\(pgTerminal.lines)")

        func typed(_ s: String) -> [Key] { s.map { .char($0) } }
        let steps: [(String, [Key])] = [
            ("open", []),
            ("down", typed("jjj")),
            ("end", typed("G")),
            ("go to row", typed(":1500") + [.enter]),
            ("page down", [.pageDown, .pageDown]),
            ("filter", typed("f") + typed("title CONTAINS[c] \"é\" OR year > 2010") + [.enter]),
            ("sort title desc", typed("lS")),
            ("search", typed("/") + typed("ran") + [.enter]),
            ("next match", typed("n")),
            ("previous match", typed("N")),
            ("sort year asc (NULLs first)", typed("ls")),
            ("filter with [cd] and BEGINSWITH", typed("f") + [.ctrl("u")] + typed("title BEGINSWITH[cd] \"ete\" AND score >= 10") + [.enter]),
            ("sort score desc", typed("lS")),
            ("end of the filtered result", typed("G")),
            ("clear the filter", typed("f") + [.ctrl("u"), .enter]),
            ("frequencies of score", typed("F")),
            ("down the frequency sheet", typed("jj")),
            ("bins of score", typed("B")),
            ("wider bins", typed("B")),
            ("open a bin", typed("j") + [.enter]),
            ("back to the bins", [.escape]),
            ("back to the table", [.escape]),
            ("summary of every column", typed("I")),
            ("back from the summary", [.escape]),
            ("frequencies of title", typed("hhF")),
            ("open a value", typed("jjj") + [.enter]),
            ("back to the values", [.escape]),
            ("frequencies of year (NULLs)", [.escape] + typed("lF")),
            ("open NULL", [.enter]),
            ("back to the table again", [.escape, .escape] + typed("l")),
            ("middle", typed(":2222") + [.enter]),
            ("follow director_id", typed("l") + [.enter]),
            ("back", [.escape]),
            ("follow another", typed("jjjjj") + [.enter]),
        ]
        for (name, keys) in steps {
            onSQLite.send(keys)
            onPostgres.send(keys)
            #expect(onPostgres.state.count == onSQLite.state.count, "\(name)")
            #expect(onPostgres.state.cursorRow == onSQLite.state.cursorRow, "\(name)")
            #expect(!onPostgres.state.messageIsError, "\(name): \(onPostgres.state.message ?? "")")
            if name.hasPrefix("summary") {
                // SQLite's declared types are shown upper case.
                #expect(Self.comparable(pgTerminal).map { $0.lowercased() } == Self.comparable(sqliteTerminal).map { $0.lowercased() }, "\(name)")
                #expect(pgTerminal.lines.contains { $0.contains("1500.5") }, "\(pgTerminal.lines)")
            } else {
                #expect(Self.comparable(pgTerminal) == Self.comparable(sqliteTerminal), "\(name)")
            }
        }
        // The steps reached rows past the first batch and changed the count.
        #expect(onSQLite.state.table == "director" && onSQLite.state.count == 1, "the last step shows one director")
        #expect(sqliteTerminal.lines.contains { $0.contains("director ") })
    }

    @Test("the table list counts each table; D, U and u edit the result on screen and undo it, asking first with the server's count; F, B and I count on the server, and D, U and u act on a frequency sheet's values; :w writes the result; the memory panel names PostgreSQL")
    func listAndRefusals() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (_, pg, database) = try Self.stores(server, dir)
        // Statistics for movie (what autovacuum would leave): its estimate shows at once, marked ≈.
        _ = try server.psql("ANALYZE movie", database: database)
        let terminal = MemoryTerminal(width: 100, height: 16)
        let browser = try Browser(context: PostgresContext(store: pg), name: "browse (PostgreSQL)", options: BrowserOptions(), backend: terminal)
        browser.start()
        #expect(terminal.lines.contains { $0.contains("movie") && $0.contains("≈3,000 rows, counting…") }, "\(terminal.lines)")
        while browser.idle() {}
        browser.send(.char("k"))   // a key redraws with the counts
        #expect(terminal.lines.contains { $0.contains("movie") && $0.contains("3,000 rows") }, "\(terminal.lines)")
        #expect(terminal.lines.contains { $0.contains("heap") && $0.contains("250 rows") }, "\(terminal.lines)")
        #expect(terminal.lines.contains { $0.contains("old") && $0.contains("view") }, "\(terminal.lines)")
        let movie = try #require(browser.state.tables.firstIndex { $0.name == "movie" })
        browser.send(Array(repeating: Key.char("j"), count: movie) + [.enter])
        #expect(browser.state.count == Self.rowCount)
        func settle() { while browser.idle() {} }
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        let sums = try psql("SELECT count(*), sum(year), sum(score) FROM movie")
        browser.send(.char("u"))
        settle()
        #expect(browser.state.message == "nothing to undo")
        // D asks with the count of the result's rows; n leaves every row.
        browser.send(.char("D"))
        settle()
        #expect("\(browser.state.mode)".contains("delete(rows: \(Self.rowCount),"), "\(browser.state.mode)")
        browser.send(.char("n"))
        settle()
        #expect(try psql("SELECT count(*), sum(year), sum(score) FROM movie") == sums)
        // U on a filtered result: its rows only, the count first; u puts the old values back.
        browser.send([.char("f")] + "year > 2000".map { .char($0) } + [.enter])
        settle()
        let recent = try #require(Int(try psql("SELECT count(*) FROM movie WHERE year > 2000")))
        #expect(browser.state.count == recent)
        browser.send([.char("U")] + "year = year + 100".map { .char($0) } + [.enter])
        settle()
        #expect("\(browser.state.mode)".contains("update(rows: \(recent),"), "\(browser.state.mode)")
        browser.send(.char("y"))
        settle()
        #expect(browser.state.message?.hasPrefix("updated \(group(recent)) rows of movie; u undoes") == true, "\(browser.state.message ?? "")")
        #expect(try psql("SELECT count(*) FROM movie WHERE year > 2100") == "\(recent)")
        // The result was fetched again: its rows show their new values.
        #expect(terminal.lines.contains { $0.contains(" 21") }, "\(terminal.lines)")
        browser.send(.char("u"))
        settle()
        #expect(browser.state.mode == .confirm(.undo(UndoSummary(kind: .update(columns: ["year"]), table: "movie", rows: recent))), "\(browser.state.mode)")
        browser.send(.char("y"))
        settle()
        #expect(browser.state.message?.hasPrefix("undo: restored the old values of \(group(recent)) rows of movie") == true, "\(browser.state.message ?? "")")
        #expect(try psql("SELECT count(*), sum(year), sum(score) FROM movie") == sums)
        // Our own edits are not taken for another session's: their row counts reached the
        // server's statistics as they committed, before the result was fetched again. (Without
        // that, a session that reported less than a second before holds them back until its next
        // statement a second later, or ten seconds: G after a pause makes one.)
        usleep(1_200_000)
        browser.send(.char("G"))
        settle()
        let deadline = Date() + 2.5
        while !browser.state.fileChanged && Date() < deadline { browser.tick(); usleep(100_000) }
        #expect(!browser.state.fileChanged, "our own edit raised 'data changed'")
        browser.send([.char("f")] + [Key](repeating: .backspace, count: 20) + [.enter])
        settle()
        #expect(browser.state.count == Self.rowCount)
        func isFrequency(_ sheet: SheetKind) -> Bool { if case .frequency = sheet { return true } else { return false } }
        func isSummary(_ sheet: SheetKind) -> Bool { if case .summary = sheet { return true } else { return false } }
        // F counts the cursor's column on the server, as psql's GROUP BY counts it.
        browser.send([.char("0"), .char("l"), .char("l"), .char("F")])
        settle()
        #expect(isFrequency(browser.state.sheet) && !browser.state.messageIsError, "\(browser.state.message ?? "")")
        #expect(browser.state.message?.contains("counted by PostgreSQL in") == true, "\(browser.state.message ?? "")")
        let byYear = try psql("SELECT coalesce(year::text, '∅') || ' ' || count(*) FROM movie GROUP BY year ORDER BY count(*) DESC, year NULLS FIRST LIMIT 3")
            .split(separator: "\n").map(String.init)
        let shown = terminal.lines.dropFirst().prefix(3).map { $0.split(separator: " ").dropFirst().prefix(2).joined(separator: " ") }
        #expect(shown == byYear, "\(terminal.lines)")
        // v on the first two values, D: the count asked is theirs; y deletes exactly those rows.
        let (first, second) = (byYear[0].split(separator: " ")[0], byYear[1].split(separator: " ")[0])
        func condition(_ v: Substring) -> String { v == "∅" ? "year IS NULL" : "year = \(v)" }
        let marked = try psql("SELECT count(*) FROM movie WHERE \(condition(first)) OR \(condition(second))")
        browser.send([.char("v"), .char("v"), .char("D")])
        settle()
        #expect("\(browser.state.mode)".contains("delete(rows: \(marked),"), "\(browser.state.mode)")
        browser.send(.char("y"))
        settle()
        #expect(try psql("SELECT count(*) FROM movie WHERE \(condition(first)) OR \(condition(second))") == "0")
        #expect(try psql("SELECT count(*) FROM movie") == "\(Self.rowCount - Int(marked)!)")
        #expect(browser.state.message?.hasPrefix("deleted \(marked) rows from movie (2 values of year); u undoes") == true, "\(browser.state.message ?? "")")
        // The sheet counted again: the deleted values are gone from it.
        #expect(isFrequency(browser.state.sheet) && !terminal.lines.contains { $0.hasPrefix("  1  \(first) ") }, "\(terminal.lines)")
        browser.send([.char("u"), .char("y")])
        settle()
        #expect(try psql("SELECT count(*), sum(year), sum(score) FROM movie") == sums)
        // U on the cursor's value's rows (a bin of years), then u.
        browser.send(.char("B"))
        settle()
        #expect(browser.state.message?.contains("bins") == true || terminal.lines.contains { $0.contains(" – ") }, "\(terminal.lines)")
        let bin = try #require(terminal.lines.dropFirst().compactMap { line -> (Int, Int)? in
            let parts = line.split(separator: " ")
            guard parts.count > 3, parts[2] == "–", let low = Int(parts[1]), let high = Int(parts[3]) else { return nil }
            return (low, high)
        }.first, "\(terminal.lines)")
        browser.send([.char("g")] + Array(repeating: Key.char("j"), count: (terminal.lines.firstIndex { $0.contains(" \(bin.0) – \(bin.1) ") } ?? 1) - 1))
        let inBin = try psql("SELECT count(*) FROM movie WHERE year >= \(bin.0) AND year < \(bin.1)")
        let outside = try psql("SELECT count(*), sum(score) FROM movie WHERE year IS NULL OR year < \(bin.0) OR year >= \(bin.1)")
        browser.send([.char("U")] + "score = nil".map { .char($0) } + [.enter])
        settle()
        #expect("\(browser.state.mode)".contains("update(rows: \(inBin),"), "\(browser.state.mode)")
        browser.send(.char("y"))
        settle()
        #expect(try psql("SELECT count(*) FROM movie WHERE score IS NULL AND year >= \(bin.0) AND year < \(bin.1)") == inBin)
        #expect(try psql("SELECT count(*), sum(score) FROM movie WHERE year IS NULL OR year < \(bin.0) OR year >= \(bin.1)") == outside, "rows outside the bin untouched")
        browser.send([.char("u"), .char("y")])
        settle()
        #expect(try psql("SELECT count(*), sum(year), sum(score) FROM movie") == sums)
        // I summarises every column on the server.
        browser.send([.escape, .char("I")])
        settle()
        #expect(isSummary(browser.state.sheet) && !browser.state.messageIsError, "\(browser.state.message ?? "")")
        #expect(terminal.lines.contains { $0.contains("year") && $0.contains("integer") && $0.contains("300") }, "\(terminal.lines)")
        browser.send(.escape)
        settle()
        #expect(browser.state.sheet == .table && browser.state.table == "movie", "\(browser.state.sheet)")
        // :w writes the result as export writes it (one statement streamed from the server).
        browser.send([.char("f")] + "year > 2000".map { .char($0) } + [.enter])
        let matching = try PostgresContext(store: pg).count(for: BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate(format: "year > 2000")))
        #expect(browser.state.count == matching && matching > 100)
        browser.send([.char(":")] + "w \(dir.path("out.csv"))".map { .char($0) } + [.enter])
        #expect(!browser.state.messageIsError, "\(browser.state.message ?? "")")
        let written = try String(contentsOfFile: dir.path("out.csv"), encoding: .utf8).split(whereSeparator: \.isNewline)
        #expect(written.first == "id,title,year,score,director_id")
        #expect(written.count == matching + 1)
        #expect(written.dropFirst().allSatisfy { Int($0.split(separator: ",")[2]).map { $0 > 2000 } == true })
        browser.send(.char("m"))
        #expect(matching < 1_000)
        #expect(terminal.lines.contains { $0.contains("in PostgreSQL \(matching)") }, "\(terminal.lines)")
        #expect(terminal.lines.contains { $0.contains("in Swift      0") }, "\(terminal.lines)")
    }

    @Test("Enter on a numeric value of a frequency sheet opens its rows (compared as a number); NaN and values beyond 15 digits say they cannot be a filter")
    func numericValues() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("numeric", sql: """
            CREATE TABLE p(id int PRIMARY KEY, price numeric(10,2), big numeric);
            INSERT INTO p VALUES (1, -250.00, 1), (2, -250, 1), (3, -250.0, 12345678901234567890.5), (4, 12.5, 2), (5, 12.50, 2), (6, 'NaN', 3);
            """)
        let terminal = MemoryTerminal(width: 100, height: 14)
        let browser = try Browser(context: PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile)),
                                  name: "numeric", options: BrowserOptions(table: "p"), backend: terminal)
        browser.start()
        while browser.idle() {}
        browser.send([.char("l"), .char("F")])
        while browser.idle() {}
        browser.send(.enter)
        #expect(browser.state.count == 3 && browser.state.filter == "price == -250.0", "\(browser.state.filter) \(browser.state.count)")
        browser.send([.escape, .char("j"), .enter])
        #expect(browser.state.count == 2 && browser.state.filter == "price == 12.5", "\(browser.state.filter) \(browser.state.count)")
        browser.send([.escape, .char("j"), .enter])
        #expect(browser.state.messageIsError && browser.state.message?.contains("cannot be written as a filter") == true, "\(browser.state.message ?? "")")
        browser.send([.escape, .char("l"), .char("F")])
        while browser.idle() {}
        let row = try #require(terminal.lines.firstIndex { $0.contains("12345678901234567890.5") }, "\(terminal.lines)")
        browser.send(Array(repeating: Key.char("j"), count: row - 1) + [.enter])
        #expect(browser.state.messageIsError && browser.state.message?.contains("15 digits") == true, "\(browser.state.message ?? "")")
    }

    @Test("another session's delete and update are noticed from the server's statistics: the status line says so, r reloads; browsing alone is not a change")
    func otherSession() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (_, pg, database) = try Self.stores(server, dir)
        let context = PostgresContext(store: pg)
        let terminal = MemoryTerminal(width: 100, height: 16)
        let browser = try Browser(context: context, name: "other", options: BrowserOptions(), backend: terminal)
        browser.start()
        while browser.idle() {}
        let movie = try #require(browser.state.tables.firstIndex { $0.name == "movie" })
        browser.send(Array(repeating: Key.char("j"), count: movie) + [.enter])
        #expect(browser.state.count == Self.rowCount)
        let before = try context.dataVersion()
        // Opening, scrolling and sorting fill temp tables: the server counts those inserts (within
        // ten seconds), and none of it counts as a change.
        browser.send([.char("G"), .char("g"), .char("s")])
        let tempInserts = """
            SELECT coalesce(sum(s.n_tup_ins), 0) FROM pg_stat_all_tables AS s JOIN pg_class AS c ON c.oid = s.relid WHERE c.relpersistence = 't'
            """
        var deadline = Date() + 15
        while Date() < deadline, (try server.psql(tempInserts, database: database).trimmingCharacters(in: .whitespacesAndNewlines)) == "0" {
            browser.tick()
            usleep(200_000)
        }
        #expect(try server.psql(tempInserts, database: database).trimmingCharacters(in: .whitespacesAndNewlines) != "0", "the temp tables' inserts were counted")
        browser.tick()
        #expect(!browser.state.fileChanged)
        #expect(try context.dataVersion() == before)
        _ = try server.psql("""
            DELETE FROM movie WHERE id = (SELECT min(id) FROM movie);
            UPDATE movie SET title = 'changed elsewhere' WHERE id = (SELECT max(id) FROM movie);
            """, database: database)
        deadline = Date() + 20
        while !browser.state.fileChanged && Date() < deadline { browser.tick(); usleep(100_000) }
        #expect(browser.state.fileChanged)
        browser.send(.char("k"))
        #expect(terminal.lines.contains { $0.contains("data changed: r reloads") }, "\(terminal.lines)")
        browser.send(.char("r"))
        while browser.idle() {}
        #expect(browser.state.count == Self.rowCount - 1 && !browser.state.fileChanged)
        browser.send(.char("G"))
        #expect(terminal.lines.contains { $0.contains("changed elsewhere") }, "\(terminal.lines)")
        // TRUNCATE moves no row counter; the table's new file number tells.
        _ = try server.psql("TRUNCATE heap", database: database)
        deadline = Date() + 5
        while !browser.state.fileChanged && Date() < deadline { browser.tick(); usleep(100_000) }
        #expect(browser.state.fileChanged, "a TRUNCATE is a change")
    }

    @Test("G typed as a sorted load starts over PostgreSQL: the last rows of the order are read on a second session while the IDs load, and the cursor ends on the last row; j typed with it moves over the first rows at once")
    func lastRowsDuringTheLoad() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("tail", sql: """
            CREATE TABLE big(id int PRIMARY KEY, t text);
            INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 1000000) g;
            ANALYZE big;
            """)
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        let terminal = MemoryTerminal(width: 100, height: 12)
        let browser = try Browser(context: context, name: "tail", options: BrowserOptions(table: "big", sort: "t desc"), backend: terminal)
        var lines: [String] = []
        browser.log = { lines.append($0) }
        terminal.keys = [.char("G")]
        browser.start()
        while browser.idle() {}
        #expect(browser.state.count == 1_000_000 && browser.state.cursorRow == 999_999, "\(browser.state.cursorRow)")
        #expect(lines.contains { $0.hasPrefix("peeked the last") }, "\(lines)")
        let last = try server.psql("SELECT id FROM big ORDER BY t ASC, id ASC LIMIT 1", database: database).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(browser.state.snapshot(999_999)?.values.first == .text(last), "\(String(describing: browser.state.snapshot(999_999)?.values))")
    }

    @Test("Esc while an update runs over PostgreSQL cancels it on the server: nothing changed, nothing to undo, the statement gone; a column set to nil is counted first; an undo that restores no row says so")
    func cancelAnEdit() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("cancel", sql: """
            CREATE TABLE slow(id int PRIMARY KEY, v int);
            INSERT INTO slow SELECT g, g FROM generate_series(1, 2000) g;
            CREATE FUNCTION dawdle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN NEW; END $$;
            CREATE TRIGGER dawdle BEFORE UPDATE ON slow FOR EACH ROW EXECUTE FUNCTION dawdle();
            """)
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        let terminal = MemoryTerminal(width: 100, height: 12)
        let browser = try Browser(context: context, name: "cancel", options: BrowserOptions(table: "slow"), backend: terminal)
        browser.start()
        while browser.idle() {}
        #expect(browser.state.count == 2000)
        browser.send([.char("U")] + "v = v + 1".map { .char($0) } + [.enter])
        while browser.idle() {}
        #expect("\(browser.state.mode)".contains("update(rows: 2000,"), "\(browser.state.mode)")
        // The update would take 20 s (10 ms a row); Esc is read as soon as it has started.
        terminal.keys.append(.escape)
        let pressed = Date()
        browser.send(.char("y"))
        while browser.idle() {}
        #expect(Date().timeIntervalSince(pressed) < 10, "the cancel waited for the statement")
        #expect(browser.state.message == "update cancelled: nothing was changed", "\(browser.state.message ?? "")")
        #expect(try server.psql("SELECT sum(v) FROM slow", database: database) == "\((1...2000).reduce(0, +))")
        #expect(!context.canUndo)
        let running = try server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'WITH old AS%' AND state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()", database: database)
        #expect(running == "0")
        // A column set to nil: the count before it has no type for the NULL, and must still run.
        try server.psql("DROP TRIGGER dawdle ON slow", database: database)
        browser.send([.char("U")] + "v = nil".map { .char($0) } + [.enter])
        while browser.idle() {}
        #expect("\(browser.state.mode)".contains("update(rows: 2000,"), "\(browser.state.mode) \(browser.state.message ?? "")")
        browser.send(.char("y"))
        while browser.idle() {}
        #expect(browser.state.message?.hasPrefix("updated 2,000 rows of slow; u undoes") == true, "\(browser.state.message ?? "")")
        // Another session deletes them all: the undo restores nothing, and says so.
        try server.psql("DELETE FROM slow", database: database)
        browser.send([.char("u"), .char("y")])
        while browser.idle() {}
        #expect(browser.state.message?.hasPrefix("undo: restored the old values of 0 rows of slow") == true, "\(browser.state.message ?? "")")
    }

    @Test("a table the role may not read says so in the list, the tables after it are still counted, and opening it is one line")
    func unreadableTable() throws {
        let server = try PostgresServer.require()
        let role = try server.makeRole("reader", password: "pw")
        let database = try server.makeDatabase("perm", sql: """
            CREATE TABLE a(id int PRIMARY KEY); INSERT INTO a VALUES (1), (2);
            CREATE TABLE secret(id int PRIMARY KEY); INSERT INTO secret VALUES (1);
            CREATE TABLE z(id int PRIMARY KEY); INSERT INTO z SELECT generate_series(1, 5);
            GRANT SELECT ON a, z TO \(role);
            """)
        let store = try PostgresStore(url: server.url(database: database, user: role, password: "pw"), environment: noPasswordFile)
        let terminal = MemoryTerminal(width: 90, height: 10)
        let browser = try Browser(context: PostgresContext(store: store), name: "perm", options: BrowserOptions(), backend: terminal)
        browser.start()
        while browser.idle() {}
        browser.send(.char("k"))
        #expect(terminal.lines.contains { $0.contains("a ") && $0.contains("2 rows") }, "\(terminal.lines)")
        #expect(terminal.lines.contains { $0.contains("secret") && $0.contains("not counted: no permission to read it") }, "\(terminal.lines)")
        #expect(terminal.lines.contains { $0.contains("z ") && $0.contains("5 rows") }, "\(terminal.lines)")
        let index = try #require(browser.state.tables.firstIndex { $0.name == "secret" })
        browser.send(Array(repeating: Key.char("j"), count: index) + [.enter])
        #expect(browser.state.messageIsError && browser.state.message == "the role may not read secret", "\(browser.state.message ?? "")")
        // A table the role may read but not change is read-only, and the edit keys say why.
        browser.send([.escape] + Array(repeating: Key.char("k"), count: 10))
        let a = try #require(browser.state.tables.firstIndex { $0.name == "a" })
        browser.send(Array(repeating: Key.char("j"), count: a) + [.enter])
        while browser.idle() {}
        #expect(browser.state.table == "a" && browser.state.count == 2)
        browser.send(.char("D"))
        #expect(browser.state.message == "D does nothing: the role may not insert, update or delete in a", "\(browser.state.message ?? "")")
    }

    @Test("the first batch comes from a LIMIT query before the ID fetch, and matches the result's first rows")
    func firstBatch() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (_, pg, _) = try Self.stores(server, dir)
        for (limit, offset) in [(0, 0), (30, 0), (0, 2_990), (500, 7)] {
            let request = BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate(format: "year != nil"),
                                                  sortDescriptors: [SortDescriptor(key: "score", ascending: false), SortDescriptor(key: "title")],
                                                  fetchLimit: limit, fetchOffset: offset, fetchBatchSize: 40)
            var first: [ManagedObject] = []
            let result = try pg.fetchBatched(request, residentBatches: 2, firstBatch: { first = $0 })
            #expect(first.count == min(40, result.count), "limit \(limit) offset \(offset)")
            for (i, object) in first.enumerated() {
                #expect(object.objectID == result[i]?.objectID, "limit \(limit) offset \(offset) row \(i)")
                #expect(try object.value(forKey: "title") == result[i]?.value(forKey: "title"))
            }
        }
        // A table keyed by ctid, and a view without a key (its values are its IDs).
        for (entity, column) in [("heap", "v"), ("old", "title"), ("director", "name")] {
            let request = BatchStore.FetchRequest(entityName: entity, sortDescriptors: [SortDescriptor(key: column, ascending: false)], fetchBatchSize: 15)
            var first: [ManagedObject] = []
            let result = try pg.fetchBatched(request, residentBatches: 2, firstBatch: { first = $0 })
            #expect(first.count == 15 && result.count > 15, "\(entity)")
            for (i, object) in first.enumerated() {
                #expect(object.objectID == result[i]?.objectID, "\(entity) row \(i)")
                #expect(try object.value(forKey: column) == result[i]?.value(forKey: column), "\(entity) row \(i)")
            }
        }
    }

    @Test("progress reports the ID fetch's time; a cancel stops the statement on the server and leaves no temp table")
    func cancelIDFetch() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("slow", sql: """
            CREATE FUNCTION slow_rows() RETURNS SETOF int LANGUAGE sql AS $$ SELECT pg_sleep(20); SELECT g FROM generate_series(1, 100) g $$;
            CREATE VIEW slow AS SELECT x AS id FROM slow_rows() AS x;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        var calls: [Double] = []
        let started = Date()
        #expect {
            _ = try store.fetchBatched(BatchStore.FetchRequest(entityName: "slow"), progress: { p in
                calls.append(p.elapsed)
                return p.elapsed > 0.3 ? .cancel : .proceed
            })
        } throws: { ($0 as? BatchStoreError)?.code == .cancelled }
        // Cancelled on the server: the call did not wait out the 20 s sleep.
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(calls.count >= 3 && calls == calls.sorted() && (calls.last ?? 0) > 0.3)
        // The server's statement_timeout is not a cancel: one line that names it.
        try server.psql("ALTER DATABASE \(database) SET statement_timeout = '300ms'", database: database)
        let limited = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        #expect {
            _ = try limited.fetchBatched(BatchStore.FetchRequest(entityName: "slow"), progress: { _ in .proceed })
        } throws: { error in
            guard let error = error as? BatchStoreError, case .postgres("57014") = error.code else { return false }
            return error.message == "canceling statement due to statement timeout: the server's statement_timeout stopped it"
        }
        let active = try server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%bs_ids%' AND state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()", database: database)
        #expect(active.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("an unsorted open with progress fills its IDs in chunks by key: progress counts the rows in so far (a percent of the table's estimate when unfiltered), the result is the one statement's, and a cancel between chunks leaves no temp table")
    func unsortedOpenCountsItsRows() throws {
        let server = try PostgresServer.require()
        // More rows than two chunks, with keys that skip (a chunk's bound is the last key read).
        let database = try server.makeDatabase("chunks", sql: """
            CREATE TABLE big(id int PRIMARY KEY, v text);
            INSERT INTO big SELECT g * 3, 'v' || g FROM generate_series(1, 600000) g;
            ANALYZE big;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        for format in [nil, "id > 300000 OR v ENDSWITH '7'"] {
            var seen: [IDFetchProgress] = []
            let request = BatchStore.FetchRequest(entityName: "big", predicate: try format.map { try FetchPredicate(format: $0) })
            let result = try store.fetchBatched(request, progress: { p in
                seen.append(p)
                return .proceed
            })
            let expected = try store.fetchBatched(request)
            #expect(result.count == expected.count && result.count == (format == nil ? 600_000 : 510_000), "\(format ?? "all")")
            for position in [0, 1, 99_999, 100_000, 100_001, 299_999, 300_000, 300_001, result.count - 1] where position < result.count {
                #expect(result[position]?.objectID == expected[position]?.objectID, "\(format ?? "all") position \(position)")
            }
            #expect(seen.map(\.rowsScanned) == seen.map(\.rowsScanned).sorted(), "rows so far only grow")
            if format == nil {
                // Seen during the second or third chunk, as at least one chunk was in.
                #expect(seen.contains { $0.rowsScanned >= 100_000 && $0.rowsScanned < 600_000 }, "\(seen.map(\.rowsScanned))")
                #expect(seen.contains { ($0.fractionCompleted ?? 0) > 0.3 && ($0.fractionCompleted ?? 1) < 1 })
            } else {
                #expect(seen.allSatisfy { $0.estimatedRows == nil }, "a filter's rows are not the table's")
            }
        }
        // A cancel once a chunk is in: the fetch stops and its table is gone.
        #expect {
            _ = try store.fetchBatched(BatchStore.FetchRequest(entityName: "big"), progress: { p in p.rowsScanned > 0 ? .cancel : .proceed })
        } throws: { ($0 as? BatchStoreError)?.code == .cancelled }
        let left = try server.psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'bs_ids%' AND relpersistence = 't'", database: database)
        #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0")

        // Inheritance children can hold a parent's key: one statement, or a chunk bound would
        // skip a row; the same rows either way.
        try server.psql("""
            CREATE TABLE parent(id int PRIMARY KEY);
            INSERT INTO parent SELECT g FROM generate_series(1, 100000) g;
            CREATE TABLE child() INHERITS (parent);
            INSERT INTO child VALUES (100000), (200000);
            ANALYZE parent;
            """, database: database)
        let inheriting = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let withProgress = try inheriting.fetchBatched(BatchStore.FetchRequest(entityName: "parent"), progress: { _ in .proceed })
        let oneStatement = try inheriting.fetchBatched(BatchStore.FetchRequest(entityName: "parent"))
        #expect(withProgress.count == 100_002 && oneStatement.count == 100_002)

        // The first rows by one statement on the context's session, with a limit or without.
        let context = PostgresContext(store: store)
        var last = BatchStore.FetchRequest(entityName: "big", fetchLimit: 3)
        last.reversesOrder = true
        #expect(try context.firstRows(last).map { try $0.value(forKey: "id") } == [.integer(1_800_000), .integer(1_799_997), .integer(1_799_994)])
        #expect(try context.firstRows(BatchStore.FetchRequest(entityName: "big", predicate: try FetchPredicate(format: "id < 10"))).count == 3)
    }

    @Test("streamRows gives the rows and order fetchBatched gives, in one statement; an error the body throws stops it and comes back as thrown")
    func streamRowsMatchesBatches() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (_, pg, _) = try Self.stores(server, dir)
        struct Stop: Error {}
        let cases: [(String, String?, [BatchStore.SortDescriptor], Int, Int)] = [
            ("movie", nil, [], 0, 0),
            ("movie", "title CONTAINS[cd] 'ete' OR year == nil", [SortDescriptor(key: "score", ascending: false)], 0, 0),
            ("movie", "year > 1950", [SortDescriptor(key: "year"), SortDescriptor(key: "title", ascending: false)], 100, 17),
            ("heap", nil, [SortDescriptor(key: "v", ascending: false)], 0, 240),
            ("old", nil, [SortDescriptor(key: "title")], 0, 0),
        ]
        for (entity, format, sort, limit, offset) in cases {
            let request = BatchStore.FetchRequest(entityName: entity, predicate: try format.map { try FetchPredicate(format: $0) }, sortDescriptors: sort,
                                                  fetchLimit: limit, fetchOffset: offset, fetchBatchSize: 64)
            let batched = try pg.fetchBatched(request, residentBatches: 2)
            let columns = try pg.entity(named: entity).attributes.count
            var expected: [[SQLValue]] = []
            for object in batched { if let object { expected.append(try (0..<columns).map { try object.value(at: $0) }) } }
            var streamed: [[SQLValue]] = []
            let n = try pg.streamRows(request) { streamed.append($0) }
            #expect(n == streamed.count)
            #expect(streamed == expected, "\(entity) \(format ?? "") \(sort)")
            #expect(!expected.isEmpty)
        }
        var seen = 0
        #expect(throws: Stop.self) {
            try pg.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in
                seen += 1
                if seen == 10 { throw Stop() }
            }
        }
        #expect(seen == 10)
        // The store still works after a stopped stream.
        #expect(try pg.streamRows(BatchStore.FetchRequest(entityName: "heap")) { _ in } == 250)
    }

    @Test("count(for:) reads the server now; existingObject(with:) gives the registered object, and once it is refreshed reads the server: a row deleted since is objectNotFound")
    func countAndLookup() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let (path, pg, database) = try Self.stores(server, dir)
        let context = PostgresContext(store: pg)
        let sqlite = try ManagedObjectContext(store: try PersistentStore(path: path, options: .init(readOnly: true)))
        for format in ["year > 2000", "title CONTAINS[c] 'STRASSE' OR title LIKE[cd] 'ETE*'", "score == nil", "TRUEPREDICATE"] {
            for (limit, offset) in [(0, 0), (10, 0), (0, 2_995), (7, 3)] {
                let request = BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate(format: format), fetchLimit: limit, fetchOffset: offset)
                #expect(try context.count(for: request) == sqlite.count(for: request), "\(format) \(limit) \(offset)")
            }
        }
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "id")]),
                                              residentBatches: 2, firstBatch: nil, progress: nil)
        let id = try #require(result[41]?.objectID)
        let object = try context.existingObject(with: id)
        #expect(try object.value(forKey: "id").integerValue == 42)
        #expect(try object.value(forKey: "title") == result[41]?.value(forKey: "title"))
        #expect(object === result[41], "one object per row: the result's")
        try server.psql("DELETE FROM movie WHERE id = 42", database: database)
        // The registered object keeps its values until refreshed (as on SQLite); then the lookup
        // reads the server, and the row is gone.
        #expect(try context.existingObject(with: id) === object)
        context.refresh(object, mergeChanges: false)
        #expect { _ = try context.existingObject(with: id) } throws: { ($0 as? BatchStoreError)?.code == .objectNotFound }
        #expect(context.registeredObject(for: id) === object, "a failed lookup leaves the object registered, a fault")
        #expect(try context.count(for: BatchStore.FetchRequest(entityName: "movie")) == Self.rowCount - 1)
    }
}
