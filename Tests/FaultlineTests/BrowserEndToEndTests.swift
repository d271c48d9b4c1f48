import Foundation
import GRDB
import Testing
import TestSupport

@Suite("The browser end to end, in tmux", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct BrowserEndToEndTests {
    static let rows = 300_000

    func sqlite<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        try DatabaseQueue(path: path).read { try body($0) }
    }

    @Test("keys typed as the program starts, with no wait for the sorted load: j j j j j, l -, then :N and G, all land as typed")
    func keysTypedWithoutWaiting() throws {
        let scratch = TempDir()
        let db = scratch.path("movies.sqlite")
        let made = try CLI.run(["demo", "--rows", String(Self.rows), "--output", db])
        #expect(made.status == 0, "\(made.stderr)")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie --sort title")
        // Typed at once, as a fast user types while the first rows come and the IDs load.
        try t.type("jjjjj")
        try t.type("l-")
        var screen = try t.waitFor("row 6 of 300,000")
        screen = try t.waitFor("title hidden") { !$0.contains("title") && $0.contains(" id ") && $0.contains("year") }
        #expect(screen.contains { $0.contains("row 6 of 300,000") }, "\(screen)")
        try t.type(":150000")
        try t.send("Enter")
        try t.waitFor("row 150,000 of 300,000")
        try t.type("G")
        try t.waitFor("row 300,000 of 300,000")
        try t.type("q")
        _ = try t.waitForExit()
    }

    @Test("open, scroll, jump to the end, filter, sort, batch update, undo, batch delete, resize, quit; the file checked after each edit")
    func session() throws {
        let scratch = TempDir()
        let db = scratch.path("movies.sqlite")
        let made = try CLI.run(["demo", "--rows", String(Self.rows), "--output", db])
        #expect(made.status == 0, "\(made.stderr)")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie")
        try t.waitFor("row 1 of 300,000")
        #expect(try t.value("#{alternate_on}") == "1")

        try t.type("jjj")
        try t.waitFor("row 4 of 300,000")
        try t.send("NPage")
        try t.waitFor("row 31 of 300,000")
        try t.type("G")
        var screen = try t.waitFor("row 300,000 of 300,000")
        #expect(screen.contains { $0.hasPrefix("300,000") && $0.contains(" 300000 ") })

        // Filter: a predicate, counted by SQLite.
        try t.type("f")
        try t.type("year == 1999 AND genre == \"Noir\"")
        try t.send("Enter")
        let matching = try sqlite(db) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE year = 1999 AND genre = 'Noir'") } ?? 0
        #expect(matching > 10)
        try t.waitFor("the filtered count") { $0.contains("row 1 of \(group(matching))") && $0.contains("filter: year == 1999") }

        // Sort by title (the second column), ascending.
        try t.type("l")
        try t.type("s")
        screen = try t.waitFor("sort: title asc")
        let firstTitle = try sqlite(db) { try String.fetchOne($0, sql: "SELECT title FROM movie WHERE year = 1999 AND genre = 'Noir' ORDER BY title, id LIMIT 1") } ?? "?"
        #expect(screen[1].contains(String(firstTitle.prefix(12))), "\(screen[1]) vs \(firstTitle)")

        // Batch update of the whole filtered result, with the count up front.
        let votesBefore = try sqlite(db) { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") } ?? 0
        try t.type("U")
        try t.type("votes = votes + 1")
        try t.send("Enter")
        try t.waitForWrapped("Update all \(group(matching)) rows of this result (nothing is marked) in movie: votes = votes + 1 — e.g. id ")
        try t.waitFor("? y/n")
        try t.type("y")
        try t.waitFor("updated \(group(matching)) rows of movie; u undoes")
        #expect(try sqlite(db) { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") } == votesBefore + matching)

        // Undo puts the old values back.
        try t.type("u")
        try t.waitFor("Undo the update of \(group(matching)) rows of movie: give votes their old values? y/n")
        try t.type("y")
        try t.waitFor("undo: restored the old values of \(group(matching)) rows")
        #expect(try sqlite(db) { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") } == votesBefore)

        // Mark two rows and batch-delete them.
        let ids = try sqlite(db) { try Int64.fetchAll($0, sql: "SELECT id FROM movie WHERE year = 1999 AND genre = 'Noir' ORDER BY title, id LIMIT 2") }
        try t.type("g")
        try t.type("vv")
        try t.waitFor("2 marked")
        try t.type("D")
        try t.waitFor("Delete the 2 marked rows from movie? y/n")
        try t.type("y")
        try t.waitFor("deleted 2 rows from movie")
        #expect(try sqlite(db) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE id IN (\(ids[0]), \(ids[1]))") } == 0)
        #expect(try sqlite(db) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie") } == Self.rows - 2)
        try t.waitFor("row 1 of \(group(matching - 2))")

        // Resize: the screen is redrawn at the new size.
        try t.run(["resize-window", "-t", t.session, "-x", "50", "-y", "12"])
        screen = try t.waitFor("status line at 50x12") { $0.hasPrefix(" movie │") && $0.count <= 50 }
        #expect(screen.count >= 12)

        try t.type("q")
        let end = try t.waitForExit()
        #expect(end.status == 0 && end.alternate == "0")
        #expect(try sqlite(db) { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test("undo killed with SIGKILL mid-write: the update is either still there or undone whole, file sound")
    func undoKilled() throws {
        let scratch = TempDir()
        let db = scratch.path("movies.sqlite")
        #expect(try CLI.run(["demo", "--rows", "400000", "--output", db]).status == 0)
        let before = try sqlite(db) { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") } ?? 0
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie")
        try t.waitFor("row 1 of 400,000")
        try t.type("U")
        try t.type("votes = votes + 1, title = title || ' (edited)'")
        try t.send("Enter")
        try t.waitFor("Update all 400,000 rows")
        try t.type("y")
        try t.waitFor("updated 400,000 rows", timeout: 60)
        let wal = db + "-wal"
        func stamp() -> Date? { (try? FileManager.default.attributesOfItem(atPath: wal))?[.modificationDate] as? Date }
        try t.type("u")
        try t.waitFor("Undo the update of 400,000 rows")
        let quiet = stamp()
        try t.type("y")
        let deadline = Date().addingTimeInterval(30)
        while stamp() == quiet && Date() < deadline { usleep(2_000) }
        usleep(100_000)
        let pid = try #require(try t.programPID())
        kill(pid, SIGKILL)
        let end = try t.waitForExit()
        #expect(end.status == 128 + Int(SIGKILL))
        let (integrity, votes, edited) = try sqlite(db) { db in
            (try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "",
             try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE title LIKE '% (edited)'") ?? 0)
        }
        #expect(integrity == "ok")
        #expect((votes == before && edited == 0) || (votes == before + 400_000 && edited == 400_000), "half an undo: votes +\(votes - before), \(edited) titles")
    }

    @Test("escape sequences in values and names never reach the terminal: the title stays, the raw bytes hold none")
    func hostileValues() throws {
        let scratch = TempDir()
        let db = scratch.path("evil.sqlite")
        let evil = "A\u{1B}]2;pwned\u{07}B\u{9B}31mC\u{1B}[2JD\u{07}"
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "CREATE TABLE \"t\u{1B}]2;owned\u{07}\"(id INTEGER PRIMARY KEY, \"c\u{9B}1m\" TEXT)")
            try db.execute(sql: "INSERT INTO \"t\u{1B}]2;owned\u{07}\" VALUES (1, ?)", arguments: [evil])
        }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t.run(["select-pane", "-t", t.session, "-T", "clean-title"])
        let screen = try t.waitFor("row 1 of 1")
        #expect(screen.contains { $0.contains("A\\e]2;pwnedB") || $0.contains("A\\e]2;pw") })
        try t.send("Enter")
        try t.waitFor("\\x9B31mC")
        #expect(try t.value("#{pane_title}") == "clean-title")
        try t.type("qq")   // closes the record, then quits
        _ = try t.waitForExit()

        // The bytes themselves: run under script(1), which records everything sent to the terminal.
        let typescript = scratch.path("typescript")
        let s = try Tmux(command: "script -q -f -c \(shellQuote("\(CLI.binary) \(db)")) \(shellQuote(typescript))")
        try s.waitFor("row 1 of 1")
        try s.send("Enter")
        try s.waitFor("x9B31mC")
        try s.type("qq")
        _ = try s.waitForExit()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: typescript)))
        #expect(bytes.count > 100)
        func contains(_ needle: [UInt8]) -> Bool {
            guard bytes.count >= needle.count else { return false }
            return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        #expect(!contains(Array("\u{1B}]2;pwned".utf8)), "an OSC title sequence from a value was sent")
        #expect(!contains(Array("\u{1B}]2;owned".utf8)), "an OSC title sequence from a name was sent")
        #expect(!contains([0xC2, 0x9B]), "a C1 CSI from a value was sent")
        #expect(!bytes.contains(0x07), "a BEL was sent")
    }

    @Test("another process writes while the browser is open: a notice, then r shows the new truth")
    func otherWriter() throws {
        let scratch = TempDir()
        let db = scratch.path("n.sqlite")
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, x TEXT)")
            for i in 1...100 { try db.execute(sql: "INSERT INTO n VALUES (?, ?)", arguments: [i, "v\(i)"]) }
        }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t.waitFor("row 1 of 100")
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "DELETE FROM n WHERE id <= 10; UPDATE n SET x = 'changed elsewhere' WHERE id = 11; INSERT INTO n VALUES (1000, 'new')")
        }
        try t.waitFor("file changed: r reloads", timeout: 10)
        try t.type("r")
        let screen = try t.waitFor("row 1 of 91")
        #expect(screen[1].contains("changed elsewhere"))
        try t.type("G")
        try t.waitFor("new")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("several files browse as one result with each row's store; an edit changes every store")
    func severalStores() throws {
        let scratch = TempDir()
        let paths = try ["east", "west"].enumerated().map { i, name -> String in
            let path = scratch.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE depot(id INTEGER PRIMARY KEY, stock INTEGER)")
                for id in 1...50 { try db.execute(sql: "INSERT INTO depot VALUES (?, ?)", arguments: [id, id * 10 + i]) }
            }
            return path
        }
        let t = try Tmux(command: ([CLI.binary] + paths + ["--table", "depot", "--sort", "stock desc"]).map(shellQuote).joined(separator: " "))
        let screen = try t.waitFor("row 1 of 100")
        #expect(screen[0].contains("@store") && screen[1].contains("west") && screen[1].contains("501") && screen[2].contains("east"))
        try t.type("U")
        try t.type("stock = 0")
        try t.send("Enter")
        try t.waitForWrapped("Update all 100 rows of this result (nothing is marked) in depot: stock = 0 — e.g. ")
        try t.waitFor("? y/n")
        try t.type("y")
        try t.waitFor("updated 100 rows")
        for path in paths {
            #expect(try sqlite(path) { try Int.fetchOne($0, sql: "SELECT sum(stock) FROM depot") } == 0)
        }
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("colours on a colour terminal, none under NO_COLOR")
    func noColor() throws {
        let scratch = TempDir()
        let db = scratch.path("n.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, x TEXT); INSERT INTO n VALUES (1, NULL)") }
        func styledScreen(_ environment: [String: String]) throws -> String {
            let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))", environment: environment)
            try t.waitFor("row 1 of 1")
            let styled = try t.run(["capture-pane", "-p", "-e", "-t", t.session])
            try t.type("q")
            _ = try t.waitForExit()
            return styled
        }
        // SGR colour parameters: 30-37 / 40-47 (and their 38;/48; forms).
        func hasColour(_ s: String) -> Bool {
            s.range(of: "\u{1B}\\[[0-9;]*(3[0-8]|4[0-8])[;m]", options: .regularExpression) != nil
        }
        let coloured = try styledScreen([:])
        #expect(hasColour(coloured), "\(coloured.debugDescription.prefix(300))")
        #expect(!hasColour(try styledScreen(["NO_COLOR": "1"])))
    }

    @Test("Ctrl-C quits cleanly; a crash signal still gives the terminal back")
    func restore() throws {
        let scratch = TempDir()
        let db = scratch.path("n.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, x TEXT); INSERT INTO n VALUES (1, 'one')") }
        let t1 = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t1.waitFor("row 1 of 1")
        try t1.send("C-c")
        let e1 = try t1.waitForExit()
        #expect(e1.status == 0 && e1.alternate == "0")

        let t2 = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t2.waitFor("row 1 of 1")
        #expect(try t2.value("#{alternate_on}") == "1")
        let pid = try #require(try t2.programPID())
        kill(pid, SIGSEGV)
        let e2 = try t2.waitForExit()
        #expect(e2.status == 128 + Int(SIGSEGV) && e2.alternate == "0")
    }

    @Test("with no database it creates the demo in the cache directory with a progress bar, then lists its tables")
    func demoOnFirstRun() throws {
        let scratch = TempDir()
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) --demo-rows 20000", environment: ["XDG_CACHE_HOME": scratch.path("cache")])
        try t.waitFor("movie") { $0.contains("movie") && $0.contains("20,000 rows") }
        #expect(FileManager.default.fileExists(atPath: scratch.path("cache/faultline/demo.sqlite")))
        try t.type("jj")
        try t.send("Enter")
        try t.waitFor("row 1 of 20,000")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("a key burst in a real terminal never answers a question that appeared after it: v D y, u y and a filter burst with u in it change nothing until y is pressed on the question")
    func burstNeverConfirms() throws {
        let scratch = TempDir()
        let db = scratch.path("flights.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: """
            CREATE TABLE flights(id INTEGER PRIMARY KEY, carrier TEXT, tailnum TEXT, dep_delay REAL);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
            INSERT INTO flights SELECT x, CASE x % 3 WHEN 0 THEN 'HA' WHEN 1 THEN 'UA' ELSE NULL END, 'N' || x, x % 17 - 3 FROM c;
            """) }
        func count() throws -> Int { try sqlite(db) { try Int.fetchOne($0, sql: "SELECT count(*) FROM flights") ?? -1 } }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table flights")
        try t.waitFor("row 1 of 5,000")
        // Typed in one go: the y reaches the program before the question is drawn.
        try t.type("vDy")
        try t.waitFor("Delete the 1 marked row from flights? y/n")
        usleep(300_000)
        #expect(try count() == 5_000, "a y typed before the question deleted a row")
        try t.type("y")
        try t.waitFor("deleted 1 row from flights")
        #expect(try count() == 4_999)
        // The issue's burst: a filter typed with u among the grid keys after it; u only asks.
        try t.type("f")
        try t.send("C-u")
        try t.type("carrier == \"HA\"")
        try t.send("Enter")
        try t.type("ctailnum")
        try t.send("Enter")
        try t.type("uy")
        try t.waitFor("Undo the delete of 1 row from flights: put it back? y/n")
        usleep(300_000)
        #expect(try count() == 4_999, "u in a burst undid the delete without its own confirmation")
        try t.type("n")
        try t.waitFor("cancelled: nothing was changed")
        try t.type("u")
        try t.waitFor("Undo the delete of 1 row from flights: put it back? y/n")
        try t.type("y")
        try t.waitFor("undo: restored 1 deleted row of flights")
        #expect(try count() == 5_000)
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    /// SQLite's files next to `path` that exist now.
    func sidecars(_ path: String) -> [String] {
        ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: path + $0) }
    }

    @Test("v on a row of a, Esc, Enter on b: nothing is marked, D acts on b alone, and a is untouched (checked with sqlite3)")
    func marksStayWithTheirTable() throws {
        let scratch = TempDir()
        let db = scratch.path("ab.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: """
            CREATE TABLE a(id INTEGER PRIMARY KEY, x TEXT); CREATE TABLE b(id INTEGER PRIMARY KEY, y TEXT);
            INSERT INTO a VALUES (1, 'a1'), (2, 'a2'); INSERT INTO b VALUES (1, 'b1'), (2, 'b2'), (3, 'b3');
            """) }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t.waitFor("Tables and views")
        try t.send("Enter")
        try t.waitFor("row 1 of 2")
        try t.type("v")
        try t.waitFor("1 marked")
        try t.send("Escape")
        try t.waitFor("Tables and views")
        try t.type("j")
        try t.send("Enter")
        let screen = try t.waitFor("row 1 of 3")
        #expect(!screen.contains { $0.contains("row 1 of 3") && $0.contains("marked") }, "\(screen.joined(separator: "\n"))")
        try t.type("D")
        try t.waitFor("Delete all 3 rows of this result (nothing is marked) from b? y/n")
        try t.type("n")
        try t.type("jv")
        try t.waitFor("1 marked")
        try t.type("D")
        try t.waitFor("Delete the 1 marked row from b? y/n")
        try t.type("y")
        try t.waitFor("deleted 1 row from b")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
        #expect(try sqlite3(db, "SELECT group_concat(id) FROM a") == "1,2")
        #expect(try sqlite3(db, "SELECT group_concat(id) FROM b") == "1,3")
    }

    @Test("browsing, searching, filtering, sorting, reloading and quitting leave the file byte for byte, with no -wal or -shm; the first edit switches it to WAL")
    func readingNeverWrites() throws {
        let scratch = TempDir()
        let db = scratch.path("r.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT); CREATE TABLE other(id INTEGER PRIMARY KEY);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
            INSERT INTO n SELECT x, CASE WHEN x % 9 = 0 THEN NULL ELSE x END, 'Zeile ' || x || ' grüße 東京' FROM c;
            """) }
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(before[18] == 1 && before[19] == 1, "a rollback-journal file to start with")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))")
        try t.waitFor("Tables and views")
        try t.send("Enter")
        try t.waitFor("row 1 of 5,000")
        try t.type("ll/ße 東京")
        try t.send("Enter")
        try t.waitFor("/ße 東京")
        try t.type("f")
        try t.type("v > 100")
        try t.send("Enter")
        try t.waitFor("filter: v > 100")
        // The filtered result loaded (its count shown) before the next key: a column move typed
        // while it loads is undone when it lands (seen once in CI: S then sorted by name).
        try t.waitFor("row 1 of 4,356")
        try t.type("hS")
        try t.waitFor("sort: v desc")
        try t.type("Gvmr")
        try t.waitFor("reloaded")
        try t.send("Escape")
        try t.waitFor("Tables and views")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
        let after = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(after == before, "reading changed the file: header bytes 18-19 \(after[18])/\(after[19])")
        #expect(sidecars(db).isEmpty, "\(sidecars(db))")
        // The first edit is what switches the file to WAL.
        let t2 = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table n")
        try t2.waitFor("row 1 of 5,000")
        try t2.type("D")
        try t2.waitFor("Delete all 5,000 rows of this result (nothing is marked) from n? y/n")
        try t2.type("y")
        try t2.waitFor("deleted 5,000 rows from n")
        try t2.type("q")
        #expect(try t2.waitForExit().status == 0)
        let edited = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(edited[18] == 2 && edited[19] == 2, "the first edit switched the file to WAL")
        #expect(try sqlite3(db, "PRAGMA journal_mode") == "wal")
    }

    @Test("the demo database goes where the environment says: $HOME/.cache without XDG_CACHE_HOME; a cache folder it cannot make is one line")
    func demoLocation() throws {
        let scratch = TempDir()
        let home = scratch.path("home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let env = ["HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
        let r = try CLI.run(["tour", "--rows", "2000"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: home + "/.cache/faultline/demo.sqlite"))
        // A file where the cache folder should be: one clear line, exit 1, nothing created.
        let blocked = scratch.path("blocked")
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocked))
        let r2 = try CLI.run(["tour", "--rows", "2000"], environment: env.merging(["XDG_CACHE_HOME": blocked]) { $1 })
        #expect(r2.status == 1)
        #expect(r2.stderr.split(separator: "\n").count == 1 && r2.stderr.contains("cannot create the folder \(blocked)/faultline"), "\(r2.stderr)")
    }

    @Test("read-only: --read-only and a read-only file refuse edit keys with the reason")
    func readOnly() throws {
        let scratch = TempDir()
        let db = scratch.path("n.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY); INSERT INTO n VALUES (1), (2)") }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --read-only")
        try t.waitFor("row 1 of 2")
        try t.type("D")
        try t.waitFor("D does nothing: opened with --read-only")
        try t.type("q")
        _ = try t.waitForExit()
        #expect(try sqlite(db) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 2)
    }

    @Test("without a terminal, the browser says so in one line and exits non-zero")
    func noTerminal() throws {
        let scratch = TempDir()
        let db = scratch.path("n.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY)") }
        let r = try CLI.run([db])
        #expect(r.status != 0)
        #expect(r.stderr.contains("needs a terminal") && r.stderr.split(separator: "\n").count == 1)
        let missing = try CLI.run([scratch.path("nope.sqlite")])
        #expect(missing.status != 0 && !FileManager.default.fileExists(atPath: scratch.path("nope.sqlite")))
    }
}

/// `1234567` as `1,234,567`.
func group(_ n: Int) -> String {
    let s = String(abs(n))
    var out = ""
    for (i, c) in s.enumerated() {
        if i > 0 && (s.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return n < 0 ? "-" + out : out
}
