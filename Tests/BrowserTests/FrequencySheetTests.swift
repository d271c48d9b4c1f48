import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// The frequency sheet in whole sessions on a real file, on the in-memory screen.
@Suite("The frequency sheet, whole screens")
struct FrequencySheetTests {
    /// 12 movies: genre Drama ×5, Noir ×3, NULL ×2, a hostile value and a Japanese one; `n` holds
    /// the integer 1, the real 1.0 and the text '1'.
    func movies(_ dir: TempDir) throws -> String {
        try makeDatabase(dir, sql: """
            CREATE TABLE m(id INTEGER PRIMARY KEY, genre TEXT, n);
            INSERT INTO m(genre, n) VALUES ('Drama', 1), ('Noir', 1.0), ('Drama', '1'), (NULL, 2), ('Drama', 1), ('Noir', '1'),
              ('<b>' || char(27) || '[31m', 3), ('Drama', 1.0), (NULL, NULL), ('日本', 2), ('Drama', 2), ('Noir', 3);
            """)
    }

    func browser(_ path: String, width: Int = 80, height: Int = 12) throws -> (Browser, MemoryTerminal) {
        let term = MemoryTerminal(width: width, height: height)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "m", batchSize: 5), backend: term,
                            environment: FakeFacts().environment)
        b.start()
        return (b, term)
    }

    @Test("F, Enter on NULL, Esc, Esc: every line of each screen")
    func session() throws {
        let dir = TempDir()
        let (b, term) = try browser(try movies(dir))
        b.send(keys("jjjl"))
        b.send(.char("F"))
        let frequencies = [
            "  #  genre     count percent histogram",
            "  1  Drama     5     41.67%  ██████████████████████████████",
            "  2  Noir      3     25.00%  ██████████████████",
            "  3  ∅         2     16.67%  ████████████",
            "  4  <b>\\e[31m 1     8.33%   ██████",
            "  5  日本      1     8.33%   ██████",
            "",
            "",
            "",
            "",
        ]
        #expect(term.text == frequencies + [
            " test.sqlite › m › genre freq │ value 1 of 5 in 12 rows                  ? help",
            "5 distinct values of genre in 12 rows, counted by SQLite in 10 ms; Enter opens …",
        ])
        b.send(keys("jj"))
        b.send(.enter)
        #expect(term.text == [
            "  #  id genre n",
            "  1  4  ∅     2",
            "  2  9  ∅     ∅",
            "", "", "", "", "", "", "",
            " test.sqlite › m › genre freq › m │ row 1 of 2 │ filter: genre == nil    ? help",
            "2 rows in 10 ms (IDs in SQLite, rows faulted 5 at a time)",
        ])
        b.send(.escape)
        #expect(term.text == frequencies + [
            " test.sqlite › m › genre freq │ value 3 of 5 in 12 rows                  ? help",
            "back from m to genre freq",
        ])
        b.send(.escape)
        #expect(term.text == [
            "  #  id genre     n",
            "  1  1  Drama     1",
            "  2  2  Noir      1.0",
            "  3  3  Drama     1",
            "  4  4  ∅         2",
            "  5  5  Drama     1",
            "  6  6  Noir      1",
            "  7  7  <b>\\e[31m 3",
            "  8  8  Drama     1.0",
            "  9  9  ∅         ∅",
            " m │ row 4 of 12                                                         ? help",
            "back from genre freq to m",
        ])
        #expect(b.state.cursorColumn == 1)
    }

    @Test("the data holds one result per table sheet the state names, and lets go of a sheet's as Esc leaves it")
    func resultsFollowTheSheets() throws {
        let dir = TempDir()
        let (b, _) = try browser(try movies(dir))
        #expect(b.heldResultCount == 1)
        b.send(keys("l"))
        b.send(.char("F"))
        #expect(b.state.frequencySheet != nil && b.heldResultCount == 1, "a frequency sheet's counts go with the result under it")
        b.send(.enter)
        #expect(b.state.table == "m" && b.state.sheetDepth == 2 && b.heldResultCount == 2, "\(b.state.sheetPath)")
        // An open in place (a sort) replaces the sheet's result: still two.
        b.send(.char("s"))
        #expect(b.heldResultCount == 2)
        b.send(.escape)
        #expect(b.state.frequencySheet != nil && b.heldResultCount == 1, "\(b.state.sheetPath)")
        // The frequency sheet's value rows are still read from the result under it.
        b.send(.enter)
        #expect(b.state.sheetDepth == 2 && b.state.count == 5, "\(b.state.sheetPath): \(b.state.count)")
        b.send([.escape, .escape])
        #expect(b.state.sheetDepth == 0 && b.state.count == 12 && b.heldResultCount == 1)
        // Edits act on the result on screen after all that.
        b.send(keys("v"))
        b.send(.char("D"))
        #expect(b.state.isConfirming, "\(b.state.message ?? "")")
    }

    @Test("mixed storage classes: 1 and 1.0 are one value, '1' another; Enter on each opens exactly its rows")
    func mixedStorageClasses() throws {
        let dir = TempDir()
        let path = try movies(dir)
        let (b, _) = try browser(path)
        b.send(keys("llF"))
        let shell = try sqlite3(path, "SELECT quote(n), count(*) FROM m GROUP BY n ORDER BY count(*) DESC, n").split(separator: "\n").map(String.init)
        #expect(shell == ["1|4", "2|3", "3|2", "'1'|2", "NULL|1"])
        #expect(b.state.count == 5)
        let shown = (0..<5).compactMap { b.state.snapshot($0).map { Array($0.values.prefix(2)) } }
        // Where numbers and text meet, text is shown in quotes: the integer 1 and the text '1' are told apart.
        #expect(shown == [[.text("1"), .text("4")], [.text("2"), .text("3")], [.text("3"), .text("2")], [.text("\"1\""), .text("2")], [.null, .text("1")]])
        for (row, filter, count) in [(0, "n == 1", 4), (3, "n == \"1\"", 2), (4, "n == nil", 1)] {
            b.send(.char("g"))
            for _ in 0..<row { b.send(.char("j")) }
            b.send(.enter)
            #expect(b.state.filter == filter && b.state.count == count && b.state.sheetDepth == 2, "\(b.state.filter): \(b.state.count)")
            b.send(.char("q"))
            #expect(b.state.frequencySheet?.column == "n" && b.state.cursorRow == row)
        }
    }

    @Test("B: a numeric column's frequency sheet in bins of 1 (its range is 1 to 3), then unbinned again; Enter on a bin opens its range, text never in it")
    func bins() throws {
        let dir = TempDir()
        let path = try movies(dir)
        let (b, term) = try browser(path, width: 100)
        b.send(keys("llF"))
        b.send(.char("B"))
        #expect(b.state.frequencySheet?.binWidth == 1)
        // NULL, the bins 1, 2, 3 in order, then the text '1' as itself.
        let shown = (0..<b.state.count).compactMap { b.state.snapshot($0).map { Array($0.values.prefix(2)) } }
        #expect(shown == [[.null, .text("1")], [.text("1 – 2"), .text("4")], [.text("2 – 3"), .text("3")], [.text("3 – 4"), .text("2")], [.text("\"1\""), .text("2")]], "\(shown)")
        #expect(term.text[10].contains("bins of 1"), "\(term.text[10])")
        b.send(.char("j"))
        b.send(.enter)
        #expect(b.state.filter == "n >= 1 AND n < 2" && b.state.count == 4, "\(b.state.filter): \(b.state.count)")
        b.send(.char("q"))
        #expect(b.state.frequencySheet?.binWidth == 1 && b.state.cursorRow == 1)
        b.send(.char("B"))
        #expect(b.state.frequencySheet?.binWidth == nil && b.state.count == 5, "after the widest width, none again")
        b.send(.escape)
        b.send(.char("B"))
        #expect(term.text[11].contains("B bins the numbers of a frequency sheet"), "\(term.text[11])")
        b.send(keys("hF"))
        b.send(.char("B"))
        #expect(b.state.frequencySheet?.binWidth == nil && term.text[11].contains("holds no numbers"), "\(term.text[11])")
    }

    @Test("over a filter: the sheet counts the filtered rows; Enter adds the value to the filter")
    func overAFilter() throws {
        let dir = TempDir()
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: try PersistentStore(path: try movies(dir)),
                            options: BrowserOptions(table: "m", filter: "id > 3", sort: "id desc", batchSize: 5), backend: term, environment: FakeFacts().environment)
        b.start()
        b.send(keys("lF"))
        #expect(b.state.frequencySheet?.total == 9)
        #expect(term.text[10].hasPrefix(" test.sqlite › m › genre freq │ value 1 of 5 in 9 rows │ filter: id > 3"), "\(term.text[10])")
        b.send(.enter)
        #expect(b.state.filter == "(id > 3) AND genre == \"Drama\"" && b.state.count == 3)
        #expect(b.state.sort == SortDescriptor(key: "id", ascending: false), "the parent's sort")
        #expect(b.state.snapshot(0)?.values.first == .text("11"))
    }

    @Test("I shows ties for the most frequent value (all of them, or the first three and how many more); F shows text in quotes where numbers and text meet, so 1 and '1' are told apart")
    func tiesAndStorageClasses() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE m(id INTEGER PRIMARY KEY, origin TEXT, k, plain TEXT);
            INSERT INTO m(origin, k, plain) VALUES ('JFK', 1, 'a'), ('LGA', '1', 'a'), ('JFK', '1', 'b'), ('LGA', 2, 'c'), ('EWR', 2.5, NULL);
            """)
        let (b, _) = try browser(path, width: 200)
        b.send(.char("I"))
        #expect(b.state.summarySheet != nil)
        func mostFrequent(_ row: Int) -> DisplayValue? { b.state.snapshot(row)?.values.last }
        func text(_ v: DisplayValue) -> String { if case .text(let t) = v { return t } else { return "\(v)" } }
        #expect(mostFrequent(0) == .text("1, 2, 3 and 2 more: 1 each"), "\(String(describing: mostFrequent(0)))")
        #expect(mostFrequent(1) == .text("JFK, LGA: 2 each"), "\(String(describing: mostFrequent(1)))")
        #expect(mostFrequent(2) == .text("\"1\" (2)"), "\(String(describing: mostFrequent(2)))")
        // k's min and max: numbers sort before text, so the max is the text '1', quoted.
        #expect(b.state.snapshot(2)?.values[5] == .text("1") && b.state.snapshot(2)?.values[6] == .text("\"1\""), "\(String(describing: b.state.snapshot(2)?.values))")
        #expect(b.state.snapshot(1)?.values[5] == .text("EWR"), "a column of text alone is not quoted")
        #expect(mostFrequent(3) == .text("a (2)"), "\(String(describing: mostFrequent(3)))")
        b.send(.escape)
        // k holds integer 1 once, text '1' twice, 2 and 2.5: F quotes the text.
        b.send(keys("llF"))
        #expect(b.state.frequencySheet != nil && b.state.count == 4, "\(b.state.message ?? "")")
        #expect((0..<4).compactMap { b.state.snapshot($0)?.values.prefix(2).map(text).joined(separator: " ") } == ["\"1\" 2", "1 1", "2 1", "2.5 1"])
        b.send(.escape)
        // A column of text alone: shown as it is.
        b.send(keys("lF"))
        #expect((0..<4).map { b.state.snapshot($0)?.values.first.map(text) ?? "-" } == ["a", "null", "b", "c"])
    }

    @Test("I: the summary sheet of every column, each figure as SQLite computed it; Enter goes to the column")
    func summarySheet() throws {
        let dir = TempDir()
        let (b, term) = try browser(try movies(dir), width: 100)
        b.send(keys("jI"))
        #expect(term.text == [
            "  #  column type    classes           nulls distinct min       max  mean             text length mo…",
            "  1  id     INTEGER integer           0     12       1         12   6.5                          1,…",
            "  2  genre  TEXT    text              2     4 + ∅    <b>\\e[31m 日本                  2–8         Dr…",
            "  3  n              integer,real,text 1     4 + ∅    1         \"1\"  1.77777777777778 1           1 …",
            "", "", "", "", "", "",
            " test.sqlite › m › summary │ column 1 of 3                                                   ? help",
            "3 columns summarised by SQLite in 55 ms; Enter goes to a column, F counts its values, Esc goes back",
        ])
        b.send(keys("jj"))
        b.send(.enter)
        #expect(b.state.sheet == .table && b.state.cursorColumn == 2 && b.state.cursorRow == 1 && b.state.sheetDepth == 0)
        #expect(term.text.last == "column n")
    }

    @Test("over two files as one result: F counts both files' rows, refuses the store column, and Enter opens the value's rows in both")
    func severalStores() throws {
        let dir = TempDir()
        let a = try movies(dir)
        let b2 = try makeDatabase(dir, "b.sqlite", sql: """
            CREATE TABLE m(id INTEGER PRIMARY KEY, genre TEXT, n);
            INSERT INTO m(genre, n) VALUES ('Noir', 1), ('Noir', 2), ('Noir', 3), (NULL, 4);
            """)
        let coordinator = try PersistentStoreCoordinator(stores: [try PersistentStore(path: a), try PersistentStore(path: b2)])
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(coordinator: coordinator, options: BrowserOptions(table: "m", batchSize: 5), backend: term, environment: FakeFacts().environment)
        b.start()
        #expect(b.state.columns.first == "@store" && b.state.count == 16)
        b.send(.char("F"))
        #expect(b.state.frequencySheet == nil && b.state.messageIsError, "the store column is not a column of the table")
        b.send(keys("llF"))
        #expect(b.state.frequencySheet?.total == 16)
        #expect(b.state.window.prefix(3).map { Array($0.values.prefix(2)) } == [[.text("Noir"), .text("6")], [.text("Drama"), .text("5")], [.null, .text("3")]])
        b.send(.enter)
        #expect(b.state.filter == "genre == \"Noir\"" && b.state.count == 6 && b.state.sheetDepth == 2)
        b.send(keys("qq"))
        #expect(b.state.sheet == .table && b.state.count == 16 && b.state.cursorColumn == 2 && !b.state.quit)
    }

    @Test("while the file is unchanged F reads the rows the filter matches now (indexes serve it); after another writer, the result's own rows")
    func rowsRead() throws {
        let dir = TempDir()
        let path = try movies(dir)
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "m", filter: "n != nil", batchSize: 5), backend: term,
                            environment: FakeFacts().environment)
        var log: [String] = []
        b.log = { log.append($0) }
        b.start()
        #expect(b.state.count == 11)
        b.send(keys("lF"))
        #expect(b.state.frequencySheet?.total == 11)
        #expect(log.contains { $0.hasPrefix("frequencies of genre (matchingNow)") }, "\(log)")
        b.send(.escape)
        try direct(path) { try $0.execute(sql: "INSERT INTO m(genre, n) VALUES ('Drama', 5), ('Drama', 6); DELETE FROM m WHERE id = 1") }
        b.send(.char("F"))
        #expect(log.contains { $0.hasPrefix("frequencies of genre (fetched)") }, "\(log)")
        #expect(b.state.frequencySheet?.total == 10, "the result's rows that still exist, not the new ones")
        #expect(b.state.window.first?.values.prefix(2) == [.text("Drama"), .text("4")])
        b.send(.escape)
        b.send(.char("r"))
        #expect(b.state.count == 12)
        b.send(.char("F"))
        #expect(log.last { $0.hasPrefix("frequencies of genre") }?.contains("(matchingNow)") == true, "reloaded: the file is as fetched again")
        #expect(b.state.frequencySheet?.total == 12)
        #expect(b.state.window.first?.values.prefix(2) == [.text("Drama"), .text("6")])
    }
}
