import BatchStore
@testable import Browser
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
        #expect(!s.allMarked, "the table's marks stay with the table")
        #expect(s.editTarget == EditTarget(result: 1, table: "t", marked: nil, values: ValueTarget(sheet: 2, column: "b", positions: [0], valueCount: 1, binWidth: nil)),
                "D on a frequency sheet acts on the cursor's value's rows of the table's result")
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
        for key in ["/", "n", "f", "s", "S", "M", "F", "I"] {
            #expect(work(s.reduce(.key(.char(Character(key))))) == [], "\(key)")
            #expect(s.messageIsError, "\(key)")
            #expect(s.mode == .grid && s.frequencySheet != nil, "\(key)")
        }
        _ = s.reduce(.key(.char("s")))
        #expect(s.message == "s acts on a table's rows, not on a frequency sheet: Enter opens a value's rows, v marks values, D and U act on their rows, Esc goes back", "a refused key keeps its reason")
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
        #expect(s.cursorRow == 1, "the sheet opens on the row of the column the cursor was on (b)")
        #expect(s.snapshot(1)?.values.prefix(3) == [.text("b"), .text("…"), .text("…")])
        _ = s.reduce(.started(.summarizing))
        let figures = ColumnSummary(attribute: "b", declaredType: "TEXT", rows: 100, storageClasses: ["integer", "text"], nulls: 3, distinct: 1_234,
                                    min: .integer(1), max: .text("zz"), mean: 2.5, shortest: 1, longest: 9,
                                    mostFrequent: ValueCount(value: .null, count: 3))
        _ = s.reduce(.summaryRow(index: 1, figures: figures, result: 1))
        #expect(s.snapshot(1)?.values == [.text("b"), .text("TEXT"), .text("integer,text"), .text("3"), .text("1,234 + ∅"), .text("1"), .text("\"zz\""),
                                          .text("2.5"), .text("1–9"), .text("∅ (3)")], "text quoted where numbers and text meet")
        // Means keep up to 15 significant digits (they were cut to 6: 168388 for 168388.5, 5e+06 at 10M).
        for (mean, shown) in [(168_388.5, "168388.5"), (5_000_000.5, "5000000.5"), (1.0 / 3, "0.333333333333333"), (2.5e20, "2.5e+20")] {
            var precise = figures
            precise.mean = mean
            _ = s.reduce(.summaryRow(index: 1, figures: precise, result: 1))
            #expect(s.snapshot(1)?.values[7] == .text(shown))
        }
        _ = s.reduce(.summaryRow(index: 1, figures: figures, result: 1))
        // A sample's figures (first, over a large result): marked, counts scaled to the result's
        // rows, the distinct count a lower bound; exact figures replace them, never the reverse.
        var sampled = figures
        sampled.rows = 10
        sampled.sampledFrom = 1_000
        _ = s.reduce(.summaryRow(index: 0, figures: sampled, result: 1))
        #expect(s.snapshot(0)?.values == [.text("a"), .text("TEXT"), .text("≈ integer,text"), .text("≈ 300"), .text("≥ 1,234 + ∅"), .text("≈ 1"), .text("≈ \"zz\""),
                                          .text("≈ 2.5"), .text("≈ 1–9"), .text("≈ ∅ (≈ 300)")])
        var sampledNull = sampled
        sampledNull.min = .null
        _ = s.reduce(.summaryRow(index: 0, figures: sampledNull, result: 1))
        #expect(s.snapshot(0)?.values[5] == .null, "a NULL figure is ∅, not ≈ NULL")
        _ = s.reduce(.summaryRow(index: 0, figures: sampled, result: 1))
        _ = s.reduce(.summaryProgress(index: 0, of: 2, column: "a", seconds: 1.25))
        #expect(s.message == "summarising a, column 1 of 2: 1.3 s; ≈ figures are of an even sample of 10 rows until then (Esc cancels)")
        _ = s.reduce(.summaryRow(index: 1, figures: sampled, result: 1))
        #expect(s.summarySheet?.rows[1] == figures, "a sample never replaces exact figures")
        _ = s.reduce(.summaryRow(index: 0, figures: figures, result: 99))
        #expect(s.snapshot(0)?.values[3] == .text("≈ 300"), "figures of another result are not shown")
        _ = s.reduce(.summaryRow(index: 0, figures: figures, result: 1))
        #expect(s.snapshot(0)?.values[3] == .text("3"), "exact figures replace the sample's")
        _ = s.reduce(.summaryRow(index: 0, figures: sampled, result: 1))
        _ = s.reduce(.summaryRow(index: 0, figures: sampled, result: 99))
        #expect(s.snapshot(0)?.values[3] == .text("3"))
        _ = s.reduce(.summaryEnded(done: 1, of: 2, seconds: 0.5, cancelled: true))
        #expect(s.running == nil && s.message == "summary cancelled after 1 of 2 columns: Esc goes back")
        #expect(statusLine(s).hasPrefix(" db.sqlite › t › summary │ column 2 of 2 │ filter: a > 1"), "\(statusLine(s))")
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

    /// A frequency sheet of b over the table (result 1): 3 values, result 2, rows loaded with
    /// their counts 50, 30 and 20.
    func frequencySheet() -> BrowserState {
        var s = table()
        _ = s.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        _ = s.reduce(.windowLoaded(start: 0, rows: [50, 30, 20].enumerated().map { i, n in
            RowSnapshot(id: nil, values: [.text("v\(i)"), .text("\(n)"), .text(""), .text("")], exists: true, count: n)
        }))
        return s
    }

    @Test("v marks values with the rows each stands for (the status line adds them up), V every value; D and U act on them, or on the cursor's value")
    func markingValues() {
        var s = frequencySheet()
        _ = s.reduce(.key(.char("v")))
        _ = s.reduce(.key(.char("j")))
        _ = s.reduce(.key(.char("v")))
        #expect(s.isMarked(0) && !s.isMarked(1) && s.isMarked(2))
        #expect(statusLine(s).contains("│ 2 values marked, 70 rows │"), "\(statusLine(s))")
        let target = EditTarget(result: 1, table: "t", marked: nil, values: ValueTarget(sheet: 2, column: "b", positions: [0, 2], valueCount: 2, binWidth: nil))
        #expect(s.editTarget == target)
        #expect(work(s.reduce(.key(.char("D")))) == [.countDelete(target)])
        _ = s.reduce(.countedForDelete(70, target: target))
        #expect(s.mode == .confirm(.delete(rows: 70, target: target)))
        #expect(render(s, colors: false).lines[s.height - 1].hasPrefix("Delete 70 rows (2 values of b) from t? y/n"))
        #expect(work(s.reduce(.key(.char("y")))) == [.runDelete(target)])
        // v again unmarks; with no marks the cursor's value is the target.
        _ = s.reduce(.key(.char("g")))
        _ = s.reduce(.key(.char("v")))
        _ = s.reduce(.key(.char("G")))
        _ = s.reduce(.key(.char("v")))
        #expect(s.marks == nil && !statusLine(s).contains("marked"))
        #expect(s.editTarget?.values?.positions == [2])
        _ = s.reduce(.key(.char("V")))
        #expect(statusLine(s).contains("│ all 3 values marked, 100 rows │"), "\(statusLine(s))")
        #expect(s.editTarget?.values == ValueTarget(sheet: 2, column: "b", positions: nil, valueCount: 3, binWidth: nil))
        _ = s.reduce(.key(.char("U")))
        #expect(s.mode == .prompt(.assignments, text: ""))
        // A count for another sheet (an older one) asks nothing.
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.countedForDelete(70, target: target))
        #expect(s.mode == .grid)
        // Marks belong to the sheet's counts: counted again, they go.
        _ = s.reduce(.frequencyRecounted(values: 2, total: 30, result: 3, cursor: 1, message: "counted again"))
        #expect(s.marks == nil || !s.allMarked)
        #expect(s.count == 2 && s.cursorRow == 1 && s.frequencySheet?.total == 30)
        #expect(s.message == "counted again; every value's mark cleared: v marks the values anew", "said, not dropped silently: \(s.message ?? "")")
    }

    @Test("read-only: D and U on a frequency sheet say why and do nothing")
    func readOnly() {
        var s = BrowserState(width: 100, height: 10, databaseName: "db.sqlite")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: "the file is read-only", message: nil, result: 1))
        _ = s.reduce(.frequencyOpened(column: "a", values: 3, total: 100, result: 2, seconds: 0))
        for key in ["D", "U", "u"] {
            #expect(work(s.reduce(.key(.char(Character(key))))) == [], "\(key)")
            #expect(s.messageIsError && s.message?.contains("read-only") == true, "\(key)")
        }
    }

    @Test("an edit leaves every sheet below out of date: coming back to a frequency sheet counts it again, to a table reads it again, each once")
    func staleSheets() throws {
        var s = frequencySheet()
        _ = s.reduce(.key(.enter))
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "(a > 1) AND b == 7", sort: nil, count: 9, cursor: 0, readOnly: nil, message: nil, result: 3, pushed: true))
        _ = s.reduce(.edited(count: 8, cursor: 0, message: "deleted 1 row from t"))
        #expect(!s.stale)
        #expect(work(s.reduce(.key(.escape))) == [.closeSheet(.table), .recount(.frequency)])
        #expect(s.stale && s.frequencySheet != nil, "out of date until counted again")
        _ = s.reduce(.started(.counting))
        _ = s.reduce(.parentRefreshed(count: 99, cursor: 3, marks: nil, edited: false))
        _ = s.reduce(.frequencyRecounted(values: 3, total: 99, result: 4, cursor: 0, message: "b counted again"))
        #expect(!s.stale && s.running == nil && s.frequencySheet?.total == 99)
        #expect(work(s.reduce(.key(.escape))) == [.closeSheet(.frequency)], "the table was fetched again with the count")
        #expect(s.count == 99 && s.cursorRow == 3)

        // A cancelled count leaves the sheet out of date, and says so; r counts again.
        var t = frequencySheet()
        _ = t.reduce(.key(.enter))
        _ = t.reduce(.opened(table: "t", columns: ["a", "b"], filter: "b == 7", sort: nil, count: 9, cursor: 0, readOnly: nil, message: nil, result: 3, pushed: true))
        _ = t.reduce(.edited(count: 8, cursor: 0, message: "deleted 1 row from t"))
        _ = t.reduce(.key(.escape))
        // A value marked on the old counts (as if marked before the recount began).
        _ = t.reduce(.windowLoaded(start: 0, rows: [50, 30, 20].enumerated().map { i, n in
            RowSnapshot(id: nil, values: [.text("v\(i)"), .text("\(n)"), .text(""), .text("")], exists: true, count: n)
        }))
        _ = t.reduce(.key(.char("v")))
        #expect(t.currentMarks != nil)
        _ = t.reduce(.started(.counting))
        _ = t.reduce(.parentRefreshed(count: 99, cursor: 3, marks: nil, edited: false))
        _ = t.reduce(.recountCancelled("counting b again was cancelled"))
        #expect(t.stale && t.running == nil && t.currentMarks == nil, "marks made on the old counts go")
        #expect(statusLine(t).contains("out of date: r counts again"), "\(statusLine(t))")
        #expect(work(t.reduce(.key(.char("r")))) == [.recount(.frequency)])
        // A reload is no edit: nothing below goes out of date.
        var u = table()
        _ = u.reduce(.key(.char("I")))
        _ = u.reduce(.key(.escape))
        _ = u.reduce(.edited(count: 100, cursor: 4, message: "reloaded", fileEdited: false))
        _ = u.reduce(.key(.char("F")))
        _ = u.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        #expect(work(u.reduce(.key(.escape))) == [.closeSheet(.frequency)])
        // After an edit, a table sheet under a summary is read again on return.
        var v = table()
        _ = v.reduce(.frequencyOpened(column: "b", values: 3, total: 100, result: 2, seconds: 0))
        _ = v.reduce(.key(.enter))
        _ = v.reduce(.opened(table: "t", columns: ["a", "b"], filter: "b == 7", sort: nil, count: 9, cursor: 0, readOnly: nil, message: nil, result: 3, pushed: true))
        _ = v.reduce(.key(.char("I")))
        _ = v.reduce(.key(.escape))
        _ = v.reduce(.edited(count: 8, cursor: 0, message: "undo: restored 1 deleted row of t"))
        _ = v.reduce(.key(.escape))
        _ = v.reduce(.parentRefreshed(count: 100, cursor: 4, marks: nil, edited: false))
        _ = v.reduce(.frequencyRecounted(values: 3, total: 100, result: 4, cursor: 0, message: "b counted again"))
        #expect(work(v.reduce(.key(.escape))) == [.closeSheet(.frequency)])
        // A table sheet read again on return is a reload as r runs it: a working line, Esc keeps it as it was.
        var w = table()
        _ = w.reduce(.opened(table: "u", columns: ["id"], filter: "id == 7", sort: nil, count: 1, cursor: 0, readOnly: nil, message: nil, result: 3, pushed: true))
        _ = w.reduce(.edited(count: 0, cursor: 0, message: "deleted 1 row from u"))
        #expect(work(w.reduce(.key(.escape))) == [.closeSheet(.table), .reload])
        #expect(w.editing == .reloading(table: "t") && w.message == "back from u to t: reading it again after the edit… (Esc keeps it as it was)")
        _ = w.reduce(.started(.editing))
        #expect(w.reduce(.key(.escape)) == [.cancel])
        _ = w.reduce(.editCancelled)
        #expect(w.message == "reload cancelled: still showing the result as it was" && w.editing == nil && w.running == nil)
    }

    @Test("r on a summary sheet empties its figures and summarises again; on a table it reloads as before")
    func recountSummary() {
        var s = table()
        _ = s.reduce(.key(.char("I")))
        _ = s.reduce(.summaryRow(index: 0, figures: ColumnSummary(attribute: "a", declaredType: "INTEGER", rows: 100, storageClasses: ["integer"], nulls: 0, distinct: 100, min: nil, max: nil, mean: nil, shortest: nil, longest: nil, mostFrequent: nil), result: 1))
        #expect(s.snapshot(0)?.values[1] == .text("INTEGER"))
        #expect(work(s.reduce(.key(.char("r")))) == [.recount(.summary)])
        #expect(s.snapshot(0)?.values[1] == .text("…"))
        _ = s.reduce(.key(.escape))
        #expect(work(s.reduce(.key(.char("r")))) == [.reload])
    }
}
