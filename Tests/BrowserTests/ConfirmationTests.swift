import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// Every write from the browser runs only after a confirmation that says exactly what it will
/// do, and that confirmation was on screen when its key was pressed.
@Suite("Confirmations: what they say, and keys typed before them")
struct ConfirmationTests {
    func browser(_ path: String, undoLimit: Int? = nil, width: Int = 160) throws -> (Browser, MemoryTerminal) {
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        if let undoLimit { context.undoLimit = undoLimit }
        let term = MemoryTerminal(width: width, height: 12)
        let b = try Browser(context: context, name: "n.sqlite", options: BrowserOptions(table: "n", batchSize: 5), backend: term,
                            environment: FakeFacts().environment)
        b.start()
        return (b, term)
    }

    func rowsInFile(_ path: String) throws -> Int { try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") ?? -1 } }

    @Test("a key typed before the question was drawn never answers it: the frame that shows it throws the type-ahead away")
    func typeAheadIsDiscarded() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let (b, term) = try browser(path)
        let target = try #require(b.state.editTarget)
        // A burst typed while the count ran: y among grid keys.
        term.keys = [.char("j"), .char("y"), .char("y")]
        b.dispatch(.countedForDelete(10, target: target))
        #expect(b.state.isConfirming)
        b.present()
        #expect(term.keys.isEmpty && term.discardedKeys == [.char("j"), .char("y"), .char("y")])
        #expect(try rowsInFile(path) == 10, "nothing deleted by a key typed before the question")
        // A key pressed once it is on screen answers it.
        b.send(.char("y"))
        #expect(try rowsInFile(path) == 0)
    }

