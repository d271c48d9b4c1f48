import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// Deterministic random key runs: the browser never crashes and keeps its invariants. `make fuzz`
/// runs longer with FAULTLINE_FUZZ_KEYS.
@Suite("Random keys")
struct RandomKeyTests {
    static let alphabet: [Key] = [
        .char("j"), .char("k"), .char("h"), .char("l"), .down, .up, .left, .right, .pageDown, .pageUp,
        .char(" "), .char("b"), .ctrl("d"), .ctrl("u"), .char("g"), .char("G"), .home, .end,
        .char(":"), .char("/"), .char("n"), .char("N"), .char("f"), .char("s"), .char("S"), .enter, .escape,
        .char("r"), .char("v"), .char("V"), .char("D"), .char("U"), .char("u"), .char("y"), .char("m"),
        .char("?"), .backspace, .char("1"), .char("5"), .char("0"), .char("="), .char(">"), .char("<"),
        .char("\""), .char("a"), .char("e"), .char("x"), .char("\u{1B}"), .char("東"), .resize, .char("F"), .char("I"),
        // Columns, the record and the SQL.
        .char("-"), .char("+"), .char("_"), .char("!"), .char("H"), .char("L"), .char("c"), .tab, .char("Q"), .enter,
    ]

    @Test("a long random key run keeps the cursor, window and screen consistent, and the file sound")
    func randomRun() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 3000)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 80, height: 16)
        let browser = try Browser(store: store, options: BrowserOptions(batchSize: 50), backend: term)
        browser.start()
        var rng = SplitMix64(seed: 42)
        let steps = Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_KEYS"] ?? "") ?? 4000
        let sizes = [(40, 10), (80, 16), (120, 30), (300, 100), (55, 12), (1, 1), (12, 3), (20, 5)]   // below 40x10 it must still not crash
        var edits = 0
        var frequencySheets = 0
        var summaries = 0
        var textSheets = 0
        var arranged = 0
        for step in 0..<steps {
            var key = Self.alphabet[rng.below(Self.alphabet.count)]
            if key == .resize {
                let (w, h) = sizes[rng.below(sizes.count)]
                term.resize(width: w, height: h)
            }
            if key == .char("q") { key = .char("j") }
            browser.send(key)
            // Edits need a whole sentence of keys: give them a fair chance.
            if key == .char("D"), rng.below(3) == 0 { browser.send(.char("y")) }
            if key == .char("U"), rng.below(2) == 0 { browser.send(keys("v = v + 1") + [.enter, .char("y")]) }
            if key == .char("f"), rng.below(2) == 0 { browser.send([.ctrl("u")] + keys("v % 7 != \(rng.below(7))") + [.enter]) }
            if let m = browser.state.message, m.hasPrefix("deleted") || m.hasPrefix("updated") || m.hasPrefix("undo") { edits += 1 }
            let s = browser.state
            #expect(!s.quit)
            #expect(s.count == 0 || (0..<s.count).contains(s.cursorRow), "step \(step): cursor \(s.cursorRow) of \(s.count)")
            #expect(s.count == 0 || s.visibleRows.contains(s.cursorRow) || s.mode != .grid, "step \(step): cursor off screen")
            #expect(s.topRow >= 0 && s.cursorColumn >= 0 && s.cursorColumn < max(1, s.columns.count))
            #expect(term.screen.width == s.width && term.screen.height == s.height)
            // The arrangement: every column once in its order, the cursor on a shown one, at least one shown.
            let view = s.columnView
            #expect(view.order.sorted() == Array(0..<s.columns.count), "step \(step): order \(view.order) of \(s.columns.count)")
            #expect(s.columns.isEmpty || (!view.shown.isEmpty && s.cursorColumn < view.shown.count && view.frozen <= view.shown.count), "step \(step)")
            #expect(s.leftColumn >= view.frozen || view.shown.isEmpty, "step \(step): left \(s.leftColumn), frozen \(view.frozen)")
            if !view.hidden.isEmpty || view.frozen > 0 || !view.widths.isEmpty || view.order != view.order.sorted() { arranged += 1 }
            if let text = s.textSheet {
                textSheets += 1
                #expect(text.scroll >= 0 && text.scroll <= max(0, text.lineCount - 1), "step \(step)")
            }
            if let f = s.frequencySheet { frequencySheets += 1; #expect(s.columns == [f.column, "count", "percent", "histogram"]) }
            if let summary = s.summarySheet {
                summaries += 1
                #expect(s.count == summary.columns.count && summary.rows.allSatisfy { $0 != nil } || s.message?.contains("cancelled") == true)
            }
            if step % 97 == 0 {
                for y in 0..<term.screen.height {
                    for x in 0..<term.screen.width {
                        #expect(!term.screen[x, y].text.unicodeScalars.contains(where: TerminalText.needsEscape))
                    }
                }
            }
            if step % 500 == 499 {
                // What the browser says the result holds is what SQLite holds.
                let filter = s.filter.isEmpty ? nil : try FetchPredicate(format: s.filter)
                let context = try ManagedObjectContext(store: store)
                if s.mode == .grid, s.loading == nil, s.sheet == .table {
                    #expect(try context.count(for: FetchRequest(entityName: "n", predicate: filter)) == s.count, "step \(step)")
                }
            }
        }
        #expect(try direct(path) { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        #expect(edits > 10, "the run should edit: \(edits)")
        #expect(frequencySheets > 10, "the run should visit frequency sheets: \(frequencySheets)")
        #expect(summaries > 10, "the run should visit summary sheets: \(summaries)")
        #expect(textSheets > 10, "the run should visit records and the SQL: \(textSheets)")
        #expect(arranged > 100, "the run should arrange columns: \(arranged)")
    }
}
