import Foundation
import GRDB
import Testing
import TestSupport

/// Hiding and freezing columns, jumping to one by name, the record view and the SQL sheet in the
/// real binary in a real terminal.
@Suite("Columns, the record view and the SQL end to end, in tmux", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct ColumnsEndToEndTests {
    /// The grid's header line: the line that starts with the `#` of the row numbers.
    func header(_ screen: [String]) -> [String] {
        (screen.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("# ") } ?? "").split(separator: " ").map(String.init)
    }

    @Test("- hides title and it stays hidden through a frequency sheet and a new filter; + shows it again")
    func hide() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let first = try sqlite3(db, "SELECT title FROM movie WHERE id = 1")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie", width: 100)
        var screen = try t.waitFor("row 1 of 20,000")
        #expect(header(screen) == ["#", "id", "title", "year", "rating", "votes", "genre", "director_id"])
        try t.type("l-")
        screen = try t.waitFor("hid title: 1 column hidden")
        #expect(header(screen) == ["#", "id", "year", "rating", "votes", "genre", "director_id"])
        #expect(!screen.contains { $0.contains(first) }, "no title on screen")
        // The cursor is on year now: its frequency sheet, and back.
        try t.type("F")
        try t.waitFor("movie › year freq")
        try t.send("Escape")
        screen = try t.waitFor("back from year freq to movie")
        #expect(header(screen) == ["#", "id", "year", "rating", "votes", "genre", "director_id"], "still hidden")
        try t.type("f")
        try t.type("year > 1990")
        try t.send("Enter")
        screen = try t.waitFor("filter: year > 1990")
        #expect(header(screen) == ["#", "id", "year", "rating", "votes", "genre", "director_id"], "a new filter keeps it hidden")
        try t.type("+")
        screen = try t.waitFor("showing every column again (1 was hidden)")
        #expect(header(screen) == ["#", "id", "title", "year", "rating", "votes", "genre", "director_id"])
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("! freezes id and title: scrolling to director_id keeps them at the left with the rows' titles; c with Tab jumps by name")
    func freeze() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let titles = try sqlite3(db, "SELECT title FROM movie WHERE id <= 3 ORDER BY id").split(separator: "\n").map(String.init)
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie", width: 52, height: 12)
        try t.waitFor("row 1 of 20,000")
        try t.type("l!")
        try t.waitFor("the first 2 columns stay when scrolling sideways")
        try t.type("llllll")
        var screen = try t.waitFor("director_id")
        var names = header(screen)
        #expect(names.prefix(3) == ["#", "id", "title"] && names.last == "director_id" && !names.contains("year"), "\(names)")
        for title in titles { #expect(screen.contains { $0.contains(title) }, "\(title) stays on screen") }
        // Unfrozen, title scrolls away.
        try t.type("hhhhh!")
        try t.waitFor("no column is frozen")
        try t.type("lllll")
        screen = try t.waitFor("director_id")
        names = header(screen)
        #expect(!names.contains("title"), "\(names)")
        // c, a prefix, Tab completes, Enter goes there.
        try t.type("cti")
        try t.send("Tab")
        try t.waitFor("column: title")
        try t.send("Enter")
        screen = try t.waitFor("column title")
        #expect(header(screen).contains("title"))
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("Enter shows the whole record: a long text wrapped, a newline and an escape shown, NULL as ∅, a blob's hex dump; Esc back on the row; Q the SQL")
    func record() throws {
        let scratch = TempDir()
        let db = scratch.path("r.sqlite")
        let long = (1...120).map { "word\($0)" }.joined(separator: " ")
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT, note TEXT, data BLOB)")
            try db.execute(sql: "INSERT INTO t VALUES (1, 'short', 'x', NULL)")
            try db.execute(sql: "INSERT INTO t VALUES (2, ?, ?, x'00414243ff')", arguments: [long, "one\ntwo\u{1B}]2;pwned\u{07}"])
        }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db))", width: 60, height: 24)
        try t.waitFor("row 1 of 2")
        try t.type("jl")
        try t.waitFor("row 2 of 2")
        try t.send("Enter")
        try t.waitFor("Row 2 of 2 in t")
        // The whole frame, not its first lines: a capture can land while the frame is being drawn
        // (seen once in CI: the title and the first value line were there, the wrapped line not yet).
        var screen = try t.waitFor("the wrapped value") { $0.hasSuffix("            │ word8 word9 word10 word11 word12 word13 word14") }
        #expect(screen.contains { $0.hasSuffix(" body TEXT  │ word1 word2 word3 word4 word5 word6 word7") }, "\(screen)")
        #expect(screen.contains { $0.hasSuffix("            │ word8 word9 word10 word11 word12 word13 word14") }, "wrapped between words")
        try t.type("G")
        // Again the whole frame: each line asserted below, before the capture the assertions read
        // (seen in CI: "word120" was there, the note and the hex dump not yet).
        _ = try t.waitFor("word120")
        _ = try t.waitFor("the note") { $0.contains(" note TEXT  │ one\\n") }
        screen = try t.waitFor("the hex dump") { $0.contains("00000000  00 41 42 43 ff") }
        #expect(screen.contains { $0.contains(" note TEXT  │ one\\n") } && screen.contains { $0.contains("│ two\\e]2;pwned\\x07") }, "\(screen)")
        #expect(screen.contains { $0.contains("data BLOB") && $0.contains("│ blob, 5 bytes") })
        #expect(screen.contains { $0.contains("00000000  00 41 42 43 ff") && $0.contains("|.ABC.|") })
        #expect(try t.value("#{pane_title}") != "pwned")
        try t.send("Escape")
        _ = try t.waitFor("back from row 2 to t")
        screen = try t.waitFor("the grid on row 2") { $0.contains(" t │ row 2 of 2") }
        #expect(screen.contains { $0.contains(" t │ row 2 of 2") })
        try t.type("k")
        try t.send("Enter")
        _ = try t.waitFor("Row 1 of 2 in t")
        // The line asserted is the one waited for: a capture right after the title can hold a
        // frame half drawn (seen in CI: the title and three fields, not yet the blob's line).
        screen = try t.waitFor("NULL as the grid shows it") { $0.hasSuffix(" data BLOB  │ ∅") }
        #expect(screen.contains { $0.hasSuffix(" data BLOB  │ ∅") }, "NULL as the grid shows it: \(screen)")
        try t.type("q")
        try t.waitFor(" t │ row 1 of 2")
        try t.type("Q")
        _ = try t.waitFor("The SQL of t")
        screen = try t.waitFor("the batch fault's SQL") { $0.contains("batch fault") && ($0.contains("SELECT ids.pos") || $0.contains("SELECT t.")) }
        #expect(screen.contains { $0.contains("ID fetch") && $0.contains("INSERT INTO temp.") })
        #expect(screen.contains { $0.contains("batch fault") && ($0.contains("SELECT ids.pos") || $0.contains("SELECT t.")) })
        try t.type("q")
        try t.waitFor("back from SQL to t")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }
}
