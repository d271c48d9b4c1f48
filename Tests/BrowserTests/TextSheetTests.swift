import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// The record view (Enter) and the SQL sheet (`Q`): text sheets on the sheet stack, every value
/// whole and wrapped, blobs as a hex dump, NULL as `∅`, control characters as visible escapes.
@Suite("Text sheets: the record view and the SQL")
struct TextSheetTests {
    /// Table `t` (a, b), 50 rows, the cursor on row 8, column b, loaded.
    func table(width: Int = 40, height: Int = 9) -> BrowserState {
        var s = BrowserState(width: width, height: height, databaseName: "db.sqlite")
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "a > 1", sort: nil, count: 50, cursor: 7, readOnly: nil, message: nil, result: 1))
        _ = s.reduce(.windowLoaded(start: s.visibleRows.lowerBound, rows: s.visibleRows.map { RowSnapshot(id: nil, values: [.text("\($0)"), .null], exists: true) }))
        _ = s.reduce(.key(.char("l")))
        return s
    }

    func screen(_ s: BrowserState) -> [String] {
        render(s, colors: false).lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
    }

    static let record = TextSheet(purpose: .record(row: 7), title: "Row 8 of 50 in t", fields: [
        TextField(name: "a INTEGER", value: .integer(8)),
        TextField(name: "b TEXT", value: .null),
        TextField(name: "note", value: .text("one\ntwo \u{1B}[2J three four five six seven 東京東京")),
        TextField(name: "data", value: .blob(Data([0x00, 0x41, 0x7F, 0xFF, 0x42]))),
        TextField(name: "empty", value: .text("")),
    ])

    @Test("Enter asks for the record at the cursor; it goes on the stack; Esc goes back to the table with the cursor, column and window as they were")
    func enterAndBack() {
        var s = table()
        #expect(s.reduce(.key(.enter)) == [.loadRecord(row: 7)])
        #expect(s.reduce(.textLoaded(Self.record)) == [], "a text sheet loads no rows")
        #expect(s.textSheet?.purpose == .record(row: 7) && s.sheetDepth == 1 && s.sheetPath == ["db.sqlite", "t", "row 8"])
        #expect(s.editTarget == nil)
        let back = s.reduce(.key(.escape))
        #expect(back.first == .closeSheet(.text))
        #expect(back.dropFirst().allSatisfy { if case .loadWindow = $0 { return true } else { return false } } && back.count == 2)
        #expect(s.sheet == .table && s.cursorRow == 7 && s.cursorColumn == 1 && s.filter == "a > 1" && s.resultID == 1)
        _ = s.reduce(.textLoaded(Self.record))
        _ = s.reduce(.key(.char("q")))
        #expect(s.sheet == .table && !s.quit, "q goes back too")
    }

    @Test("long text wraps after the last space that fits, else where the width runs out")
    func wordWrap() {
        var s = table(width: 30, height: 9)
        _ = s.reduce(.textLoaded(TextSheet(purpose: .sql, title: "SQL", fields: [
            TextField(name: "q", value: .text("SELECT a, b FROM main.\"t\" WHERE x BETWEEN ? AND ?")),
            TextField(name: "w", value: .text(String(repeating: "x", count: 30) + " y")),
        ])))
        #expect(Array(screen(s)[1...6]) == [
            " q │ SELECT a, b FROM main.\"t\"",
            "   │ WHERE x BETWEEN ? AND ?",
            " w │ xxxxxxxxxxxxxxxxxxxxxxxxx",
            "   │ xxxxx y",
            "",
            "",
        ])
    }

    @Test("whole screen: each value whole and wrapped, a line break after a newline, escapes for control characters, ∅ for NULL, the blob's size and hex dump")
    func wholeScreen() {
        var s = table(width: 40, height: 12)
        _ = s.reduce(.textLoaded(Self.record))
        #expect(screen(s) == [
            "Row 8 of 50 in t  (Esc goes back, j/k sc",
            " a INTEGER │ 8",
            " b TEXT    │ ∅",
            " note      │ one\\n",
            "           │ two \\e[2J three four five",
            "           │ six seven 東京東京",
            " data      │ blob, 5 bytes",
            "           │ 00000000  00 41 7f  |.A.|",
            "           │ 00000003  ff 42     |.B|",
            " empty     │",
            " db.sqlite › t › row 8 │ line 1…",
            "Esc or q goes back; j/k, Space and b sc…",
        ])
        let frame = render(s, colors: true)
        #expect(frame[13, 2].text == "∅" && frame[13, 2].style.foreground == .magenta, "NULL as the grid draws it")
        #expect(!frame.lines.joined().unicodeScalars.contains { TerminalText.needsEscape($0) })
    }

    @Test("a wider screen lays the lines out again; the scroll stays within them")
    func resize() {
        var s = table(width: 40, height: 8)
        _ = s.reduce(.textLoaded(Self.record))
        #expect(s.textSheet?.lineCount == 9)
        _ = s.reduce(.key(.char("G")))
        #expect(s.textSheet?.scroll == 4, "the last page: 5 lines of 9")
        _ = s.reduce(.resized(width: 80, height: 8))
        #expect(s.textSheet?.lineCount == 7, "the note's second line and the blob's bytes fit on one line each")
        _ = s.reduce(.key(.char("j")))
        #expect(s.textSheet?.scroll == 2, "never past the last page")
        _ = s.reduce(.key(.char("g")))
        #expect(s.textSheet?.scroll == 0)
        #expect(screen(s)[4] == "           │ two \\e[2J three four five six seven 東京東京")
        #expect(screen(s)[5] == " data      │ blob, 5 bytes")
        _ = s.reduce(.key(.char("k")))
        #expect(s.textSheet?.scroll == 0)
    }

    @Test("keys a text sheet does not take say so and change nothing")
    func refused() {
        var s = table()
        _ = s.reduce(.textLoaded(Self.record))
        for key in ["D", "U", "F", "I", "f", "/", "v", "-", "Q"] {
            #expect(s.reduce(.key(.char(Character(key)))) == [], "\(key)")
            #expect(s.messageIsError && s.textSheet != nil, "\(key)")
        }
        #expect(s.message == "Q does nothing on a record: j/k and the page keys scroll, Esc or q goes back; ? lists the keys")
    }

    @Test("Q asks for the SQL of the table or frequency sheet on screen, and is refused on a summary")
    func sqlKey() {
        var s = table()
        #expect(s.reduce(.key(.char("Q"))) == [.loadSQL(result: 1, row: 7)])
        _ = s.reduce(.frequencyOpened(column: "b", values: 30, total: 50, result: 2, seconds: 0))
        _ = s.reduce(.key(.pageDown))
        #expect(s.reduce(.key(.char("Q"))).contains(.loadSQL(result: 2, row: 6)), "the page on screen")
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.key(.char("I")))
        #expect(s.reduce(.key(.char("Q"))).isEmpty && s.messageIsError)
        #expect(s.message == "Q shows the SQL of a table or a frequency sheet: Esc goes back to the table")
    }

    @Test("on a real file: Enter shows the row's record from the data, Q the SQL BatchStore runs with its bound values, each Esc back")
    func session() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 300)
        let (b, term) = try makeBrowser(path, width: 70, height: 14, options: BrowserOptions(table: "n", filter: "v > 100 AND name CONTAINS \"row\"", batchSize: 25))
        b.send(keys(":40") + [.enter])
        b.send(.enter)
        #expect(Array(term.text[0...4]) == [
            "Row 40 of 290 in n  (Esc goes back, j/k scroll)",
            " object ID  │ x-batchstore://test/n/r50",
            " id INTEGER │ 50",
            " v INTEGER  │ 500",
            " name TEXT  │ row 50",
        ])
        b.send(.escape)
        #expect(b.state.cursorRow == 39 && b.state.sheet == .table)
        b.send(.char("Q"))
        let text = term.text
        #expect(text[0] == "The SQL of n: 290 rows, 25 a batch  (Esc goes back, j/k scroll)")
        #expect(text[1].hasPrefix(" ID fetch    │ INSERT INTO temp.\"bs_ids_"), "\(text)")
        #expect(text.contains("   ?1        │ 100") && text.contains("   ?2        │ 'row'"), "the bound values as SQL literals: \(text)")
        // Row 40 is in the batch of positions 26 to 50, rows 36 to 60 with no gap: read as that
        // range of the table.
        #expect(text.contains { $0.hasPrefix(" batch fault │ SELECT t.\"rowid\"") }, "\(text)")
        #expect(text.contains("   ?1        │ 36") && text.contains("   ?2        │ 60"), "the batch's first and last rowid: \(text)")
        #expect(text[12].hasPrefix(" test.sqlite › n › SQL │ line 1–"))
        b.send(.char("q"))
        #expect(b.state.sheet == .table && b.state.cursorRow == 39 && !b.state.quit)
        // On a frequency sheet: the GROUP BY over the result's rows, with the filter's values.
        b.send(keys("lF"))
        b.send(.char("Q"))
        let freq = term.text
        #expect(freq[0] == "The SQL of v freq: 290 values in 290 rows  (Esc goes back, j/k scroll)")
        #expect(freq[1].hasPrefix(" GROUP BY  │ INSERT INTO temp.\"bs_freq_"), "\(freq)")
        let joined = freq.map { $0.drop { $0 != "│" }.dropFirst().trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(joined.contains("GROUP BY value COLLATE BINARY ORDER BY count(*) DESC, value COLLATE BINARY"), "\(freq)")
        #expect(freq.contains("   ?1      │ 100") && freq.contains("   ?2      │ 'row'"), "\(freq)")
        // Further down: the page read and its two bounds.
        b.send(keys("jjjjjj"))
        let below = term.text
        #expect(below.contains { $0.hasPrefix(" page read │ SELECT value, count FROM temp.") }, "\(below)")
        #expect(below.contains("   ?1      │ 1") && below.contains("   ?2      │ 11"), "the 11 values on screen: \(below)")
    }
}
