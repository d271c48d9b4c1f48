import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// Marking values on a frequency sheet, D / U / u on their rows, and sheets an edit left out of
/// date, in whole sessions on a real file and the in-memory screen.
@Suite("Frequency sheet edits, whole screens")
struct FrequencyEditSessionTests {
    let sheets = FrequencySheetTests()

    func count(_ path: String, _ condition: String = "1") throws -> String {
        try sqlite3(path, "SELECT count(*) FROM m WHERE \(condition)").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("F on genre, v v, D: the exact count; y deletes those rows (the shell agrees), the sheet counts again on the cursor's value; Esc shows the table's new count; u restores")
    func deleteTwoValues() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(keys("jjjl"))
        b.send(.char("F"))
        b.send(keys("vv"))
        let counted = [
            "  #  genre     count percent histogram",
            "  1* Drama     5     41.67%  ██████████████████████████████",
            "  2* Noir      3     25.00%  ██████████████████",
            "  3  ∅         2     16.67%  ████████████",
            "  4  <b>\\e[31m 1     8.33%   ██████",
            "  5  日本      1     8.33%   ██████",
            "", "", "", "",
        ]
        #expect(term.text == counted + [
            " test.sqlite › m › genre freq │ value 3 of 5 in 12 rows │ 2 values marked, 8 rows            ? help",
            "",
        ])
        b.send(.char("D"))
        #expect(term.text.last == "Delete 8 rows (2 values of genre) from m? y/n")
        b.send(.char("y"))
        #expect(try count(path) == "4")
        #expect(try count(path, "genre IN ('Drama', 'Noir')") == "0")
        #expect(term.text == [
            "  #  genre     count percent histogram",
            "  1  ∅         2     50.00%  ██████████████████████████████",
            "  2  <b>\\e[31m 1     25.00%  ███████████████",
            "  3  日本      1     25.00%  ███████████████",
            "", "", "", "", "", "",
            " test.sqlite › m › genre freq │ value 1 of 3 in 4 rows                                       ? help",
            "deleted 8 rows from m (2 values of genre); u undoes; genre counted again: 3 values in 4 rows (15 ms)",
        ])
        // The table under it was fetched again with the count: its cursor stays on its row (id 4).
        b.send(.escape)
        #expect(term.text == [
            "  #  id genre     n",
            "  1  4  ∅         2",
            "  2  7  <b>\\e[31m 3",
            "  3  9  ∅         ∅",
            "  4  10 日本      2",
            "", "", "", "", "",
            " m │ row 1 of 4                                                                              ? help",
            "back from genre freq to m",
        ])
        b.send([.char("u"), .char("y")])
        #expect(try count(path) == "12")
        #expect(term.text[10] == " m │ row 4 of 12                                                                             ? help")
    }

    @Test("u on the frequency sheet restores the rows and counts again; U updates the cursor's value's rows; NULL is its own value")
    func undoAndUpdateOnTheSheet() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(keys("jjjl"))
        b.send(.char("F"))
        b.send(keys("jj"))
        // The cursor's value (NULL: 2 rows) without marks.
        b.send(.char("U"))
        b.send(keys("genre = \"None\""))
        b.send(.enter)
        let asked = term.text.suffix(3).joined(separator: " ")
        #expect(asked.contains("Update 2 rows (1 value of genre) in m: genre = \"None\" — e.g. id ") && asked.hasSuffix("nil → \"None\"? y/n"), "\(term.text.suffix(3))")
        b.send(.char("y"))
        #expect(try count(path, "genre IS NULL") == "0")
        #expect(try count(path, "genre = 'None'") == "2")
        #expect(term.text[2] == "  2  Noir      3     25.00%  ██████████████████")
        #expect(term.text[3] == "  3  None      2     16.67%  ████████████")
        #expect(term.text.last == "updated 2 rows of m (1 value of genre); u undoes; genre counted again: 5 values in 12 rows (15 ms)")
        b.send([.char("u"), .char("y")])
        #expect(try count(path, "genre IS NULL") == "2")
        #expect(term.text[3] == "  3  ∅         2     16.67%  ████████████")
        #expect(term.text.last == "undo: restored the old values of 2 rows of m; genre counted again: 5 values in 12 rows (15 ms)")
    }

    @Test("V marks every value; D deletes the whole result the sheet counted (its filter), not a row more")
    func allValuesOverAFilter() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(.char("f"))
        b.send(keys("id > 6"))
        b.send(.enter)
        b.send(keys("l"))
        b.send(.char("F"))
        b.send(.char("V"))
        #expect(term.text[10] == " test.sqlite › m › genre freq │ value 1 of 5 in 6 rows │ all 5 values marked, 6 rows │ filt…")
        b.send(.char("D"))
        #expect(term.text.last == "Delete 6 rows (all 5 values of genre) from m? y/n")
        b.send(.char("y"))
        #expect(try count(path) == "6")
        #expect(try count(path, "id > 6") == "0")
        #expect(term.text[10].hasPrefix(" test.sqlite › m › genre freq │ value 0 of 0 in 0 rows"))
    }

    @Test("binned: D on a bin deletes the numbers in its range and nothing else (text '1' stays)")
    func bin() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(keys("ll"))
        b.send(.char("F"))
        b.send(.char("B"))
        #expect(term.text[1] == "  1  ∅     1     8.33%   ████████")
        #expect(term.text[2] == "  2  1 – 2 4     33.33%  ██████████████████████████████")
        b.send(.char("j"))
        b.send(.char("D"))
        #expect(term.text.last == "Delete 4 rows (1 bin of n) from m? y/n")
        b.send(.char("y"))
        #expect(try count(path, "typeof(n) IN ('integer', 'real') AND n >= 1 AND n < 2") == "0")
        #expect(try count(path, "n = '1' AND typeof(n) = 'text'") == "2")
        #expect(try count(path) == "8")
    }

    @Test("D on a value's rows (Enter) leaves the frequency sheet and the table out of date: Esc counts it again on its value, Esc again shows the table's new count")
    func staleOnReturn() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(keys("jjjl"))
        b.send(.char("F"))
        b.send(.char("j"))
        b.send(.enter)
        #expect(term.text[10].hasPrefix(" test.sqlite › m › genre freq › m │ row 1 of 3 │ filter: genre == \"Noir\""))
        b.send(.char("v"))
        b.send(.char("D"))
        #expect(term.text.last == "Delete the 1 marked row from m? y/n")
        b.send(.char("y"))
        b.send(.escape)
        // Noir ties with NULL now (2 rows each), after it: the cursor follows it to value 3.
        #expect(term.text[3] == "  3  Noir      2     18.18%  ████████████")
        #expect(term.text[10] == " test.sqlite › m › genre freq │ value 3 of 5 in 11 rows                                      ? help")
        #expect(term.text.last == "genre counted again: 5 values in 11 rows (10 ms)")
        b.send(.escape)
        // Its cursor stays on its row (id 4), one up now.
        #expect(term.text[10] == " m │ row 3 of 11                                                                             ? help")
    }

    @Test("I, then another writer deletes rows: r on the summary fetches its result again and summarises the file as it is now")
    func summaryRecount() throws {
        let dir = TempDir()
        let path = try sheets.movies(dir)
        let (b, term) = try sheets.browser(path, width: 100)
        b.send(.char("I"))
        #expect(term.text[1].hasPrefix("  1  id     INTEGER integer           0     12       1         12 "))
        try direct(path) { try $0.execute(sql: "DELETE FROM m WHERE id > 10") }
        b.send(.char("r"))
        #expect(term.text[1].hasPrefix("  1  id     INTEGER integer           0     10       1         10 "))
        b.send(.escape)
        #expect(term.text[10] == " m │ row 1 of 10                                                                             ? help")
    }
}
