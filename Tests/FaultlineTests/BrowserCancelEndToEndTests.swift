import Foundation
import GRDB
import Testing
import TestSupport

/// The open and the search run on the browser's worker thread while the real terminal's keys are
/// read on the main one: progress is drawn, and Esc, q and Ctrl-C reach the running fetch.
@Suite("Cancelling a load or a search in a real terminal", .serialized)
struct BrowserCancelEndToEndTests {
    /// 2,000,000 rows: sorted by name, the ID fetch and a search that finds nothing each take long
    /// enough to press a key during them.
    func bigTable(_ scratch: TempDir) throws -> String {
        let db = scratch.path("big.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000)
            INSERT INTO n SELECT x, x % 10, 'row ' || x FROM c;
            """) }
        return db
    }

    @Test("the load's progress line, Esc cancels it, r loads again; a search shows progress and Esc cancels it alone; q while loading quits")
    func cancel() throws {
        let scratch = TempDir()
        let db = try bigTable(scratch)
        let command = "\(shellQuote(CLI.binary)) browse \(shellQuote(db)) --table n --sort 'name desc'"
        let t = try Tmux(command: command)
        try t.waitFor("loading IDs")
        try t.send("Escape")
        try t.waitFor("loading cancelled: r loads it again")
        try t.type("r")
        try t.waitFor("row 1 of 2,000,000", timeout: 60)
        try t.type("ll/no such text")
        try t.send("Enter")
        try t.waitFor("rows looked at (Esc cancels the search)")
        try t.send("Escape")
        let screen = try t.waitFor("search cancelled: still on row 1")
        #expect(screen.contains { $0.contains("sort: name desc") })
        try t.type("q")
        #expect(try t.waitForExit().status == 0)

        let t2 = try Tmux(command: command)
        try t2.waitFor("loading IDs")
        try t2.type("q")
        let exit = try t2.waitForExit()
        #expect(exit.status == 0 && exit.alternate == "0")
    }

    @Test("D on 2,000,000 rows: the working line ticks, Esc cancels the delete and nothing is changed; the browser goes on")
    func cancelDelete() throws {
        let scratch = TempDir()
        let db = try bigTable(scratch)
        // Two indexes: every deleted row rewrites them too, so the delete takes seconds.
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE INDEX n_name ON n(name); CREATE INDEX n_v ON n(v)") }
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) browse \(shellQuote(db)) --table n")
        try t.waitFor("row 1 of 2,000,000", timeout: 60)
        try t.type("D")
        try t.waitFor("Delete 2,000,000 rows from n? y/n", timeout: 60)
        try t.type("y")
        try t.waitFor("deleting 2,000,000 rows from n: ")
        try t.send("Escape")
        let screen = try t.waitFor("delete cancelled: nothing was changed", timeout: 60)
        #expect(screen.contains { $0.contains("row 1 of 2,000,000") }, "\(screen)")
        #expect(try DatabaseQueue(path: db).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 2_000_000)
        // Nothing to undo: the cancelled delete left no undo entry.
        try t.type("u")
        try t.waitFor("nothing to undo")
        try t.type("j")
        try t.waitFor("row 2 of 2,000,000")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
        #expect(try DatabaseQueue(path: db).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 2_000_000)
    }
}
