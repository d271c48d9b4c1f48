import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TestSupport
import TerminalCore

/// Deterministic random key runs: the browser never crashes and keeps its invariants. `make fuzz`
/// runs longer with FAULTLINE_FUZZ_KEYS; FAULTLINE_TRACE_KEYS prints each key with the sheet path
/// before it is sent (a crash cannot be shrunk: the trace shows the way to it).
@Suite("Random keys", .tags(.slow), .timeLimit(slowTestLimit))
struct RandomKeyTests {
    static let alphabet: [Key] = [
        .char("j"), .char("k"), .char("h"), .char("l"), .down, .up, .left, .right, .pageDown, .pageUp,
        .char(" "), .char("b"), .ctrl("d"), .ctrl("u"), .char("g"), .char("G"), .home, .end,
        .char(":"), .char("/"), .char("n"), .char("N"), .char("f"), .char("s"), .char("S"), .enter, .escape,
        .char("r"), .char("v"), .char("V"), .char("D"), .char("U"), .char("u"), .char("e"), .char("y"), .char("m"),
        .char("?"), .backspace, .char("1"), .char("5"), .char("0"), .char("="), .char(">"), .char("<"),
        .char("\""), .char("a"), .char("e"), .char("x"), .char("\u{1B}"), .char("東"), .resize, .char("F"), .char("I"),
        // Columns, the record and the SQL.
        .char("-"), .char("+"), .char("_"), .char("!"), .char("H"), .char("L"), .char("c"), .tab, .char("Q"), .enter,
        // Relationships, copy and :w.
        .char("R"), .char("Y"), .char("y"), .char("t"), .char("2"), .char("w"), .enter, .char("R"),
        // Frequency sheets: bins, and the prompts' own keys.
        .char("B"), .ctrl("w"), .ctrl("a"), .ctrl("e"), .ctrl("k"), .alt("b"), .alt("f"), .ctrl("p"), .ctrl("n"), .named("F1"),
    ]

    /// Queries `:` opens as sheets: a join whose rows name rows of m and of n, a GROUP BY
    /// (read-only), and n's rows by rowid.
    static let queries = [
        "SELECT m.id, m.n_id, n.v, n.id AS nid FROM m JOIN n ON n.id = m.n_id WHERE m.id % 3 = 1",
        "SELECT n_id, count(*) AS v FROM m GROUP BY n_id",
        "SELECT rowid, v, name FROM n WHERE v > 20000",
    ]

