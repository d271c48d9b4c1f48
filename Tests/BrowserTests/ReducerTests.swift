import BatchStore
import Browser
import Testing
import TerminalCore

/// The reducer alone: state in, effects out, no SQLite.
@Suite("Reducer")
struct ReducerTests {
    /// A state as if `count` rows of two columns were open, with the visible window loaded.
    func opened(count: Int, width: Int = 60, height: Int = 10) -> BrowserState {
        var s = BrowserState(width: width, height: height)
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: count, cursor: 0, readOnly: nil, message: nil))
        load(&s)
        return s
    }

    func load(_ s: inout BrowserState) {
        let rows = s.visibleRows.map { RowSnapshot(id: nil, values: [.text("\($0)"), .null], exists: true) }
        _ = s.reduce(.windowLoaded(start: s.visibleRows.lowerBound, rows: rows))
    }

    @Test("opening asks for the visible window, and only when it is not loaded")
    func windowEffects() {
        var s = BrowserState(width: 60, height: 10)
        let effects = s.reduce(.opened(table: "t", columns: ["a"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil))
        #expect(effects == [.loadWindow(0..<7)])
        load(&s)
        #expect(s.reduce(.key(.char("j"))) == [])              // still inside the window
        #expect(s.reduce(.key(.pageDown)) == [.loadWindow(7..<14)])
    }

    @Test("q while loading quits even when the load finishes before it could be cancelled; Esc does not")
    func quitWhileLoadingRace() {
        var s = BrowserState(width: 60, height: 10)
        _ = s.reduce(.started(.opening))
        #expect(s.reduce(.key(.char("q"))) == [.cancel])
        _ = s.reduce(.opened(table: "t", columns: ["a"], filter: "", sort: nil, count: 5, cursor: 0, readOnly: nil, message: nil))
        #expect(s.quit, "the user asked to quit")
        var t = BrowserState(width: 60, height: 10)
        _ = t.reduce(.started(.opening))
        #expect(t.reduce(.key(.escape)) == [.cancel])
        _ = t.reduce(.opened(table: "t", columns: ["a"], filter: "", sort: nil, count: 5, cursor: 0, readOnly: nil, message: nil))
        #expect(!t.quit && t.count == 5, "Esc too late: the result shows")
    }

    @Test("the cursor never leaves the result or the screen")
    func cursorBounds() {
        var s = opened(count: 20)
        _ = s.reduce(.key(.char("k")))
        #expect(s.cursorRow == 0)
        _ = s.reduce(.key(.char("G")))
        #expect(s.cursorRow == 19 && s.topRow == 13)
        _ = s.reduce(.key(.char("j")))
        #expect(s.cursorRow == 19)
        _ = s.reduce(.key(.pageUp))
        #expect(s.cursorRow == 12 && s.visibleRows.contains(12))
        _ = s.reduce(.resized(width: 40, height: 5))
        #expect(s.visibleRows.contains(s.cursorRow))
        var empty = opened(count: 0)
        _ = empty.reduce(.key(.char("G")))
        #expect(empty.cursorRow == 0)
        #expect(empty.reduce(.key(.char("D"))) == [])
        #expect(empty.message == "nothing to delete")
    }

    @Test("prompts edit their text; Enter sends the effect; Esc sends nothing")
    func prompts() {
        var s = opened(count: 50)
        for k in [Key.char("f"), .char("a"), .char(" "), .char(">"), .char("x"), .backspace, .char("3")] { _ = s.reduce(.key(k)) }
        #expect(s.mode == .prompt(.filter, text: "a >3"))
        #expect(s.reduce(.key(.enter)) == [.open(table: "t", filter: "a >3", sort: nil), .saveHistory(kind: .filter, text: "a >3")])
        _ = s.reduce(.key(.char("/")))
        _ = s.reduce(.key(.char("q")))
        #expect(s.reduce(.key(.escape)) == [] && s.mode == .grid && !s.quit)
        for k in [Key.char(":"), .char("4"), .char("2"), .enter] { _ = s.reduce(.key(k)) }
        #expect(s.cursorRow == 41)
        // A long search's line: the time so far, and the rows looked at where SQLite counts them.
        _ = s.reduce(.searchProgress(text: "x\u{1B}", rows: 0, seconds: 2.25))
        #expect(s.message == "searching for x\\e: 2.3 s (Esc cancels the search)", "\(s.message ?? "")")
        _ = s.reduce(.searchProgress(text: "x", rows: 12_345, seconds: 3))
        #expect(s.message == "searching for x: 3.0 s, 12,345 rows looked at (Esc cancels the search)")
        // Past the end: on the last row, and said.
        for k in [Key.char(":"), .char("9"), .char("9"), .char("9"), .char("9"), .enter] { _ = s.reduce(.key(k)) }
        #expect(s.cursorRow == s.count - 1 && s.message == "row 9,999 is past the end: on the last, row \(group(s.count))", "\(s.message ?? "")")
        for k in [Key.char(":"), .char("4"), .char("2"), .enter] { _ = s.reduce(.key(k)) }
        #expect(s.cursorRow == 41 && s.message == nil)
        for k in [Key.char(":"), .char("x"), .enter] { _ = s.reduce(.key(k)) }
        #expect(s.messageIsError && s.cursorRow == 41)
        #expect(s.mode == .prompt(.goToRow, text: "x"), "the mistyped line comes back to fix")
    }

    @Test("D asks for a count of exactly its target, then confirms that target; anything but y cancels")
    func confirmation() {
        var s = opened(count: 50)
        let target = EditTarget(result: 0, table: "t", marked: nil)
        #expect(s.reduce(.key(.char("D"))) == [.countDelete(target)])
        _ = s.reduce(.countedForDelete(50, target: target))
        #expect(s.mode == .confirm(.delete(rows: 50, target: target)))
        #expect(s.reduce(.key(.char("n"))) == [] && s.message == "cancelled: nothing was changed")
        _ = s.reduce(.key(.char("D")))
        _ = s.reduce(.countedForDelete(50, target: target))
        #expect(s.reduce(.key(.char("y"))) == [.runDelete(target)])
        _ = s.reduce(.edited(count: 0, cursor: 10, message: "deleted 50 rows"))
        #expect(s.count == 0 && s.cursorRow == 0 && s.message == "deleted 50 rows")
    }

    @Test("a count for another result than the one on screen asks nothing")
    func staleCount() {
        var s = opened(count: 50)
        _ = s.reduce(.opened(table: "u", columns: ["a"], filter: "", sort: nil, count: 5, cursor: 0, readOnly: nil, message: nil, result: 1))
        _ = s.reduce(.countedForDelete(50, target: EditTarget(result: 0, table: "t", marked: nil)))
        #expect(s.mode == .grid)
        #expect(s.editTarget == EditTarget(result: 1, table: "u", marked: nil))
    }

    @Test("Esc to the table list keeps each table's filter, sort and row; Enter opens it that way again")
    func tableMemory() {
        var s = BrowserState(width: 60, height: 10)
        _ = s.reduce(.tablesListed([TableEntry(name: "t", isView: false, count: 100), TableEntry(name: "u", isView: false, count: 3)]))
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "a > 3", sort: (column: "b", ascending: false), count: 90, cursor: 0, readOnly: nil, message: nil, result: 1))
        load(&s)
        for _ in 0..<12 { _ = s.reduce(.key(.char("j"))) }
        #expect(s.reduce(.key(.escape)) == [.listTables])
        _ = s.reduce(.tablesListed([TableEntry(name: "t", isView: false, count: 100), TableEntry(name: "u", isView: false, count: 3)]))
        #expect(s.mode == .picker)
        _ = s.reduce(.key(.char("j")))
        #expect(s.reduce(.key(.enter)) == [.open(table: "u", filter: "", sort: nil, cursor: 0)])
        _ = s.reduce(.opened(table: "u", columns: ["a"], filter: "", sort: nil, count: 3, cursor: 0, readOnly: nil, message: nil, result: 2))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.key(.char("k")))
        #expect(s.reduce(.key(.enter)) == [.open(table: "t", filter: "a > 3", sort: .init(column: "b", ascending: false), cursor: 12)])
    }

    @Test("read-only: edit keys produce no effect and say why")
    func readOnly() {
        var s = BrowserState(width: 60, height: 10)
        _ = s.reduce(.opened(table: "v", columns: ["a"], filter: "", sort: nil, count: 5, cursor: 0, readOnly: "v is a view or has no row key", message: nil))
        load(&s)
        for k in ["D", "U", "u"] {
            #expect(s.reduce(.key(.char(Character(k)))) == [])
            #expect(s.message == "\(k) does nothing: v is a view or has no row key")
        }
    }

    @Test("s and S sort by the current column; h and l stay within the columns")
    func sortKeys() {
        var s = opened(count: 5)
        _ = s.reduce(.key(.char("l")))
        _ = s.reduce(.key(.char("l")))
        #expect(s.cursorColumn == 1)
        #expect(s.reduce(.key(.char("S"))) == [.open(table: "t", filter: "", sort: .init(column: "b", ascending: false))])
        _ = s.reduce(.key(.char("h")))
        _ = s.reduce(.key(.char("h")))
        #expect(s.cursorColumn == 0)
    }

    @Test("render is pure: the same state draws the same screen")
    func pureRender() {
        let s = opened(count: 1000)
        #expect(render(s) == render(s))
        #expect(render(s).lines[1].hasPrefix("    1  0 ∅"))
    }
}