    @Test("D with y typed at once, as a fast user types it: the y comes before the question and deletes nothing")
    func burstAfterD() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 2_000)
        let (b, term) = try browser(path)
        for _ in 0..<20 {
            term.keys = [.char("y")]
            b.send(.char("D"))
            // Either the count was still running (the y was refused) or the question threw it away.
            #expect(term.keys.isEmpty)
            #expect(b.state.isConfirming, "\(b.state.message ?? "")")
            b.send(.char("n"))
        }
        #expect(try rowsInFile(path) == 2_000)
    }

    @Test("the question names the scope in words: the marked rows, or every row of the result when nothing is marked")
    func scopeInWords() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let (b, term) = try browser(path)
        b.send(.char("D"))
        #expect(term.text.last == "Delete all 10 rows of this result (nothing is marked) from n? y/n")
        b.send(.char("n"))
        b.send([.char("v"), .char("v"), .char("D")])
        #expect(term.text.last == "Delete the 2 marked rows from n? y/n")
        b.send(.char("n"))
        b.send([.char("U")] + keys("v = 0") + [.enter])
        #expect(term.text.last == "Update the 2 marked rows in n: v = 0 — e.g. id 1: 10 → 0; id 2: 20 → 0? y/n")
        b.send(.char("n"))
        b.send([.char("f")] + keys("id == 4") + [.enter, .char("D")])
        #expect(term.text.last == "Delete the 1 row of this result (nothing is marked) from n? y/n")
        b.send(.char("n"))
        // e on another row keeps the marks: it edits one cell, whatever is marked.
        b.send([.char("f"), .ctrl("u"), .enter, .char("g"), .char("v"), .char("v"), .char("j"), .char("j"), .char("l"), .char("e"), .ctrl("u")] + keys("7") + [.enter, .char("y")])
        #expect(b.state.marked.count == 2 && b.state.message?.hasPrefix("updated 1 row of n; u undoes") == true, "\(b.state.marked) \(b.state.message ?? "")")
        b.send(.char("V"))
        b.send(.char("V"))
        // V marks every row: the question says so, not that nothing is marked.
        b.send([.char("f"), .ctrl("u"), .enter, .char("V"), .char("D")])
        #expect(term.text.last == "Delete all 10 rows of this result (all marked) from n? y/n", "\(term.text.suffix(2))")
    }

    @Test("an edit over the undo limit says before y that it cannot be undone, and answers y/N; under it, u asks what it restores")
    func undoability() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let (b, term) = try browser(path, undoLimit: 5)
        b.send(.char("D"))
        #expect(term.text.last == "Delete all 10 rows of this result (nothing is marked) from n — CANNOT BE UNDONE: this change touches 10 rows, more than the undo limit of 5? y/N")
        b.send(.char("n"))
        b.send([.char("U")] + keys("v = v + 1") + [.enter])
        #expect(term.text.suffix(2).joined(separator: " ") == "Update all 10 rows of this result (nothing is marked) in n: v = v + 1 — CANNOT BE UNDONE: this change touches 10 rows, more than the undo limit of 5 — e.g. id 1: 10 → 11; id 2: 20 → 21; id 3: 30 → 31; …? y/N")
        b.send(.char("n"))
        // Under the limit: undoable, and u says what it will put back before it does.
        b.send([.char("v"), .char("v"), .char("v"), .char("D"), .char("y")])
        #expect(try rowsInFile(path) == 7)
        b.send(.char("u"))
        #expect(term.text.last == "Undo the delete of 3 rows from n: put them back? y/n")
        #expect(try rowsInFile(path) == 7, "u asks first")
        b.send(.char("x"))
        #expect(b.state.message == "cancelled: nothing was changed")
        #expect(try rowsInFile(path) == 7)
        b.send([.char("u"), .char("y")])
        #expect(try rowsInFile(path) == 10)
        b.send(.char("u"))
        #expect(b.state.message == "nothing to undo" && !b.state.isConfirming)
        // Another program changes a row the next update wrote: u says so before y, and leaves it.
        b.send([.char("g"), .char("v"), .char("v"), .char("U")] + keys("v = 5") + [.enter, .char("y")])
        try direct(path) { try $0.execute(sql: "UPDATE n SET v = 77 WHERE id = 1") }
        b.send(.char("u"))
        #expect(term.text.last == "Undo the update of 2 rows of n: give v their old values — 1 row changed since the edit is left as it is? y/n")
        b.send(.char("y"))
        #expect(b.state.message?.hasPrefix("undo: restored the old values of 1 row of n; 1 row changed since the edit was left as it is") == true, "\(b.state.message ?? "")")
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(v) FROM n WHERE id <= 2") } == "77,20")
        // A narrow screen wraps the whole question over the grid, y/n last.
        let (narrow, small) = try browser(path, undoLimit: 5, width: 40)
        narrow.send(.char("D"))
        #expect(Array(small.text.suffix(4)) == ["Delete all 10 rows of this result",
                                                 "(nothing is marked) from n — CANNOT BE",
                                                 "UNDONE: this change touches 10 rows,",
                                                 "more than the undo limit of 5? y/N"])
        #expect(small.text.suffix(4).joined(separator: " ") == "Delete all 10 rows of this result (nothing is marked) from n — CANNOT BE UNDONE: this change touches 10 rows, more than the undo limit of 5? y/N")
        // Too small a screen for it: the last line it has is cut with … before the answer keys.
        let (tiny, four) = try browser(path, undoLimit: 5, width: 40)
        four.resize(width: 40, height: 3)
        tiny.send(.resize)
        tiny.send(.char("D"))
        #expect(four.text.count == 3 && four.text[2].hasSuffix("… y/N") && four.text[1] == "Delete all 10 rows of this result", "\(four.text)")
    }

    @Test("e edits the current cell: a prompt holding its value as a literal, old → new in the question, one row changed, u undoes; a value the column refuses brings the prompt back")
    func editCell() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let (b, term) = try browser(path)
        func row(_ id: Int) throws -> String { try direct(path) { try String.fetchOne($0, sql: "SELECT quote(v) || ',' || quote(name) FROM n WHERE id = \(id)") ?? "" } }
        b.send([.char("j"), .char("l"), .char("e")])
        #expect(b.state.mode == .prompt(.cellEdit, text: "20"))
        #expect(term.text.last == "v = 20")
        b.send([.ctrl("u")] + keys("v * 2 + 1") + [.enter])
        #expect(term.text.last == "Set v of row 2, id 2 in n: 20 → 41? y/n", "the expression shown as the value it comes to")
        #expect(try row(2) == "20,'row 2'", "nothing before y")
        b.send(.char("y"))
        #expect(try row(2) == "41,'row 2'" && (try row(3)) == "30,'row 3'")
        #expect(b.state.message?.hasPrefix("updated 1 row of n; u undoes") == true, "\(b.state.message ?? "")")
        // Text is quoted (a quote in it escaped); nil sets NULL.
        b.send([.char("l"), .char("e")])
        #expect(b.state.mode == .prompt(.cellEdit, text: "\"row 2\""))
        b.send([.ctrl("u")] + keys("\"say \\\"hi\\\"\"") + [.enter, .char("y")])
        #expect(try row(2) == "41,'say \"hi\"'")
        b.send([.char("h"), .char("e"), .ctrl("u")] + keys("nil") + [.enter])
        #expect(term.text.last == "Set v of row 2, id 2 in n: 41 → nil? y/n")
        b.send(.char("y"))
        #expect(try row(2) == "NULL,'say \"hi\"'")
        b.send(.char("e"))
        #expect(b.state.mode == .prompt(.cellEdit, text: "nil"))
        // Text into a column of numbers: refused naming the column, the prompt back to fix; Esc leaves it.
        b.send([.ctrl("u")] + keys("\"late\"") + [.enter])
        #expect(b.state.messageIsError && b.state.message?.contains("n.v holds numbers") == true, "\(b.state.message ?? "")")
        #expect(b.state.mode == .prompt(.cellEdit, text: "\"late\""))
        b.send([.ctrl("u")] + keys("7") + [.enter, .char("y")])
        #expect(try row(2) == "7,'say \"hi\"'")
        // Each was its own undoable edit: u takes them back one at a time.
        b.send([.char("u"), .char("y")])
        #expect(try row(2) == "NULL,'say \"hi\"'")
        b.send([.char("u"), .char("y"), .char("u"), .char("y"), .char("u"), .char("y")])
        #expect(try row(2) == "20,'row 2'")
        // Esc at the prompt or n at the question changes nothing.
        b.send([.char("e"), .escape, .char("e"), .enter, .char("n")])
        #expect(try row(2) == "20,'row 2'" && b.state.mode == .grid)
    }

    @Test("marks live with the sheet they were made on: the parent's survive a drill-down and back, and leaving a sheet with marks says they were cleared")
    func marksAcrossSheets() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30) INSERT INTO n SELECT x, x % 3 FROM c;
            """)
        let (b, term) = try browser(path)
        b.send([.char("v"), .char("v"), .char("l"), .char("F")])
        b.send([.char("v"), .char("v"), .char("k"), .enter])
        #expect(b.state.sheetPath == ["n.sqlite", "n", "v freq", "n"])
        b.send([.char("v"), .escape])
        #expect(b.state.message == "back from n to v freq; the 1 marked row of n was cleared")
        b.send(.escape)
        #expect(b.state.message == "back from v freq to n; the 2 marked values of v freq were cleared")
        #expect(b.state.marked.count == 2)
        b.send(.char("D"))
        #expect(term.text.last == "Delete the 2 marked rows from n? y/n")
        b.send([.char("n"), .char("F"), .char("V"), .escape])
        #expect(b.state.message == "back from v freq to n; the marks on every row of v freq were cleared")
        b.send([.char("F"), .escape])
        #expect(b.state.message == "back from v freq to n")
    }

    @Test("U's question shows a few rows old → new, and how many non-NULL values it would turn into NULL; e's question says when its row is gone")
    func updatePreview() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v REAL, w INTEGER);
            INSERT INTO n VALUES (1, 10, 2), (2, NULL, 2), (3, 30, NULL), (4, 40, NULL), (5, 50, 1);
            """)
        let (b, term) = try browser(path, width: 200)
        b.send([.char("U")] + keys("v = v * w") + [.enter])
        let question = term.text.suffix(3).joined(separator: " ")
        #expect(question.contains("Update all 5 rows of this result (nothing is marked) in n: v = v * w — 2 non-NULL values of v would become NULL — e.g. id 1: 10.0 → 20.0; id 2: nil → nil; id 3: 30.0 → nil; …? y/n"),
                "\(term.text.suffix(3))")
        b.send(.char("n"))
        // New values as the column stores them (its affinity): text that is a number goes in as one.
        b.send([.char("U")] + keys("w = \"7\"") + [.enter])
        #expect(term.text.suffix(3).joined(separator: " ").contains("w = \"7\" — e.g. id 1: 2 → 7; id 2: 2 → 7; id 3: nil → 7; …? y/n"), "\(term.text.suffix(3))")
        b.send(.char("n"))
        // e shows the value an expression comes to, nil included.
        b.send(keys("ggll"))
        b.send(.char("e"))
        b.send([.ctrl("u")] + keys("w * 3") + [.enter])
        #expect(term.text.suffix(2).joined(separator: " ").contains("Set w of row 1, id 1 in n: 2 → 6?"), "\(term.text.suffix(3))")
        b.send(.char("n"))
        b.send(keys("gghh"))
        // Marked rows: the sample is theirs, and no NULL note where none would be lost.
        b.send(keys("ggjjjjv"))
        b.send([.char("U")] + keys("v = v + 1") + [.enter])
        #expect(term.text.suffix(2).joined(separator: " ").contains("Update the 1 marked row in n: v = v + 1 — e.g. id 5: 50.0 → 51.0? y/n"), "\(term.text.suffix(3))")
        b.send(.char("y"))
        #expect(try direct(path) { try Double.fetchOne($0, sql: "SELECT v FROM n WHERE id = 5") } == 51)
        // e sets one cell: a comma that would start a second assignment is refused, the prompt kept.
        b.send(keys("gg"))
        b.send(.char("e"))
        b.send([.ctrl("u")] + keys("7, v = 0") + [.enter])
        #expect(!b.state.isConfirming && b.state.messageIsError && b.state.message?.hasPrefix("e sets one cell: type one value") == true, "\(b.state.message ?? "")")
        #expect(b.state.mode == .prompt(.cellEdit, text: "7, v = 0"), "\(b.state.mode)")
        b.send(.escape)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n WHERE v = 0 OR w = 7") } == 0)
        // e on a row another program deleted meanwhile: nothing to ask.
        b.send(keys("gg"))
        b.send(.char("e"))
        #expect(b.state.cellEdit != nil || b.state.mode != .grid, "e opened nothing: \(b.state.message ?? "")")
        try direct(path) { try $0.execute(sql: "DELETE FROM n WHERE id = 1") }
        b.send([.ctrl("u")] + keys("7") + [.enter])
        #expect(!b.state.isConfirming && b.state.message == "row 1 is no longer in n: nothing was changed; r reloads", "\(b.state.message ?? "")")
    }
}

@Suite("What the status line says when it is cut")
struct CutStatusTests {
    @Test("a status line too long for the screen ends in …, so a cut figure never reads as a whole one")
    func statusEllipsis() throws {
        var s = BrowserState(width: 30, height: 8)
        _ = s.reduce(.opened(table: "flights", columns: ["a"], filter: "carrier == \"HA\"", sort: nil, count: 3_200_000, cursor: 319_999, readOnly: nil, message: nil, result: 1))
        let status = render(s, colors: false).lines[s.height - 2]
        #expect(status.hasPrefix(" flights │ row 320,00…"), "\(status)")
        var wide = BrowserState(width: 100, height: 8)
        _ = wide.reduce(.opened(table: "flights", columns: ["a"], filter: "", sort: nil, count: 3, cursor: 0, readOnly: nil, message: nil, result: 1))
        #expect(!render(wide, colors: false).lines[wide.height - 2].contains("…"))
    }

}
