import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// Files that break naive tools: all browse and edit correctly.
@Suite("Odd files in the browser")
struct OddFilesTests {
    static let schema = """
        CREATE TABLE "select" ("from" INTEGER PRIMARY KEY, "where" TEXT, "名前" TEXT, "a b" REAL);
        INSERT INTO "select" VALUES (1, 'x', '東京', 1.5), (2, NULL, 'Zürich', NULL);
        CREATE TABLE kv (k TEXT, n INTEGER, v TEXT, PRIMARY KEY (k, n)) WITHOUT ROWID;
        INSERT INTO kv VALUES ('a', 1, 'one'), ('a', 2, 'two'), ('b', 1, 'three');
        CREATE TABLE gen (id INTEGER PRIMARY KEY, w INTEGER, h INTEGER, area INTEGER GENERATED ALWAYS AS (w * h) STORED);
        INSERT INTO gen (id, w, h) VALUES (1, 2, 3), (2, 4, 5);
        CREATE VIEW big_areas AS SELECT id, area FROM gen WHERE area > 10;
        CREATE TABLE empty (id INTEGER PRIMARY KEY, x TEXT);
        CREATE TABLE one (id INTEGER PRIMARY KEY, x TEXT);
        INSERT INTO one VALUES (7, 'only');
        CREATE TABLE huge (id INTEGER PRIMARY KEY, body TEXT, data BLOB);
        """

    func make(_ dir: TempDir) throws -> String {
        let path = try makeDatabase(dir, sql: Self.schema)
        try direct(path) { db in
            try db.execute(sql: "INSERT INTO huge VALUES (1, ?, ?)", arguments: [String(repeating: "é", count: 5_000_000), Data(repeating: 7, count: 10_000_000)])
            let cols = (1...1000).map { "c\($0) INTEGER" }.joined(separator: ", ")
            try db.execute(sql: "CREATE TABLE wide (id INTEGER PRIMARY KEY, \(cols))")
            try db.execute(sql: "INSERT INTO wide (id, c1, c500, c1000) VALUES (1, 1, 500, 1000)")
        }
        return path
    }

    func open(_ path: String, _ table: String, width: Int = 80, height: Int = 12) throws -> (Browser, MemoryTerminal) {
        try makeBrowser(path, width: width, height: height, options: BrowserOptions(table: table))
    }

