import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// The sheet stack in the reducer alone: `F`, a frequency sheet, Enter on a value, Esc and q back.
@Suite("Reducer: the frequency sheet and the sheet stack")
struct SheetReducerTests {
    /// Table `t` (columns a, b), 100 rows, filter `a > 1`, sorted by b descending, result 1, the
    /// cursor on row 5 of column b, row IDs 1 and 2 marked.
    func table() -> BrowserState {
        var s = BrowserState(width: 100, height: 10, databaseName: "db.sqlite")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "a > 1", sort: ("b", false), count: 100, cursor: 4, readOnly: nil, message: nil, result: 1))
        let rows = s.visibleRows.map { RowSnapshot(id: nil, values: [.text("\($0)"), .null], exists: true) }
        _ = s.reduce(.windowLoaded(start: s.visibleRows.lowerBound, rows: rows))
        _ = s.reduce(.key(.char("l")))
        return s
    }

    /// The effects other than loading the visible window (tests that do not load it).
    func work(_ effects: [Effect]) -> [Effect] {
        effects.filter { if case .loadWindow = $0 { return false } else { return true } }
    }

    func statusLine(_ s: BrowserState) -> String { render(s, colors: false).lines[s.height - 2] }

    @Test("F asks for the frequencies of the current column of the result on screen, and nothing else")
    func frequencyKey() {
        var s = table()
        #expect(s.reduce(.key(.char("F"))) == [.frequency(column: "b", result: 1)])
        #expect(s.sheet == .table, "the table stays until the counts come back")
        var loading = BrowserState(width: 70, height: 10)
        _ = loading.reduce(.openCancelled(table: "t", columns: ["a"], filter: "", sort: nil))
        #expect(work(loading.reduce(.key(.char("F")))) == [])
        #expect(loading.messageIsError)
    }

    @Test("the counts push a frequency sheet; Esc brings the table back with its filter, sort, cursor, column and marks")
    func pushAndPop() {
        var s = table()
        _ = s.reduce(.key(.char("V")))
        #expect(s.allMarked)
        _ = s.reduce(.started(.counting))
        #expect(s.reduce(.key(.char("j"))) == [], "keys wait while SQLite counts")
        let effects = s.reduce(.frequencyOpened(column: "b", values: 12, total: 100, result: 2, seconds: 0.25))
        #expect(effects == [.loadWindow(0..<7)])
        #expect(s.running == nil)
        #expect(s.frequencySheet == FrequencySheet(column: "b", table: "t", filter: "a > 1", sort: SortDescriptor(key: "b", ascending: false), total: 100))
        #expect(s.columns == ["b", "count", "percent", "histogram"])
        #expect(s.count == 12 && s.cursorRow == 0 && s.cursorColumn == 0 && s.sheetDepth == 1)
        #expect(!s.allMarked && s.editTarget == nil, "a frequency sheet has no rows to edit")
        #expect(statusLine(s).hasPrefix(" db.sqlite › t › b freq │ value 1 of 12 in 100 rows │ filter: a > 1"), "\(statusLine(s))")
        #expect(s.message == "12 distinct values of b in 100 rows, counted by SQLite in 250 ms; Enter opens a value's rows, Esc goes back")
        _ = s.reduce(.key(.char("j")))
        let back = s.reduce(.key(.escape))
        #expect(back.first == .closeSheet(.frequency))
        #expect(back.dropFirst().allSatisfy { if case .loadWindow = $0 { return true } else { return false } } && back.count == 2, "\(back)")
        #expect(s.sheet == .table && s.sheetDepth == 0)
        #expect(s.table == "t" && s.filter == "a > 1" && s.sort == SortDescriptor(key: "b", ascending: false))
        #expect(s.cursorRow == 4 && s.cursorColumn == 1 && s.count == 100 && s.resultID == 1)
        #expect(s.allMarked, "the marks of the table are back")
        #expect(statusLine(s).hasPrefix(" t │ row 5 of 100 │ all marked │ filter: a > 1 │ sort: b desc"), "\(statusLine(s))")
    }

    @Test("on a frequency sheet the keys that act on a table's rows say so and do nothing; q goes back, it does not quit")
    func refusedKeys() {
        var s = table()
        _ = s.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        for key in ["/", "n", "f", "s", "S", "r", "M", "v", "V", "D", "U", "u", "F"] {
            #expect(work(s.reduce(.key(.char(Character(key))))) == [], "\(key)")
            #expect(s.messageIsError, "\(key)")
            #expect(s.mode == .grid && s.frequencySheet != nil, "\(key)")
        }
        _ = s.reduce(.key(.char("s")))
        #expect(s.message == "s acts on a table's rows, not on a frequency sheet: Enter opens a value's rows, Esc goes back", "a refused key keeps its reason")
        _ = s.reduce(.key(.ctrl("t")))
        #expect(s.messageIsError && s.message == "unknown key Ctrl-T: ? lists the keys" && s.frequencySheet != nil)
        #expect(s.reduce(.key(.char("q"))).first == .closeSheet(.frequency))
        #expect(!s.quit && s.sheet == .table)
        _ = s.reduce(.key(.char("q")))
        #expect(s.quit, "q on the first sheet quits")
    }

    @Test("Enter on a value asks for its rows; they open as a new sheet, and Esc goes back to the frequency sheet where it was")
    func enterOnAValue() throws {
        var s = table()
        _ = s.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        _ = s.reduce(.key(.char("j")))
        let sheet = try #require(s.frequencySheet)
        #expect(work(s.reduce(.key(.enter))) == [.openValue(row: 1, of: sheet)])
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "(a > 1) AND b == 7", sort: SortDescriptor(key: "b", ascending: false), count: 9, cursor: 0, readOnly: nil,
                             message: nil, result: 3, pushed: true))
        #expect(s.sheet == .table && s.sheetDepth == 2 && s.count == 9 && s.filter == "(a > 1) AND b == 7")
        #expect(s.editTarget == EditTarget(result: 3, table: "t", marked: nil), "a value's rows can be edited like any result")
        #expect(statusLine(s).hasPrefix(" db.sqlite › t › b freq › t │ row 1 of 9"), "\(statusLine(s))")
        _ = s.reduce(.key(.escape))
        #expect(s.frequencySheet == sheet && s.cursorRow == 1 && s.count == 3 && s.resultID == 2)
        _ = s.reduce(.key(.escape))
        #expect(s.sheet == .table && s.count == 100 && s.sheetDepth == 0)
    }

    @Test("F is refused while the result is in an eager array; leaving a value's sheet drops its eager array")
    func eager() {
        var s = table()
        _ = s.reduce(.eagerProgress(loaded: 100, done: true))
        #expect(work(s.reduce(.key(.char("F")))) == [] && s.messageIsError)
        _ = s.reduce(.eagerStopped("back to batches"))
        _ = s.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "b == 1", sort: nil, count: 9, cursor: 0, readOnly: nil,
                             message: nil, result: 3, pushed: true))
        _ = s.reduce(.eagerProgress(loaded: 9, done: true))
        #expect(s.eagerLoaded == 9)
        #expect(s.reduce(.key(.escape)).first == .closeSheet(.table))
        #expect(s.eagerLoaded == nil && !s.eagerActive && s.frequencySheet != nil)
    }

    @Test("a cancelled count leaves the table as it was, and says so")
    func cancelled() {
        var s = table()
        _ = s.reduce(.started(.counting))
        #expect(s.reduce(.key(.escape)) == [.cancel])
        _ = s.reduce(.frequencyProgress(column: "b", seconds: 1.25, rows: 1_500_000))
        #expect(s.message == "counting the values of b: 1.3 s, 1,500,000 rows read (Esc cancels)")
        _ = s.reduce(.frequencyCancelled(column: "b"))
        #expect(s.running == nil && s.sheet == .table && s.cursorRow == 4 && s.count == 100)
        #expect(s.message == "counting b cancelled: still on t")
        #expect(!s.quit)
    }

    @Test("I shows a summary sheet at once, filled in column by column; Enter goes back to the column; F counts it over the table's result")
    func summary() throws {
        var s = table()
        let effects = s.reduce(.key(.char("I")))
        #expect(effects == [.summarize(columns: ["a", "b"], result: 1)])
        #expect(s.summarySheet?.columns == ["a", "b"] && s.sheetDepth == 1 && s.count == 2)
        #expect(s.snapshot(1)?.values.prefix(3) == [.text("b"), .text("…"), .text("…")])
        _ = s.reduce(.started(.summarizing))
        let figures = ColumnSummary(attribute: "b", declaredType: "TEXT", rows: 100, storageClasses: ["integer", "text"], nulls: 3, distinct: 1_234,
                                    min: .integer(1), max: .text("zz"), mean: 2.5, shortest: 1, longest: 9,
                                    mostFrequent: ValueCount(value: .null, count: 3))
        _ = s.reduce(.summaryRow(index: 1, figures: figures, result: 1))
        #expect(s.snapshot(1)?.values == [.text("b"), .text("TEXT"), .text("integer,text"), .text("3"), .text("1,234"), .text("1"), .text("zz"),
                                          .text("2.5"), .text("1–9"), .text("∅ (3)")])
        _ = s.reduce(.summaryRow(index: 0, figures: figures, result: 99))
        #expect(s.snapshot(0)?.values[1] == .text("…"), "figures of another result are not shown")
        _ = s.reduce(.summaryEnded(done: 1, of: 2, seconds: 0.5, cancelled: true))
        #expect(s.running == nil && s.message == "summary cancelled after 1 of 2 columns: Esc goes back")
        #expect(statusLine(s).hasPrefix(" db.sqlite › t › summary │ column 1 of 2 │ filter: a > 1"), "\(statusLine(s))")
        #expect(work(s.reduce(.key(.char("D")))) == [] && s.messageIsError)
        #expect(work(s.reduce(.key(.char("I")))) == [] && s.messageIsError)
        // F on the row of b: the frequencies of b over result 1, with the table's filter and sort.
        _ = s.reduce(.key(.char("j")))
        #expect(work(s.reduce(.key(.char("F")))) == [.frequency(column: "b", result: 1)])
        _ = s.reduce(.frequencyOpened(column: "b", values: 4, total: 100, result: 5, seconds: 0))
        #expect(s.frequencySheet == FrequencySheet(column: "b", table: "t", filter: "a > 1", sort: SortDescriptor(key: "b", ascending: false), total: 100))
        #expect(statusLine(s).hasPrefix(" db.sqlite › t › summary › b freq"))
        #expect(s.reduce(.key(.escape)).first == .closeSheet(.frequency))
        #expect(s.summarySheet?.rows[1] == figures && s.cursorRow == 1 && s.windowValid, "the summary comes back with its figures")
        // Enter: back to the table, on column b.
        _ = s.reduce(.key(.char("k")))
        let enter = s.reduce(.key(.enter))
        #expect(enter.first == .closeSheet(.summary))
        #expect(s.sheet == .table && s.cursorColumn == 0 && s.cursorRow == 4 && s.filter == "a > 1")
    }
}
