import Foundation
import GRDB
import Testing
import TestSupport

/// The open and the search run on the browser's worker thread while the real terminal's keys are
/// read on the main one: progress is drawn, and Esc, q and Ctrl-C reach the running fetch.
@Suite("Cancelling a load, a search, an edit, an undo or a write in a real terminal", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
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
        let cancelled = try t.waitFor("loading cancelled: r loads it again")
        // The table is not empty; it was not read.
        #expect(cancelled.contains { $0.contains("(not loaded: Esc stopped it; r loads it)") } && cancelled.contains { $0.contains("n │ not loaded") }, "\(cancelled)")
        try t.type("r")
        try t.waitFor("row 1 of 2,000,000", timeout: 60)
        try t.type("ll/no such text")
        try t.send("Enter")
        try t.waitFor("(Esc cancels the search)")
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

    @Test("keys typed while the IDs load, as soon as the first rows show, are all kept and act when the load ends: G lands on the last row; j j j j j, l, - and :1500000 Enter each do what they say; the status line counts the keys that wait")
    func keysDuringTheLoad() throws {
        let scratch = TempDir()
        let db = try bigTable(scratch)
        let command = "\(shellQuote(CLI.binary)) browse \(shellQuote(db)) --table n --sort 'name desc'"
        let t = try Tmux(command: command)
        try t.waitFor("loading IDs")
        try t.type("G")
        try t.waitFor("1 key waits")
        try t.waitFor("row 2,000,000 of 2,000,000", timeout: 60)
        try t.type("q")
        _ = try t.waitForExit()

        let t2 = try Tmux(command: command)
        try t2.waitFor("loading IDs")
        try t2.type("jjjjjl-:1500000")
        try t2.send("Enter")
        // The moves act over the first rows and the prompt opens at once; the Enter waits for the
        // count, and row 1,500,000's screen is read ahead meanwhile.
        try t2.waitFor("the Enter waiting, or its row read ahead") { $0.contains("key waits") || $0.contains("keys wait") || $0.contains("read ahead") }
        let screen = try t2.waitFor("row 1,500,000 of 2,000,000", timeout: 60)
        // The second column (v) hidden: the header shows id and name only.
        #expect(screen.first.map { $0.contains("id") && $0.contains("name") && !$0.contains(" v ") } == true, "\(screen)")
        try t2.type("q")
        _ = try t2.waitForExit()
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
        // Over the undo limit: the question says so before y, wrapped over two lines.
        try t.waitFor("Delete all 2,000,000 rows of this result (nothing is marked) from n — CANNOT BE UNDONE: this change", timeout: 60)
        try t.waitFor("touches 2,000,000 rows, more than the undo limit of 1,000,000? y/N")
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

    @Test("U, u and :w on 2,000,000 rows: Esc cancels each and the file is as it was; a U let run stands when its undo is cancelled, and u then restores it")
    func cancelUpdateUndoWrite() throws {
        let scratch = TempDir()
        let db = try bigTable(scratch)
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE INDEX n_name ON n(name); CREATE INDEX n_v ON n(v)") }
        func sum() throws -> Int { try DatabaseQueue(path: db).read { try Int.fetchOne($0, sql: "SELECT sum(v) FROM n") ?? -1 } }
        let before = try sum()
        #expect(before == 9_000_000)
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) browse \(shellQuote(db)) --table n")
        try t.waitFor("row 1 of 2,000,000", timeout: 60)

        // U cancelled while it runs: no row changed.
        try t.type("Uv = v + 1")
        try t.send("Enter")
        try t.waitForWrapped("Update all 2,000,000 rows of this result (nothing is marked) in n: v = v + 1 — CANNOT BE UNDONE: this change touches 2,000,000 rows, more than the undo limit of 1,000,000 — e.g. ", timeout: 60)
        try t.waitFor("? y/N")
        try t.type("y")
        try t.waitFor("updating 2,000,000 rows of n: ")
        try t.send("Escape")
        try t.waitFor("update cancelled: nothing was changed", timeout: 60)
        #expect(try sum() == before)

        // The same U over half the rows (the undo keeps at most 1,000,000), let run; the prompt's
        // history brings the line back. Then u cancelled: the update stands.
        try t.type("fv < 5")
        try t.send("Enter")
        try t.waitFor("row 1 of 1,000,000", timeout: 60)
        try t.type("U")
        try t.send("Up")
        try t.send("Enter")
        try t.waitForWrapped("Update all 1,000,000 rows of this result (nothing is marked) in n: v = v + 1 — e.g. ", timeout: 60)
        try t.waitFor("? y/n")
        try t.type("y")
        try t.waitFor("updated 1,000,000 rows of n", timeout: 120)
        #expect(try sum() == before + 1_000_000)
        try t.type("u")
        try t.waitFor("Undo the update of 1,000,000 rows of n: give v their old values? y/n")
        try t.type("y")
        try t.waitFor("undoing the last edit: ")
        try t.send("Escape")
        try t.waitFor("undo cancelled: nothing was changed", timeout: 60)
        #expect(try sum() == before + 1_000_000)

        // :w cancelled: no file, not even a partial one.
        let out = scratch.path("all.csv")
        try t.type(":w \(out)")
        try t.send("Enter")
        try t.waitFor("writing \(out): ")
        try t.send("Escape")
        // (The line ends ": no file written", past the screen's edge with the scratch folder's long path.)
        try t.waitFor("writing \(out) cancelled after ", timeout: 60)
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("")).allSatisfy { !$0.hasPrefix("all.csv") }, "no temporary file left either")

        // The undo, let run, restores every value.
        try t.type("u")
        try t.waitFor("Undo the update of 1,000,000 rows of n: give v their old values? y/n")
        try t.type("y")
        try t.waitFor("undo: restored the old values of 1,000,000 rows of n", timeout: 120)
        #expect(try sum() == before)
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }
}
