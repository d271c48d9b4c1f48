import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// Bugs found while moving the open path into effects, each pinned.
@Suite("Loading a result")
struct LoadingTests {
    @Test("a second load starts its progress line from 0 rows, not from where the first one ended")
    func progressStartsAtZero() {
        var s = BrowserState(width: 80, height: 10)
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a"], rows: []))
        _ = s.reduce(.loadProgress(fraction: 0.5, rows: 500_000))
        _ = s.reduce(.opened(table: "t", columns: ["a"], filter: "", sort: nil, count: 1_000_000, cursor: 0, readOnly: nil, message: nil, result: 1))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a"], rows: []))
        #expect(render(s).lines[8].hasPrefix(" t │ loading IDs 0%, 0 rows so far (Esc cancels)"), "\(render(s).lines[8])")
    }

    @Test("a resize while the IDs load, then Esc: the screen keeps the new size")
    func resizeThenCancel() throws {
        let dir = TempDir()
        let path = try makeMillionRows(dir)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 80, height: 12)
        let b = try Browser(store: store, options: BrowserOptions(table: "n", sort: "name desc"), backend: term)
        term.resize(width: 100, height: 14)   // read while the IDs load, as is the Esc after it
        term.keys.append(.escape)
        b.start()
        #expect(b.state.message == "loading cancelled: r loads it again")
        #expect(b.state.width == 100 && b.state.height == 14)
        #expect(term.screen.width == 100 && term.text[12].hasPrefix(" n │ not loaded"), "\(term.text)")
        // Not "(no rows)": the table has a million; it was not read.
        #expect(term.text[1].contains("(not loaded: Esc stopped it; r loads it)"), "\(term.text)")
    }

    @Test("Esc stops a filter whose first rows take long to find (the first batch's LIMIT query), as it stops the ID fetch", .timeLimit(.minutes(1)))
    func escStopsTheFirstRows() throws {
        let dir = TempDir()
        // 40,000 rows: each row's test scans the table again and no row passes, so the first
        // batch takes 1.6G row reads (minutes). The Esc stops it at once; the bound below is only
        // far from both (a liveness check, not a speed target).
        let path = try makeNumbers(dir, count: 40_000)
        let term = MemoryTerminal(width: 80, height: 12)
        let filter = "WHERE name = (SELECT max(name) FROM n AS m2 WHERE m2.v = t.v + 1)"
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "n", filter: filter), backend: term)
        term.keys.append(.escape)   // read while the first rows are looked for
        let started = Date()
        b.start()
        #expect(b.state.message == "loading cancelled: r loads it again", "\(b.state.message ?? "")")
        #expect(Date().timeIntervalSince(started) < 30, "the Esc waited for the first rows")
    }

    @Test("keys typed while work runs are kept in order and act once it ends, the status line counting them; Esc still cancels at once, and a question opening throws the waiting keys away")
    func keysWaitDuringWork() {
        var s = BrowserState(width: 80, height: 10)
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil, result: 1))
        _ = s.reduce(.started(.opening))
        for key in [Key.char("G"), .char("k"), .char("l"), .char("-")] { #expect(s.reduce(.key(key)) == []) }
        #expect(s.queuedKeys == [.char("G"), .char("k"), .char("l"), .char("-")])
        #expect(render(s).lines[8].contains("4 keys wait"), "\(render(s).lines[8])")
        #expect(s.takeQueuedKey() == nil, "nothing acts while the work runs")
        #expect(s.reduce(.key(.escape)) == [.cancel], "Esc cancels at once, ahead of the waiting keys")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil, result: 2))
        #expect(s.takeQueuedKey() == .char("G"))
        #expect(s.dropQueuedKeys() == 3 && s.queuedKeys.isEmpty)
    }

    @Test("while a result's IDs load, keys that move over its first rows or arrange columns act at once; a key that would land on the last row known (G) waits, and the keys after it wait behind it; a key that does nothing yet (v) waits; the load's end keeps the cursor where the keys put it")
    func keysActOverTheFirstRows() {
        var s = BrowserState(width: 80, height: 10)
        let first = (0..<50).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("x")], exists: true) }
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        for _ in 0..<5 { #expect(s.reduce(.key(.char("j"))) == []) }
        #expect(s.cursorRow == 5 && s.queuedKeys.isEmpty, "moved at once over the rows on screen")
        _ = s.reduce(.key(.char("l")))
        _ = s.reduce(.key(.char("-")))
        #expect(s.columnView.hidden == [1] && s.queuedKeys.isEmpty, "column keys act at once")
        _ = s.reduce(.key(.char("v")))
        #expect(s.queuedKeys == [.char("v")], "no result to mark yet: it waits")
        _ = s.reduce(.key(.char("k")))
        #expect(s.cursorRow == 5 && s.queuedKeys == [.char("v"), .char("k")], "behind a waiting key, keys wait: they act in the order typed")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 1_000, cursor: 0, readOnly: nil, message: nil, result: 1))
        #expect(s.cursorRow == 5, "the end of the load keeps the cursor where the keys put it")
        #expect(s.takeQueuedKey() == .char("v"))

        // G during the load: the count is not known, so it waits, and so does what follows.
        var g = BrowserState(width: 80, height: 10)
        _ = g.reduce(.started(.opening))
        _ = g.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        _ = g.reduce(.key(.char("G")))
        _ = g.reduce(.key(.char("k")))
        #expect(g.cursorRow == 0 && g.queuedKeys == [.char("G"), .char("k")])
        _ = g.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 1_000, cursor: 0, readOnly: nil, message: nil, result: 1))
        #expect(g.cursorRow == 0, "nothing moved during the load: the open's own cursor")
        // Before the first rows show (a sort of the result on screen starting), keys wait: they are
        // meant for the new order.
        _ = g.reduce(.started(.opening))
        _ = g.reduce(.key(.char("j")))
        #expect(g.cursorRow == 0 && g.queuedKeys.last == .char("j"))
    }

    @Test("G while the IDs load asks for the last rows of the order at once (a reversed LIMIT on another connection) and waits itself; the grid shows them at its bottom, the cursor on the last, no row number or mark; the fetch's end puts the cursor on the last row exactly; a late answer is dropped")
    func gShowsTheLastRowsDuringTheLoad() {
        var s = BrowserState(width: 60, height: 10)
        let first = (0..<50).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("x")], exists: true) }
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.loadingRequest(table: "t", filter: "a > 1", sorts: [SortDescriptor(column: "b", ascending: false)]))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        let effects = s.reduce(.key(.char("G")))
        #expect(effects == [.peekLast(table: "t", filter: "a > 1", sorts: [SortDescriptor(column: "b", ascending: false)], count: s.gridHeight)], "\(effects)")
        #expect(s.queuedKeys == [.char("G")], "G itself waits for the count")
        #expect(s.reduce(.key(.char("G"))) == [], "asked once")
        let last = (0..<s.gridHeight).map { RowSnapshot(id: nil, values: [.text("last \($0)"), .text("y")], exists: true) }
        _ = s.reduce(.tailRows(last))
        let screen = render(s).lines
        let grid = Array(screen[1...s.gridHeight])
        #expect(grid.last?.contains("last \(s.gridHeight - 1)") == true && grid.last?.hasPrefix("  …") == true, "\(screen)")
        #expect(grid.first?.contains("last 0") == true, "\(screen)")
        #expect(screen.contains { $0.contains("last rows (row numbers once the IDs are in)") }, "\(screen)")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "a > 1", sort: nil, count: 1_000, cursor: 0, readOnly: nil, message: nil, result: 1))
        #expect(s.tailRows == nil)
        let g = s.takeQueuedKey()
        #expect(g == .char("G"))
        _ = s.reduce(.key(.char("G")))
        #expect(s.cursorRow == 999)
        // An answer that comes after the fetch ended is not shown.
        _ = s.reduce(.tailRows(last))
        #expect(s.tailRows == nil)

        // Keys typed before the first rows showed: j j act over them when they come, G asks for
        // the last rows, and what follows G waits behind it.
        var early = BrowserState(width: 60, height: 10)
        _ = early.reduce(.started(.opening))
        _ = early.reduce(.loadingRequest(table: "t", filter: "", sorts: []))
        for key in [Key.char("j"), .char("j"), .char("G"), .char("k")] { _ = early.reduce(.key(key)) }
        #expect(early.queuedKeys.count == 4 && early.cursorRow == 0)
        let asked = early.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        #expect(asked == [.peekLast(table: "t", filter: "", sorts: [], count: early.gridHeight)], "\(asked)")
        #expect(early.cursorRow == 2 && early.queuedKeys == [.char("G"), .char("k")])
    }

    @Test("on a million rows sorted by a column without an index, keys typed as the first rows show are all kept: G, k, k, l, - leave the cursor on the third row from the end with the column hidden")
    func keysTypedDuringTheIDFetch() throws {
        let dir = TempDir()
        let path = try makeMillionRows(dir)
        let term = MemoryTerminal(width: 80, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "n", sort: "name desc"), backend: term)
        term.keys = [.char("G"), .char("k"), .char("k"), .char("l"), .char("-")]
        b.start()
        // The keys the load did not read (a fast machine) come after it, as a user's would.
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        #expect(b.state.count == 1_000_000 && b.state.queuedKeys.isEmpty)
        #expect(b.state.cursorRow == 999_997, "\(b.state.cursorRow)")
        #expect(b.state.columnView.hidden == [1], "\(b.state.columnView.hidden)")
        // G typed as the first rows of a sort show: the last rows are read on another connection
        // while the IDs load (the log says so), and the cursor ends on the last row.
        var lines: [String] = []
        b.log = { lines.append($0) }
        term.keys = [.char("G")]
        b.send(.char("S"))
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        #expect(b.state.cursorRow == 999_999 && b.state.tailRows == nil, "\(b.state.cursorRow)")
        #expect(lines.contains { $0.hasPrefix("peeked the last") } || lines.contains { $0.hasPrefix("opened") }, "\(lines)")
        // j j j j j typed as the first rows of another sort show: the cursor ends on row 6.
        term.keys = [.char("j"), .char("j"), .char("j"), .char("j"), .char("j")]
        b.send([.char("h"), .char("s")])
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        #expect(b.state.sort?.column == "id" && b.state.queuedKeys.isEmpty, "\(String(describing: b.state.sort))")
        #expect(b.state.cursorRow == 5, "\(b.state.cursorRow)")
    }

    @Test("a sort typed while a load or a search runs replaces it: the work under way is cancelled and the sort it asked for runs when that work ends (from the table, filter and column the key named, whatever the cancel restores); n waits for a search (it continues it); an edit key and a write are never cancelled")
    func newWorkSupersedesTheWorkUnderWay() {
        var s = BrowserState(width: 80, height: 10)
        let first = (0..<50).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("x"), .text("y")], exists: true) }
        _ = s.reduce(.opened(table: "t", columns: ["a", "b", "c"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil, result: 1))
        // A filter's load (f a > 1 Enter): the sort typed over its first rows sorts the filtered rows.
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.loadingRequest(table: "t", filter: "a > 1", sorts: []))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a", "b", "c"], rows: first))
        _ = s.reduce(.key(.char("l")))
        _ = s.reduce(.key(.char("l")))
        #expect(s.cursorColumn == 2 && s.queuedKeys.isEmpty, "column keys act at once")
        #expect(s.reduce(.key(.char("S"))) == [.cancel], "the sort cancels the load under way")
        #expect(s.queuedKeys.isEmpty && !s.quit)
        // Keys typed after the sort are meant for the sorted result: they wait, never moving
        // over the rows of the load being cancelled.
        #expect(s.reduce(.key(.char("j"))) == [] && s.queuedKeys == [.char("j")] && s.cursorRow == 0)
        let after = s.reduce(.openCancelled(table: "t", columns: ["a", "b", "c"], filter: "a > 1", sort: nil))
        #expect(s.running == nil && !s.quit, "a cancel that a key asked for never quits")
        #expect(after.contains(.open(table: "t", filter: "a > 1", sort: SortDescriptor(column: "c", ascending: false))), "\(after)")
        #expect(s.cursorColumn == 2 && s.message == "sorting by c desc instead", "the cursor on the sorted column: \(s.cursorColumn), \(s.message ?? "")")
        #expect(s.takeQueuedKey() == .char("j"))
        // The load ended before the cancel came: the sort runs all the same.
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.loadingRequest(table: "t", filter: "", sorts: []))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a", "b", "c"], rows: first))
        #expect(s.reduce(.key(.char("s"))) == [.cancel])
        let ended = s.reduce(.opened(table: "t", columns: ["a", "b", "c"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil, result: 2))
        #expect(ended.contains(.open(table: "t", filter: "", sort: SortDescriptor(column: "c", ascending: true))), "\(ended)")
        // A search under way: n waits (it goes on from the match the search finds); s replaces it.
        _ = s.reduce(.started(.searching))
        #expect(s.reduce(.key(.char("n"))) == [] && s.queuedKeys == [.char("n")])
        _ = s.reduce(.searchFound(row: 3, text: "x", wrapped: false, column: "b"))
        #expect(s.takeQueuedKey() == .char("n"))
        _ = s.reduce(.started(.searching))
        #expect(s.reduce(.key(.char("s"))) == [.cancel])
        #expect(s.reduce(.searchCancelled).contains(.open(table: "t", filter: "", sort: SortDescriptor(column: "c", ascending: true))))
        _ = s.reduce(.started(.searching))
        #expect(s.reduce(.key(.char("D"))) == [] && s.queuedKeys == [.char("D")], "an edit key waits: it is never a reason to cancel")
        #expect(s.reduce(.key(.char("s"))) == [] && s.queuedKeys == [.char("D"), .char("s")], "behind a waiting key, a sort waits too (keys act in the order typed)")
        // Writing a file is never cancelled by a sort.
        var w = BrowserState(width: 80, height: 10)
        _ = w.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 100, cursor: 0, readOnly: nil, message: nil, result: 1))
        _ = w.reduce(.started(.writing))
        #expect(w.reduce(.key(.char("s"))) == [] && w.queuedKeys == [.char("s")])
    }

    @Test("on a million rows, s typed while a descending sort's IDs load replaces it: one result opens, sorted ascending")
    func sortTypedDuringALoadReplacesIt() throws {
        let dir = TempDir()
        let path = try makeMillionRows(dir)
        let term = MemoryTerminal(width: 80, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "n"), backend: term)
        b.start()
        b.send([.char("l"), .char("l")])
        var lines: [String] = []
        b.log = { lines.append($0) }
        term.keys = [.char("s")]
        b.send(.char("S"))
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        #expect(b.state.sort == SortDescriptor(column: "name", ascending: true), "\(String(describing: b.state.sort))")
        #expect(b.state.count == 1_000_000 && b.state.queuedKeys.isEmpty)
        // The descending load was cancelled (one open), or ended before the key was read (two).
        #expect((1...2).contains(lines.filter { $0.hasPrefix("opened") }.count), "\(lines)")
    }

    @Test("a prompt opened over a loading result's first rows takes its keys at once: :N for a row on screen lands at once, a row past them when the load ends; Esc closes the prompt and the load goes on; / and f open, and their Enter waits for the load")
    func promptsDuringTheLoad() {
        var s = BrowserState(width: 80, height: 10)
        let first = (0..<50).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("x")], exists: true) }
        _ = s.reduce(.started(.opening))
        _ = s.reduce(.loadingRequest(table: "t", filter: "", sorts: [SortDescriptor(column: "b", ascending: true)]))
        _ = s.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        for key in [Key.char(":"), .char("4")] { #expect(s.reduce(.key(key)) == []) }
        #expect(s.mode == .prompt(.goToRow, text: "4") && s.running == .opening, "the prompt opened and took the digit at once")
        _ = s.reduce(.key(.enter))
        #expect(s.cursorRow == 3 && s.mode == .grid && s.queuedKeys.isEmpty, "row 4 is on screen: the cursor is there now")
        for key in [Key.char(":"), .char("5"), .char("0"), .char("0")] { _ = s.reduce(.key(key)) }
        let asked = s.reduce(.key(.enter))
        #expect(s.queuedKeys == [.enter] && s.mode == .prompt(.goToRow, text: "500"), "row 500 is not loaded: the Enter waits")
        #expect(asked == [.peekRows(table: "t", filter: "", sorts: [SortDescriptor(column: "b", ascending: true)], offset: 499, count: s.gridHeight)], "\(asked)")
        // Its rows, read by OFFSET on the second connection, show at once, numbered from 500.
        let ahead = (0..<s.gridHeight).map { RowSnapshot(id: nil, values: [.text("ahead \($0)"), .text("z")], exists: true) }
        _ = s.reduce(.offsetRows(start: 499, rows: ahead))
        let screen = render(s).lines
        #expect(screen[1].hasPrefix("500") && screen[1].contains("ahead 0"), "\(screen)")
        #expect(screen.contains { $0.contains("row 500, read ahead") }, "\(screen)")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 1_000, cursor: 0, readOnly: nil, message: nil, result: 1))
        let enter = s.takeQueuedKey()
        #expect(enter == .enter)
        _ = s.reduce(.key(.enter))
        #expect(s.cursorRow == 499 && s.mode == .grid)
        // Esc closes a prompt opened during the load; it does not cancel the load.
        var e = BrowserState(width: 80, height: 10)
        _ = e.reduce(.started(.opening))
        _ = e.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        _ = e.reduce(.key(.char("/")))
        _ = e.reduce(.key(.char("x")))
        #expect(e.mode == .prompt(.search, text: "x"))
        #expect(e.reduce(.key(.escape)) == [] && e.mode == .grid && e.running == .opening)
        #expect(e.reduce(.key(.escape)) == [.cancel], "a second Esc, with no prompt open, cancels the load")
        // f: the filter's Enter waits for the load.
        var f = BrowserState(width: 80, height: 10)
        _ = f.reduce(.started(.opening))
        _ = f.reduce(.openingFirstRows(table: "t", columns: ["a", "b"], rows: first))
        for key in [Key.char("f"), .char("a"), .char(">"), .char("1"), .enter] { _ = f.reduce(.key(key)) }
        #expect(f.queuedKeys == [.enter] && f.mode == .prompt(.filter, text: "a>1"))
        // Esc then closes the prompt and drops its waiting Enter; the load goes on (Ctrl-C too).
        #expect(f.reduce(.key(.escape)) == [] && f.queuedKeys.isEmpty && f.mode == .grid && f.running == .opening)
        for key in [Key.char(":"), .char("7")] { _ = f.reduce(.key(key)) }
        #expect(f.reduce(.key(.ctrl("c"))) == [] && f.mode == .grid && f.running == .opening && !f.quit)
    }

    @Test("on a million rows sorted by a column without an index, :500000 Enter typed as the first rows show lands on row 500,000 (its rows read ahead by OFFSET on the second connection when the load is still running)")
    func goToRowTypedDuringTheLoad() throws {
        let dir = TempDir()
        let path = try makeMillionRows(dir)
        let term = MemoryTerminal(width: 80, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "n", sort: "name desc"), backend: term)
        term.keys = keys(":500000") + [.enter]
        b.start()
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        #expect(b.state.count == 1_000_000 && b.state.queuedKeys.isEmpty && b.state.mode == .grid)
        #expect(b.state.cursorRow == 499_999, "\(b.state.cursorRow)")
        #expect(b.state.tailRows == nil)
        // The row under the cursor is the 500,000th of the order.
        let expected = try direct(path) { try String.fetchOne($0, sql: "SELECT name FROM n ORDER BY name DESC, id DESC LIMIT 1 OFFSET 499999") }
        #expect(b.state.snapshot(499_999)?.values.contains(.text(expected ?? "?")) == true)
    }

    @Test("keys already typed act one after another and the frame is drawn once after them: a 2,000-character paste into the filter prompt is a handful of frames, not one per character; the filter is the whole paste")
    func burstsDrawOnce() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 50)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "n"))
        let before = term.framesPresented
        let filter = "id > 0" + String(repeating: " AND v > 0", count: 200)
        term.keys = filter.map { Key.char($0) }
        b.sendBurst(.char("f"))
        // A burst is cut into frames every 50 ms: a slow machine draws a few, never one a key.
        while !term.keys.isEmpty { b.sendBurst(term.keys.removeFirst()) }
        #expect(b.state.mode == .prompt(.filter, text: filter), "\(b.state.mode)")
        #expect(term.framesPresented - before < 40, "\(term.framesPresented - before) frames for \(filter.count + 1) keys")
        b.send(.enter)
        #expect(b.state.filter == filter && b.state.count == 50, "\(b.state.message ?? "")")
        // D then y in one burst: the question is drawn at once, and the y typed before it never answers it.
        term.keys = [.char("y"), .char("y")]
        b.sendBurst(.char("D"))
        // (Read while the count ran and kept, or still typed ahead: thrown away either way.)
        #expect(b.state.isConfirming && term.keys.isEmpty && b.state.queuedKeys.isEmpty)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 50)
    }

    @Test("a 4,000-character paste into a prompt goes in as one edit of the line, exactly as the keys one by one would; a key after it in the same burst still acts; outside a prompt the characters are keys")
    func pasteIsOneEdit() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 50)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(table: "n"))
        b.send(.char("f"))
        // Typed as separate keys: a combining accent after its letter, as a terminal sends it.
        let keys = (String(repeating: "v > 0 OR ", count: 444) + "v > 1e\u{301}").unicodeScalars.map { Key.char(Character($0)) } + [.left, .char("x"), .enter]
        var oneByOne = LineEditor()
        for key in keys.dropLast() { _ = oneByOne.apply(key) }
        term.keys = Array(keys.dropFirst().dropLast())
        b.sendBurst(keys[0])
        while !term.keys.isEmpty { b.sendBurst(term.keys.removeFirst()) }
        #expect(b.state.mode == .prompt(.filter, line: oneByOne), "the line differs from typing the keys one by one")
        #expect(oneByOne.text.count == 4_003 && oneByOne.text.hasSuffix("1xé"))
        b.send(.escape)
        // Outside a prompt, characters are keys.
        term.keys = [.char("j"), .char("j")]
        b.sendBurst(.char("j"))
        #expect(b.state.cursorRow == 3)
    }
}
