import Foundation
import Testing
import TestSupport

/// Following foreign keys, copying with `y` and writing with `:w` in the real binary in a real
/// terminal (tmux), on the demo database.
@Suite("Relationships, y and :w end to end, in tmux", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct ExploreEndToEndTests {
    @Test("Enter on movie.director_id opens the director; Esc back; R on that director opens their movies, as many as SQLite counts")
    func followKeys() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let directorID = try sqlite3(db, "SELECT director_id FROM movie WHERE id = 3")
        let name = try sqlite3(db, "SELECT name FROM director WHERE id = \(directorID)")
        let movies = Int(try sqlite3(db, "SELECT count(*) FROM movie WHERE director_id = \(directorID)")) ?? -1
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie", width: 110, height: 14)
        try t.waitFor("row 1 of 20,000")
        try t.type("jjcdirector_id")
        try t.send("Enter")
        try t.waitFor("column director_id")
        try t.send("Enter")
        var screen = try t.waitFor("demo.sqlite › movie › director")
        #expect(screen.contains { $0.contains("filter: id == \(directorID)") })
        #expect(screen.contains { $0.contains(name) }, "the director's name on screen")
        try t.type("R")
        screen = try t.waitFor("movie › director › movie")
        #expect(screen.contains { $0.contains("row 1 of \(movies.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US"))))") })
        #expect(screen.contains { $0.contains("filter: director_id == \(directorID)") })
        try t.send("Escape")
        try t.send("Escape")
        screen = try t.waitFor("back from director to movie")
        #expect(screen.contains { $0.contains("row 3 of 20,000") })
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("y c copies the row to a file in the state folder, the bytes export writes; :w writes the filtered, sorted result as export does, refuses to overwrite")
    func copyAndWrite() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let state = scratch.path("state")
        let out = scratch.path("out.tsv")
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table movie --where 'year >= 2000' --sort 'rating desc'",
                         width: 160, height: 14, environment: ["XDG_STATE_HOME": state])
        try t.waitFor("filter: year >= 2000")
        try t.type("yc")
        try t.waitFor("copied 1 row as CSV to \(state)/faultline/faultline-copy.csv")
        let id = try sqlite3(db, "SELECT id FROM movie WHERE year >= 2000 ORDER BY rating DESC, id LIMIT 1")
        let exported = try CLI.run(["export", db, "--table", "movie", "--where", "id == \(id)", "--format", "csv"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(state)/faultline/faultline-copy.csv")) == Data(exported.stdout.utf8))
        try t.type(":w \(out)")
        try t.send("Enter")
        let rows = Int(try sqlite3(db, "SELECT count(*) FROM movie WHERE year >= 2000")) ?? -1
        try t.waitFor("wrote \(rows.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))) rows to \(out) (TSV)")
        let all = try CLI.run(["export", db, "--table", "movie", "--where", "year >= 2000", "--sort", "rating desc", "--format", "tsv"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(all.stdout.utf8))
        try t.type(":w \(out)")
        try t.send("Enter")
        var screen = try t.waitFor("exists: :w! \(out) overwrites it")
        #expect(screen.contains { $0.hasPrefix(":w \(out)") }, "the refused command stays on the prompt line to fix")
        try t.send("Escape")
        try t.waitFor("row 1 of")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }
}
