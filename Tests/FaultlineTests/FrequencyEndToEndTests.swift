import Foundation
import GRDB
import Testing
import TestSupport

/// The frequency and summary sheets in the real binary in a real terminal: F, Enter on a value,
/// Esc back, I, and Esc cancelling a long count and a long summary.
@Suite("The frequency and summary sheets end to end, in tmux", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct FrequencyEndToEndTests {
    @Test("F on genre, Enter on the second value opens its movies, Esc back to the sheet, Esc back to the table where it was")
    func frequencyEnterAndBack() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let second = try sqlite3(db, "SELECT genre || '|' || count(*) FROM movie GROUP BY genre ORDER BY count(*) DESC, genre LIMIT 1 OFFSET 1")
            .split(separator: "|").map(String.init)
        let (genre, count) = (second[0], Int(second[1]) ?? 0)
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie")
        try t.waitFor("row 1 of 20,000")
        try t.type("jjlllll")
        try t.waitFor("row 3 of 20,000")
        try t.type("F")
        var screen = try t.waitFor("demo.sqlite › movie › genre freq │ value 1 of 10 in 20,000 rows")
        #expect(screen.contains { $0.contains("10 distinct values of genre in 20,000 rows") })
        try t.type("j")
        try t.waitFor("value 2 of 10")
        try t.send("Enter")
        screen = try t.waitFor("genre freq › movie │ row 1 of \(group(count)) │ filter: genre == \"\(genre)\"")
        #expect(screen.filter { $0.contains(" \(genre) ") }.count >= 5, "the rows shown are \(genre) movies")
        try t.send("Escape")
        try t.waitFor("genre freq │ value 2 of 10")
        try t.send("Escape")
        screen = try t.waitFor(" movie │ row 3 of 20,000")
        #expect(!screen.contains { $0.contains("›") }, "the table is the only sheet again")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("F on genre, v on two values, D: the exact count; y deletes their movies (the sqlite3 shell agrees), the sheet counts again; Esc shows the table's new count")
    func deleteTwoValues() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let top = try sqlite3(db, "SELECT genre || '|' || count(*) FROM movie GROUP BY genre ORDER BY count(*) DESC, genre LIMIT 2")
            .split(separator: "\n").map { $0.split(separator: "|").map(String.init) }
        let (first, second) = (top[0][0], top[1][0])
        let (n1, n2) = (Int(top[0][1]) ?? 0, Int(top[1][1]) ?? 0)
        let left = 20_000 - n1 - n2
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie", width: 140)
        try t.waitFor("row 1 of 20,000")
        try t.type("jjlllll")
        try t.waitFor("row 3 of 20,000")
        try t.type("F")
        try t.waitFor("movie › genre freq │ value 1 of 10 in 20,000 rows")
        try t.type("v")
        try t.waitFor("│ 1 value marked, \(group(n1)) rows")
        try t.type("v")
        try t.waitFor("│ 2 values marked, \(group(n1 + n2)) rows")
        try t.type("D")
        try t.waitFor("Delete \(group(n1 + n2)) rows (2 values of genre) from movie? y/n")
        try t.type("y")
        var screen = try t.waitFor("genre counted again: 8 values in \(group(left)) rows")
        #expect(screen.contains { $0.contains("deleted \(group(n1 + n2)) rows from movie (2 values of genre); u undoes") })
        #expect(screen.contains { $0.contains("movie › genre freq │ value 1 of 8 in \(group(left)) rows") })
        #expect(try sqlite3(db, "SELECT count(*) FROM movie").trimmingCharacters(in: .whitespacesAndNewlines) == String(left))
        let gone = "SELECT count(*) FROM movie WHERE genre IN ('\(first)', '\(second)')"
        #expect(try sqlite3(db, gone).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        try t.send("Escape")
        // The table was fetched again with the count: it comes back at once, with its new count.
        screen = try t.waitFor("back from genre freq to movie")
        let status = try #require(screen.first { $0.contains(" movie │ row ") }, "\(screen)")
        #expect(status.contains(" of \(group(left))"), "\(status)")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("I on the demo: every column's figures, then Enter on genre goes to the genre column of the table")
    func summary() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let genres = try sqlite3(db, "SELECT count(DISTINCT genre) FROM movie")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie", width: 140)
        try t.waitFor("row 1 of 20,000")
        try t.type("I")
        let screen = try t.waitFor("7 columns summarised by SQLite")
        let genre = try #require(screen.first { $0.contains(" genre ") }, "\(screen)")
        #expect(genre.contains("TEXT") && genre.contains(" \(genres) "), "\(genre)")
        try t.type("jjjjj")
        try t.send("Enter")
        try t.waitFor("column genre")
        try t.type("F")
        try t.waitFor("movie › genre freq │ value 1 of \(genres) in 20,000 rows")
        try t.type("q")
        try t.waitFor(" movie │ row 1 of 20,000")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("F shows a sample's figures at once; Esc cancels the long count and keeps the table; F again counts 2,000,000 distinct values, and G scrolls to the last; Esc cancels a long summary")
    func cancelALongCount() throws {
        let scratch = TempDir()
        let db = scratch.path("big.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000)
            INSERT INTO n SELECT x, x % 10, 'row ' || x FROM c;
            """) }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) browse \(shellQuote(db)) --table n")
        try t.waitFor("row 1 of 2,000,000", timeout: 60)
        try t.type("jll")
        try t.waitFor("row 2 of 2,000,000")
        try t.type("F")
        // First figures at once, of an even sample (each name is distinct: 1 in 10,000 sampled rows, ≈ 200 in 2,000,000).
        var screen = try t.waitFor("n › name freq │ ≥ 10,000 values in 10,000 sampled rows")
        #expect(screen.contains { $0.contains("≈ 200 ") && $0.contains("≈ 0.01%") }, "\(screen)")
        try t.waitFor("counting the values of name")
        try t.send("Escape")
        screen = try t.waitFor("counting name cancelled: still on n")
        #expect(screen.contains { $0.contains(" n │ row 2 of 2,000,000") })
        #expect(!screen.contains { $0.contains("freq") })
        try t.type("F")
        try t.waitFor("n › name freq │ value 1 of 2,000,000", timeout: 120)
        try t.type("G")
        screen = try t.waitFor("value 2,000,000 of 2,000,000")
        #expect(screen.contains { $0.contains("row 999999") }, "the last value, by count then by value")
        try t.type("q")
        try t.waitFor(" n │ row 2 of 2,000,000")
        // I: a summary whose figures take a while; Esc stops them, Esc again goes back.
        // Over 2,000,000 rows, every column's first figures are of an even sample, marked ≈ (the
        // distinct count a lower bound), while the exact ones are computed.
        try t.type("I")
        screen = try t.waitFor("summarising id, column 1 of 3: ")
        #expect(screen.contains { $0.contains("≈ figures are of an even sample of 10,000 rows until then") }, "\(screen)")
        let sampledV = try #require(screen.first { $0.contains(" v ") && $0.contains("INTEGER") }, "\(screen)")
        #expect(sampledV.contains("≥ 10 ") && sampledV.contains("≈ 0 ") && sampledV.contains("≈ 9 "), "every value of x % 10 is in the sample: \(sampledV)")
        let sampledName = try #require(screen.first { $0.contains(" name ") && $0.contains("TEXT") }, "\(screen)")
        #expect(sampledName.contains("≥ 10,000"), "\(sampledName)")
        try t.send("Escape")
        screen = try t.waitFor("summary cancelled after")
        #expect(screen.contains { $0.contains("n › summary │ column 3 of 3") }, "on the row of name, the column the cursor was on")
        #expect(screen.contains { $0.contains(" name ") && $0.contains("≥ 10,000") }, "a cancelled summary keeps its sampled figures, marked as such")
        try t.send("Escape")
        try t.waitFor(" n │ row 2 of 2,000,000")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }
}