    @Test("a long random key run keeps the cursor, window and screen consistent, and the file sound")
    func randomRun() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 3000)
        // n is referred to twice by m (to-one from m, to-many from n): R asks which by number.
        try direct(path) { db in
            try db.execute(sql: """
                CREATE TABLE m(id INTEGER PRIMARY KEY, n_id INTEGER REFERENCES n(id) ON DELETE SET NULL, other_id INTEGER REFERENCES n(id) ON DELETE SET NULL);
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) INSERT INTO m SELECT x, x % 40 + 1, CASE WHEN x % 3 = 0 THEN NULL ELSE x END FROM c;
                """)
        }
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 80, height: 16)
        var options = BrowserOptions(batchSize: 50)
        options.copyDirectory = dir.path("copies")
        let browser = try Browser(store: store, options: options, backend: term)
        browser.start()
        var rng = SplitMix64(seed: 42)
        let steps = Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_KEYS"] ?? "") ?? 8000
        let sizes = [(40, 10), (80, 16), (120, 30), (300, 100), (55, 12), (1, 1), (12, 3), (20, 5)]   // below 40x10 it must still not crash
        var edits = 0
        var frequencySheets = 0
        var summaries = 0
        var textSheets = 0
        var arranged = 0
        var related = 0
        var copies = 0
        var writes = 0
        var cancelledSummaries: Set<Int> = []
        var escapes = SplitMix64(seed: 4242)
        var writesCancelled = 0
        // The SQL filters and queries typed: a generator of their own.
        var typed = SplitMix64(seed: 3_838)
        var querySheets = 0, sqlFilters = 0
        for step in 0..<steps {
            var key = Self.alphabet[rng.below(Self.alphabet.count)]
            if key == .resize {
                let (w, h) = sizes[rng.below(sizes.count)]
                term.resize(width: w, height: h)
            }
            if key == .char("q") { key = .char("j") }
            // Now and then an Esc read while whatever the key starts is running (a cancel).
            // (A generator of its own: the key sequence stays the same whether or not they land.)
            if escapes.below(40) == 0 { term.keys.append(.escape) }
            if ProcessInfo.processInfo.environment["FAULTLINE_TRACE_KEYS"] != nil { print("step \(step) \(key) \(browser.state.sheetPath) count \(browser.state.count) \(browser.state.message ?? "")") }
            browser.send(key)
            // Edits need a whole sentence of keys: give them a fair chance.
            if key == .char("D"), rng.below(2) == 0 { browser.send(.char("y")) }
            if key == .char("u"), browser.state.isConfirming, rng.below(2) == 0 { browser.send(.char("y")) }
            if key == .char("e"), case .prompt(.cellEdit, _) = browser.state.mode, rng.below(2) == 0 { browser.send([.ctrl("u")] + keys(rng.below(2) == 0 ? "nil" : "\(rng.below(50))") + [.enter, .char("y")]) }
            if key == .char("U"), rng.below(2) == 0 { browser.send(keys(browser.state.table == "m" ? "other_id = other_id" : "v = v + 1") + [.enter, .char("y")]) }
            if key == .char("y") || key == .char("Y"), rng.below(2) == 0 { browser.send(.char(Array("tcjs")[rng.below(4)])) }
            if key == .char("R"), browser.state.mode == .prompt(.referencing, text: "") { browser.send([.char(rng.below(3) == 0 ? "3" : rng.below(2) == 0 ? "1" : "2"), .enter]) }
            if key == .enter, rng.below(3) == 0, browser.state.table == "m", browser.state.sheetDepth == 0 { browser.send(keys("cn_id") + [.enter, .enter]) }
            if key == .char(":"), rng.below(2) == 0 {
                browser.send(keys("w\(rng.below(2) == 0 ? "!" : "") \(dir.path("out.csv"))") + [.enter])
            } else if key == .char(":"), typed.below(8) == 0 {
                browser.send(keys(Self.queries[typed.below(Self.queries.count)]) + [.enter])
            }
            // On a query's sheet, now and then T: edits act on the next table its rows name.
            if browser.state.table?.hasPrefix("query") == true, typed.below(10) == 0 { browser.send(.char("T")) }
            if key == .char("f"), rng.below(2) == 0 {
                let column = browser.state.table == "m" ? "n_id" : "v"
                let filter = typed.below(2) == 0 ? "WHERE \(column) % 7 <> \(rng.below(7))" : "\(column) % 7 != \(rng.below(7))"
                browser.send([.ctrl("u")] + keys(filter) + [.enter])
            }
            // A failed line comes back to fix (the prompt stays open): a user reads the error and
            // fixes it or leaves; leave half the time, or the run would type on in a prompt.
            if case .prompt = browser.state.mode, browser.state.messageIsError, rng.below(2) == 0 { browser.send(.escape) }
            // Edits run, and edits cancelled by an Esc read while they ran (both paths exercised).
            if let m = browser.state.message, m.hasPrefix("deleted") || m.hasPrefix("updated") || m.hasPrefix("undo") || m.hasPrefix("too late")
                || m.hasSuffix("cancelled: nothing was changed") { edits += 1 }
            let s = browser.state
            #expect(!s.quit)
            if s.mode == .grid, s.table?.hasPrefix("query") == true { querySheets += 1 }
            if s.mode == .grid, s.filter.hasPrefix("WHERE") { sqlFilters += 1 }
            if s.sheetPath.contains("m") && s.sheetPath.contains("n") && s.sheetDepth > 0 { related += 1 }
            // Copies made, and copies an Esc cancelled while they ran (whether it lands is timing).
            if let m = s.message, m.hasPrefix("copied") || m.hasPrefix("copy cancelled") { copies += 1 }
            if let m = s.message, m.hasPrefix("writing "), m.contains(" cancelled after ") { writesCancelled += 1 }
            if let m = s.message, m.hasPrefix("wrote "), m.contains(dir.path("out.csv")) {
                // What :w says it wrote is what the file holds: its header and one line per row (CRLF ends).
                writes += 1
                let said = Int(m.dropFirst(6).prefix { $0 != " " }.filter(\.isNumber)) ?? -1
                let lines = (try? String(contentsOfFile: dir.path("out.csv"), encoding: .utf8))?.components(separatedBy: "\r\n").count ?? 0
                #expect(lines == said + 2, "step \(step): \(m), \(lines) lines")
            }
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
                // Complete, unless this summary was cancelled (its message may be gone since: a sheet
                // opened over it and closed again). A summary is known by the result it summarises.
                if s.message?.contains("cancelled") == true { cancelledSummaries.insert(summary.result) }
                if summary.rows.allSatisfy({ $0 != nil }) { cancelledSummaries.remove(summary.result) }
                #expect(s.count == summary.columns.count && (summary.rows.allSatisfy { $0 != nil } || cancelledSummaries.contains(summary.result)),
                        "step \(step): \(s.message ?? "")")
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
                let filter = s.filter.isEmpty ? nil : try FetchPredicate(filter: s.filter)
                let context = try ManagedObjectContext(store: store)
                if s.mode == .grid, s.loading == nil, s.sheet == .table, let table = s.table {
                    #expect(try context.count(for: FetchRequest(entityName: table, predicate: filter)) == s.count, "step \(step)")
                }
            }
        }
        #expect(try direct(path) { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        // Two tables and the R prompt share the run's keys with the edits now: fewer of each.
        #expect(edits > 3, "the run should edit: \(edits)")
        #expect(frequencySheets > 10, "the run should visit frequency sheets: \(frequencySheets)")
        #expect(summaries > 10, "the run should visit summary sheets: \(summaries)")
        #expect(textSheets > 10, "the run should visit records and the SQL: \(textSheets)")
        #expect(arranged > 100, "the run should arrange columns: \(arranged)")
        #expect(related > 10, "the run should follow keys: \(related)")
        #expect(copies > 3, "the run should copy: \(copies)")
        #expect(writes + writesCancelled > 0, "the run should write: \(writes), cancelled \(writesCancelled)")
        #expect(querySheets > 10 && sqlFilters > 10, "the run should visit queries' sheets and SQL filters: \(querySheets), \(sqlFilters)")
    }
}
