import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

@Suite("Whole screens")
struct ScreenTests {
    @Test("a small table draws header, gutter, values, NULL apart from empty text, status and message")
    func smallTable() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, note TEXT);
            INSERT INTO t VALUES (1, 'alpha', NULL), (2, '', 'x'), (3, '東京', 'e\u{301}t\u{E9}');
            """)
        let (_, term) = try makeBrowser(path, width: 40, height: 7)
        let opened = term.text[6]
        #expect(term.text.dropLast() == [
            "  #  id name  note",
            "  1  1  alpha ∅",
            "  2  2        x",
            "  3  3  東京  été",
            "",
            " t │ row 1 of 3                  ? help",
        ])
        #expect(opened.hasPrefix("3 rows in ") && opened.hasSuffix("…") && TerminalText.width(of: opened) == 40)
    }

    @Test("control characters in names and values are drawn as visible escapes, never sent")
    func escapes() throws {
        let dir = TempDir()
        let evil = "a\u{1B}]0;pwned\u{07}b\u{9B}31mc\u{1B}[2Jd"
        let path = try makeDatabase(dir, sql: "CREATE TABLE \"t\u{1B}[31m\"(id INTEGER PRIMARY KEY, \"col\u{07}\" TEXT)")
        try direct(path) { db in try db.execute(sql: "INSERT INTO \"t\u{1B}[31m\" VALUES (1, ?)", arguments: [evil]) }
        let (browser, term) = try makeBrowser(path, width: 100, height: 8)
        browser.send(.enter)
        for screen in [term.screen] {
            for y in 0..<screen.height {
                for x in 0..<screen.width {
                    #expect(!screen[x, y].text.unicodeScalars.contains(where: TerminalText.needsEscape), "raw control at \(x),\(y)")
                }
            }
        }
        let all = term.text.joined(separator: "\n")
        #expect(all.contains("a\\e]0;pwned\\x07b\\x9B31mc\\e[2Jd"))
        #expect(all.contains("col\\x07"))
        #expect(all.contains("t\\e[31m"))
    }

    @Test("wide characters and combining marks take the right number of cells")
    func widths() {
        #expect(TerminalText.width(of: "東京") == 4)
        #expect(TerminalText.width(of: "e\u{301}") == 1)
        #expect(TerminalText.width(of: "🎬") == 2)
        #expect(TerminalText.width(of: "❤\u{FE0F}") == 2)
        #expect(TerminalText.width(of: "a\u{1B}") == 3)
        var b = ScreenBuffer(width: 4, height: 1)
        b.put("a東京", x: 0, y: 0)
        #expect(b.line(0) == "a東 ")   // 京 does not fit in one column: a space instead
        #expect(TerminalText.truncate("abcdef", toWidth: 4) == "abc…")
        #expect(TerminalText.truncate("東京物語", toWidth: 5) == "東京…")
    }

    @Test("only changed cells are sent")
    func diff() {
        var a = ScreenBuffer(width: 10, height: 3)
        a.put("hello", x: 0, y: 1)
        var b = a
        b.put("J", x: 0, y: 1)
        let runs = b.changes(since: a)
        #expect(runs.count == 1 && runs[0].x == 0 && runs[0].y == 1 && runs[0].cells.count == 1)
        #expect(b.changes(since: b).isEmpty)
        #expect(b.changes(since: nil).reduce(0) { $0 + $1.cells.count } == 30)
        var c = a
        c.put("東", x: 2, y: 1)   // a wide grapheme changes two cells, sent as one run
        #expect(c.changes(since: a).map(\.cells.count) == [2])
    }

    @Test("NO_COLOR: no cell has a colour")
    func noColor() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 30)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 60, height: 10)
        term.colorsEnabled = false
        let browser = try Browser(store: store, options: BrowserOptions(), backend: term)
        browser.start()
        browser.send([.char("m"), .char("f")])
        for y in 0..<term.screen.height {
            for x in 0..<term.screen.width {
                let s = term.screen[x, y].style
                #expect(s.foreground == .default && s.background == .default)
            }
        }
    }

    @Test("from 40x10 to 300x100 every screen is drawn whole, and resize redraws")
    func sizes() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 500)
        let (browser, term) = try makeBrowser(path, width: 40, height: 10)
        for (w, h) in [(40, 10), (300, 100), (41, 11), (120, 40), (40, 10)] {
            term.resize(width: w, height: h)
            browser.send(.resize)
            #expect(term.screen.width == w && term.screen.height == h)
            #expect(term.text[0].hasPrefix("  #  id"))
            #expect(term.text[h - 2].contains("row 1 of 500"))
            #expect(term.text.count == h)
            // The grid fills every row it has.
            #expect(term.text[h - 3].contains("\(h - 3)"))
        }
    }
}

@Suite("Cells cut at the screen's edge")
struct EdgeCutTests {
    @Test("a value in the last column, cut by the screen's right edge, ends in … (0.2 is never shown for 0.29, nor 100 for 100000); the header too")
    func lastColumnCutWithEllipsis() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, amount REAL, big INTEGER);
            INSERT INTO t VALUES (1, 'abcdefghij', 0.29, 100000);
            """)
        // Widths where amount's or big's cell is cut by the edge (wherever the layout puts them).
        for width in 20...44 {
            let (b, term) = try makeBrowser(path, width: width)
            let line = term.text[1]
            for whole in ["0.29", "100000", "abcdefghij"] {
                // Each value shows whole, or cut with …, or not at all: never a bare prefix at the edge.
                for n in 1..<whole.count {
                    let prefix = String(whole.prefix(n))
                    #expect(!line.hasSuffix(" " + prefix) || line.hasSuffix(" " + whole), "width \(width): \(line)")
                }
            }
            #expect(!term.text[0].hasSuffix(" amou") && !term.text[0].hasSuffix(" am"), "width \(width): \(term.text[0])")
            _ = b
        }
    }
}