    @Test("reserved-word and non-ASCII names: browse, filter, sort, update, delete")
    func names() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (b, term) = try open(path, "select")
        #expect(term.text[0].contains("from") && term.text[0].contains("where") && term.text[0].contains("名前") && term.text[0].contains("a b"))
        #expect(term.text[2].contains("∅") && term.text[2].contains("Zürich"))
        b.send([.char("f")] + keys("名前 BEGINSWITH \"Z\"") + [.enter])
        #expect(b.state.count == 1)
        b.send([.char("U")] + keys("where = 'set', `a b` = 2.5") + [.enter, .char("y")])
        #expect(b.state.message?.hasPrefix("updated 1 row of") == true, "\(b.state.message ?? "")")
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT \"where\" || ':' || \"a b\" FROM \"select\" WHERE \"from\" = 2") } == "set:2.5")
        b.send([.char("f"), .ctrl("u"), .enter, .char("S")])
        #expect(term.text[1].contains("2"))
        b.send([.char("v"), .char("D"), .char("y")])
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT \"from\" FROM \"select\"") } == [1])
    }

    @Test("WITHOUT ROWID: browse, mark, delete and undo by primary key")
    func withoutRowid() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (b, term) = try open(path, "kv")
        #expect(b.state.count == 3 && term.text[3].contains("three"))
        b.send([.char("j"), .char("v"), .char("D"), .char("y")])
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT v FROM kv ORDER BY k, n") } == ["one", "three"])
        b.send([.char("u"), .char("y")])
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT v FROM kv ORDER BY k, n") } == ["one", "two", "three"])
        b.send([.char("U")] + keys("v = uppercase(v)") + [.enter, .char("y")])
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT v FROM kv ORDER BY k, n") } == ["ONE", "TWO", "THREE"])
    }

    @Test("generated columns show and recompute; views browse and search but refuse edits")
    func generatedAndViews() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (b, term) = try open(path, "gen")
        #expect(term.text[1].contains("6") && term.text[2].contains("20"))
        b.send([.char("U")] + keys("w = w * 10") + [.enter, .char("y")])
        #expect(term.text[1].contains("60") && term.text[2].contains("200"))
        let (v, vterm) = try open(path, "big_areas")
        #expect(v.state.count == 2 && vterm.text[1].contains("60"))
        v.send(.char("D"))
        #expect(v.state.message == "D does nothing: big_areas is a view or has no row key")
        // A search reads the rows the view's ID table holds: in the area column, it finds the
        // second row, and back.
        v.send(keys("l/200") + [.enter])
        #expect(v.state.cursorRow == 1 && !v.state.messageIsError, "\(v.state.message ?? "")")
        v.send(keys("/60") + [.enter])
        #expect(v.state.cursorRow == 0 && !v.state.messageIsError, "\(v.state.message ?? "")")
    }

    @Test("zero rows and one row")
    func smallResults() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (e, eterm) = try open(path, "empty")
        #expect(eterm.text[1].contains("(no rows)") && eterm.text[10].contains("row 0 of 0"))
        e.send([.char("G"), .char("j"), .pageDown, .enter, .char("v"), .char("D"), .char("U")])
        #expect(e.state.count == 0 && e.state.mode == .grid)
        let (o, oterm) = try open(path, "one")
        o.send([.char("G"), .pageUp, .char("j")])
        #expect(o.state.cursorRow == 0 && oterm.text[1].contains("only"))
        o.send([.char("D"), .char("y")])
        #expect(o.state.count == 0)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM one") } == 0)
    }

    @Test("a 5M-character text and a 10 MB blob browse, show in the record view and update")
    func hugeValues() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (b, term) = try open(path, "huge", width: 100)
        #expect(term.text[1].contains("éééé") && term.text[1].contains("…") && term.text[1].contains("<blob 10000000 B>"))
        b.send(.enter)
        // The whole text, wrapped: 5,000,000 é at 86 a line, then the blob's size and 625,000 hex lines.
        #expect(term.text[3].hasSuffix("│ " + String(repeating: "é", count: 86)) && term.text[4].hasSuffix("│ " + String(repeating: "é", count: 86)))
        #expect(term.text[10].contains("line 1–9 of 683,143"), "\(term.text[10])")
        b.send(.char("G"))
        #expect(term.text[9].hasSuffix("│ 00989670  " + String(repeating: "07 ", count: 16) + " |" + String(repeating: ".", count: 16) + "|"))
        b.send(.escape)
        #expect(b.state.sheet == .table && b.state.textSheet == nil)
        b.send([.escape, .char("U")] + keys("body = substr(body, 1, 3)") + [.enter, .char("y")])
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT body FROM huge") } == "ééé")
    }

    @Test("a thousand columns scroll sideways")
    func wide() throws {
        let dir = TempDir()
        let path = try make(dir)
        let (b, term) = try open(path, "wide", width: 60)
        #expect(term.text[0].contains("c1 "))
        b.send(Array(repeating: Key.char("l"), count: 499))
        #expect(b.state.currentColumnName == "c499")
        b.send(.char("l"))
        #expect(term.text[0].contains("c500") && term.text[1].contains("500"))
        b.send(Array(repeating: Key.char("l"), count: 600))
        #expect(b.state.currentColumnName == "c1000" && term.text[1].contains("1000"))
    }

    @Test("a view that fails when run says it cannot be counted, and the tables after it are still counted")
    func brokenView() throws {
        // The view reads (its columns are known) but fails when run: counting it is an error.
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE b(y); INSERT INTO b VALUES (1), (2), (3); CREATE TABLE c(z);
            CREATE VIEW a_broken AS SELECT y FROM b WHERE abs(y - 9223372036854775807 - 2) > 0;
            CREATE VIEW d AS SELECT y FROM b WHERE y > 1;
            """)
        let (b, term) = try makeBrowser(path, width: 90, height: 8)
        while b.idle() {}
        b.send(.char("k"))
        #expect(term.text.contains { $0.contains("a_broken") && $0.contains("not counted: integer overflow") }, "\(term.text)")
        #expect(term.text.contains { $0.contains("b ") && $0.contains("3 rows") }, "\(term.text)")
        #expect(term.text.contains { $0.contains("d ") && $0.contains("2 rows") }, "\(term.text)")
    }
}
