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
}
