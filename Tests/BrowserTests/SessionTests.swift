import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

@Suite("Browser sessions on real files")
struct SessionTests {
    @Test("moving: j k, pages, g G, :N, and the status line follows")
    func moving() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 1000)
        let (b, term) = try makeBrowser(path, height: 12)  // 9 grid rows
        #expect(b.state.count == 1000)
        b.send(keys("jjj"))
        #expect(b.state.cursorRow == 3)
        b.send(.pageDown)
        #expect(b.state.cursorRow == 12 && b.state.topRow == 9)
        b.send(.char("G"))
        #expect(b.state.cursorRow == 999 && b.state.topRow == 991)
        #expect(term.text[10].contains("row 1,000 of 1,000"))
        #expect(term.text[9].hasPrefix("1,000  1000 10000 row 1000"))
        b.send(keys(":500") + [.enter])
        #expect(b.state.cursorRow == 499)
        #expect(term.text.contains { $0.hasPrefix("  500  500 5000 row 500") }, "\(term.text)")
        b.send(.char("g"))
        #expect(b.state.cursorRow == 0 && b.state.topRow == 0)
        b.send(.ctrl("d"))
        #expect(b.state.cursorRow == 4)
        b.send(.char("k"))
        b.send(keys("ll"))
        #expect(b.state.cursorColumn == 2)
        b.send(keys("llll"))
        #expect(b.state.cursorColumn == 2)
    }

    @Test("filter and sort run in SQLite; an empty filter clears; a bad one says why and keeps the result")
    func filterAndSort() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 1000)
        let (b, term) = try makeBrowser(path)
        b.send([.char("f")] + keys("v > 9000 AND name ENDSWITH \"5\"") + [.enter])
        #expect(b.state.count == 10)
        #expect(term.text[1].contains("905"))
        b.send(.char("l"))   // column v
        b.send(.char("S"))
        #expect(b.state.sort?.column == "v" && b.state.sort?.ascending == false)
        #expect(term.text[1].contains("9950") && term.text[2].contains("9850"))
        #expect(term.text[10].contains("filter: v > 9000") && term.text[10].contains("sort: v desc"))
        b.send([.char("f")] + [.ctrl("u")] + keys("v >>> 3") + [.enter])
        #expect(b.state.messageIsError && b.state.message?.contains("predicate") == true)
        #expect(b.state.count == 10)
        #expect(b.state.mode == .prompt(.filter, line: LineEditor("v >>> 3", cursor: 3)), "the mistyped filter is kept, the cursor at the error's column")
        b.send([.escape, .char("f"), .ctrl("u"), .enter])
        #expect(b.state.count == 1000 && b.state.filter.isEmpty)
    }

    @Test("/ searches the current column in SQLite, n and N repeat, and it wraps")
    func search() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 300)
        let (b, _) = try makeBrowser(path)
        b.send(keys("ll/row 25") + [.enter])
        #expect(b.state.cursorRow == 24)
        b.send(.char("n"))
        #expect(b.state.cursorRow == 249)   // row 250
        b.send(.char("n"))
        #expect(b.state.cursorRow == 250)   // row 251
        b.send(.char("N"))
        #expect(b.state.cursorRow == 249)
        b.send(.char("G"))
        b.send(.char("n"))
        #expect(b.state.cursorRow == 24 && b.state.message?.contains("wrapped") == true)
        b.send(keys("/nothing like this") + [.enter])
        #expect(b.state.messageIsError && b.state.cursorRow == 24)
        // A number column is searched in the text the grid shows.
        b.send(keys("h/26") + [.enter])
        #expect(b.state.cursorRow == 25 && !b.state.messageIsError, "v = 260 is row 26: \(b.state.message ?? "")")
    }

    @Test("D deletes the marked rows after a confirmation with the exact count; u brings them back")
    func deleteMarkedAndUndo() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 100)
        let (b, term) = try makeBrowser(path)
        b.send(keys("jvvv"))   // marks rows 2, 3, 4
        #expect(b.state.marked.count == 3)
        #expect(term.text[2].contains("*"))
        b.send(.char("D"))
        #expect(term.text[11] == "Delete the 3 marked rows from n? y/n")
        b.send(.char("n"))
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 100)
        b.send(.char("D"))
        b.send(.char("y"))
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM n WHERE id < 6") } == [1, 5])
        #expect(b.state.count == 97)
        #expect(b.state.message?.hasPrefix("deleted 3 rows from n; u undoes") == true)
        #expect(term.text[2].contains("  5  50  row 5"))
        b.send([.char("u"), .char("y")])
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 100)
        #expect(b.state.count == 100)
        #expect(term.text[2].hasSuffix("  2  2  20 row 2"))
    }

    @Test("marks belong to one result: v in a, Esc, Enter on b leaves nothing marked, and D never touches a")
    func marksStayWithTheirResult() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE a(id INTEGER PRIMARY KEY, x TEXT); CREATE TABLE b(id INTEGER PRIMARY KEY, y TEXT);
            INSERT INTO a VALUES (1, 'a1'), (2, 'a2'); INSERT INTO b VALUES (1, 'b1'), (2, 'b2'), (3, 'b3');
            """)
        let (b, term) = try makeBrowser(path, width: 60, height: 10)
        b.send(.enter)   // a
        b.send(.char("v"))
        #expect(b.state.marked.count == 1 && term.text[8].contains("1 marked"))
        b.send([.escape, .char("j"), .enter])   // b
        #expect(b.state.table == "b" && b.state.marked.isEmpty && !b.state.allMarked)
        #expect(!term.text[8].contains("marked"), "\(term.text[8])")
        #expect(b.state.message?.contains("1 mark cleared") == true, "\(b.state.message ?? "")")
        b.send(.char("D"))
        #expect(term.text[8...9].joined(separator: " ") == "Delete all 3 rows of this result (nothing is marked) from b? y/n")
        b.send(.char("n"))
        // A filter change keeps only the marks whose rows are in the new result, and says so.
        b.send(keys("vv"))   // ids 1 and 2 of b
        b.send([.char("f")] + keys("id >= 2") + [.enter])
        #expect(b.state.marked.count == 1 && b.state.message?.contains("kept 1 of 2 marks") == true, "\(b.state.message ?? "")")
        b.send(.char("D"))
        #expect(term.text[9] == "Delete the 1 marked row from b? y/n")
        b.send(.char("y"))
        #expect(b.state.message?.hasPrefix("deleted 1 row from b; u undoes") == true, "\(b.state.message ?? "")")
        #expect(b.state.message?.contains("mark") == false, "an edit clears its marks without a note: \(b.state.message ?? "")")
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM a") } == [1, 2])
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM b") } == [1, 3])
        // A sort keeps every mark (the rows are the same); going back to a shows a unmarked.
        b.send([.char("v"), .char("S")])
        #expect(b.state.marked.count == 1)
        b.send([.escape, .char("k"), .enter])
        #expect(b.state.table == "a" && b.state.marked.isEmpty)
        b.send([.char("u"), .char("y")])
        #expect(b.state.message?.hasPrefix("undo: restored 1 deleted row of b") == true, "\(b.state.message ?? "")")
    }

    @Test("the table list remembers each table's filter, sort and row: a stray Esc loses nothing")
    func tableMemory() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE a(id INTEGER PRIMARY KEY, v INTEGER); CREATE TABLE b(id INTEGER PRIMARY KEY);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) INSERT INTO a SELECT x, x % 7 FROM c;
            """)
        let (b, term) = try makeBrowser(path, width: 60, height: 10)
        b.send([.enter, .char("f")] + keys("v == 3") + [.enter, .char("l"), .char("S")] + keys(":5") + [.enter])
        let row = b.state.snapshot(b.state.cursorRow)?.values
        b.send(.escape)
        #expect(b.state.mode == .picker)
        b.send([.char("j"), .enter, .escape, .char("k"), .enter])
        #expect(b.state.table == "a" && b.state.filter == "v == 3" && b.state.sort?.column == "v" && b.state.sort?.ascending == false)
        #expect(b.state.cursorRow == 4 && b.state.snapshot(4)?.values == row)
        #expect(term.text[8].contains("row 5 of 14") && term.text[8].contains("filter: v == 3"), "\(term.text[8])")
    }

    @Test("a search over a big result shows progress, and Esc cancels the search only: the table, filter and sort stay")
    func searchCancel() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000)
            INSERT INTO n SELECT x, x % 10, 'row ' || x FROM c;
            """)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 80, height: 12)
        let b = try Browser(store: store, options: BrowserOptions(table: "n", filter: "v != 3", sort: "v desc"), backend: term)
        b.start()
        #expect(b.state.count == 1_350_000)
        // Pressed while the search runs: the progress handler takes one key per tick (50 ms), so
        // Esc comes after the first progress frames (drawn from 0.2 s on).
        term.keys = Array(repeating: .resize, count: 8) + [.escape]
        let typed = keys("ll/no such text") + [.enter]
        let frames = term.framesPresented
        b.send(typed)
        #expect(b.state.message?.hasPrefix("search cancelled") == true, "\(b.state.message ?? "")")
        #expect(term.framesPresented > frames + typed.count, "progress frames while searching")
        #expect(b.state.mode == .grid && b.state.table == "n" && b.state.filter == "v != 3" && b.state.sort?.column == "v")
    }

    @Test("D with nothing marked deletes the whole filtered result; the cursor goes to the nearest survivor")
    func deleteResult() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 100)
        let (b, term) = try makeBrowser(path)
        b.send([.char("f")] + keys("id >= 50 AND id < 55") + [.enter, .char("D")])
        #expect(term.text[11] == "Delete all 5 rows of this result (nothing is marked) from n? y/n")
        b.send(.char("y"))
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 95)
        #expect(b.state.count == 0 && term.text[1].contains("(no rows match the filter"))
        b.send([.char("f"), .ctrl("u"), .enter])
        b.send(keys(":60") + [.enter] + keys("vvkk"))   // marks rows 60 and 61, back on row 60
        b.send(keys("Dy"))
        #expect(b.state.count == 93)
        // Rows 60 and 61 held ids 65 and 66; the nearest survivor of the cursor's row is id 64.
        #expect(b.state.snapshot(b.state.cursorRow)?.values[0] == .text("64"))
        #expect(b.state.message?.hasPrefix("deleted 2 rows from n; u undoes") == true)
    }

    @Test("U shows how many rows the assignments change, then runs one batch update; u undoes it")
    func update() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 200)
        let (b, term) = try makeBrowser(path)
        b.send([.char("f")] + keys("id <= 10") + [.enter])
        b.send([.char("U")] + keys("v = v + 1, name = uppercase(name)") + [.enter])
        #expect(term.text[8...11].joined(separator: " ").hasSuffix("Update all 10 rows of this result (nothing is marked) in n: v = v + 1, name = uppercase(name) — e.g. id 1: v 10 → 11, name \"row 1\" → \"ROW 1\"; id 2: v 20 → 21, name \"row 2\" → \"ROW 2\"; id 3: v 30 → 31, name \"row 3\" → \"ROW 3\"; …? y/n"),
                "\(term.text)")
        b.send(.char("y"))
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT name || ':' || v FROM n WHERE id = 3") } == "ROW 3:31")
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT name || ':' || v FROM n WHERE id = 11") } == "row 11:110")
        #expect(term.text[3].contains("31") && term.text[3].contains("ROW 3"))
        b.send([.char("u"), .char("y")])
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT name || ':' || v FROM n WHERE id = 3") } == "row 3:30")
        #expect(term.text[3].contains("row 3"))
        b.send([.char("U")] + keys("nope = 1") + [.enter])
        #expect(b.state.messageIsError && b.state.message?.contains("nope") == true)
    }

    @Test("a read-only file or --read-only: the edit keys say why and do nothing")
    func readOnly() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20)
        let (b, _) = try makeBrowser(path, options: BrowserOptions(readOnlyReason: "opened with --read-only"), readOnly: true)
        for key in ["D", "U", "u"] {
            b.send(.char(Character(key)))
            #expect(b.state.message == "\(key) does nothing: opened with --read-only")
        }
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 20)
    }

    @Test("rows deleted by another writer show as gone; the status line notices; r reloads")
    func otherWriter() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 50)
        let (b, term) = try makeBrowser(path, options: BrowserOptions(batchSize: 5))
        try direct(path) { db in try db.execute(sql: "DELETE FROM n WHERE id IN (12, 13); UPDATE n SET name = 'changed' WHERE id = 14") }
        b.send(.pageDown)   // rows 10…18 are faulted now, after the delete
        #expect(term.text.contains { $0.contains("(gone: deleted since the fetch") })
        b.tick()
        b.send(.char("j"))
        #expect(b.state.fileChanged)
        #expect(term.text[10].contains("file changed: r reloads"))
        b.send(.char("r"))
        #expect(b.state.count == 48 && !b.state.fileChanged)
        #expect(term.text.contains { $0.contains("changed") })
        #expect(!term.text.contains { $0.contains("(gone") })
    }

    @Test("the file deleted or replaced under the browser: one line says so, the status line keeps saying it, D, U, e and u are refused before they ask, and the new file at the path is untouched; keys and q still act")
    func fileGoneUnderneath() throws {
        let dir = TempDir()
        for replace in [false, true] {
            let path = try makeNumbers(dir, count: 20)
            let (b, term) = try makeBrowser(path, width: 120, options: BrowserOptions(batchSize: 5))
            b.send(keys("v"))
            b.send(keys("D"))
            #expect(b.state.isConfirming)
            b.send(.char("n"))
            if replace {
                let other = try makeDatabase(dir, "other.sqlite", sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT); INSERT INTO n VALUES (1, 1, 'new')")
                #expect(rename(other, path) == 0)
            } else {
                try FileManager.default.removeItem(atPath: path)
                try? FileManager.default.removeItem(atPath: path + "-wal")
                try? FileManager.default.removeItem(atPath: path + "-shm")
            }
            b.tick()
            b.present()
            let what = replace ? "was replaced by another file since it was opened" : "was deleted since it was opened"
            #expect(b.state.fileGone && b.state.messageIsError && b.state.message == "\(path) \(what): the screen shows the old file, edits are refused; q quits",
                    "\(b.state.message ?? "")")
            #expect(term.text[10].contains("file deleted or replaced: edits refused"), "\(term.text[10])")
            for edit in [[Key.char("D")], [.char("U")] + keys("v = 0") + [.enter], [.char("e")] + keys("5") + [.enter]] {
                b.send(edit)
                #expect(!b.state.isConfirming && b.state.message?.contains("edits are refused, they would be lost with the old file; nothing was changed") == true,
                        "\(edit): \(b.state.message ?? "")")
                b.send(.escape)
            }
            // Reading still works: the old file's rows.
            b.send(keys("G"))
            #expect(b.state.cursorRow == 19)
            if replace {
                #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT name FROM n") } == ["new"])
            } else {
                #expect(!FileManager.default.fileExists(atPath: path), "nothing created at the path")
            }
            b.send(.char("q"))
            #expect(b.state.quit)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    @Test("a file replaced after an edit: the browser empties the WAL it wrote into the old file, so the new file at the path reads as itself (SQLite leaves a moved file's WAL at the path, and its frames would be read as the new file's pages)")
    func walOfAReplacedFileIsEmptied() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20)
        // As faultline opens a file: WAL from its first write.
        let b = try Browser(store: try PersistentStore(path: path, options: .init(walAtFirstWrite: true)), options: BrowserOptions(batchSize: 5),
                            backend: MemoryTerminal(width: 120, height: 12))
        b.start()
        b.send(keys("vD"))
        b.send(.char("y"))
        #expect(b.state.count == 19)
        var info = stat()
        #expect(stat(path + "-wal", &info) == 0 && info.st_size > 0, "the delete's frames are in the WAL")
        let other = try makeDatabase(dir, "other.sqlite", sql: "CREATE TABLE other(x TEXT); INSERT INTO other VALUES ('new')")
        #expect(rename(other, path) == 0)
        b.tick()
        #expect(b.state.fileGone)
        #expect(stat(path + "-wal", &info) != 0 || info.st_size == 0, "the WAL at the path holds no frame of the old file")
        #expect(try sqlite3(path, "SELECT name FROM sqlite_schema") == "other")
        #expect(try sqlite3(path, "PRAGMA integrity_check") == "ok")
        b.send(.char("q"))
    }

    @Test("Enter shows every column of the current row, in full")
    func record() throws {
        let dir = TempDir()
        let big = String(repeating: "x", count: 5000)
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT, data BLOB)")
        try direct(path) { db in try db.execute(sql: "INSERT INTO t VALUES (1, ?, x'00ff10')", arguments: [big]) }
        let (b, term) = try makeBrowser(path, width: 60, height: 10)
        b.send(.enter)
        #expect(term.text[0] == "Row 1 of 1 in t  (Esc goes back, j/k scroll)")
        #expect(term.text[1] == " object ID  │ x-batchstore://test/t/r1")
        #expect(term.text[3] == " body TEXT  │ " + String(repeating: "x", count: 46))
        b.send(.char("G"))
        #expect(Array(term.text[5...7]) == [
            "            │ " + String(repeating: "x", count: 5000 % 46),
            " data BLOB  │ blob, 3 bytes",
            "            │ 00000000  00 ff 10                 |...|",
        ])
        #expect(term.text[8].hasPrefix(" test.sqlite › t › row 1 │ line 107–113 of 113"))
        b.send(.escape)
        #expect(b.state.mode == .grid && b.state.sheet == .table)
    }

    @Test("the table list counts rows lazily and opens a table; Esc goes back")
    func picker() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE a(id INTEGER PRIMARY KEY); CREATE TABLE b(x TEXT);
            INSERT INTO a VALUES (1), (2); INSERT INTO b VALUES ('q');
            CREATE VIEW c AS SELECT id * 2 AS d FROM a;
            """)
        let (b, term) = try makeBrowser(path, width: 50, height: 8)
        #expect(term.text[1].contains("a") && term.text[1].contains("counting…"))
        while b.idle() {}
        b.send(.char("k"))
        #expect(term.text[1].contains("a") && term.text[1].contains("2 rows"))
        #expect(term.text[3].contains("c") && term.text[3].contains("view") && term.text[3].contains("2 rows"))
        b.send([.char("j"), .char("j"), .enter])
        #expect(b.state.table == "c" && b.state.count == 2)
        #expect(term.text[1].contains("2") && term.text[2].contains("4"))
        b.send(.char("D"))
        #expect(b.state.message?.contains("view") == true)
        b.send(.escape)
        #expect(b.state.mode == .picker)
    }

    @Test("the memory panel shows live figures; M copies the result into an array and back")
    func memoryPanel() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 3000)
        let (b, term) = try makeBrowser(path, width: 100, height: 20)
        b.send(.char("m"))
        #expect(term.text.contains { $0.contains("Memory (m hides)") })
        #expect(term.text.contains { $0.contains("row IDs  3,000") })
        #expect(term.text.contains { $0.contains("in Swift  0") })
        let resident = try #require(b.state.memory.valueBytesResident)
        #expect(resident > 0 && term.text.contains { $0.contains("values   \(group(resident / 1024)) KB packed") },
                "the resident batches' packed values are shown")
        b.send(.char("M"))
        #expect(b.state.eagerActive && b.state.message?.contains("watch RSS climb (Esc stops)") == true)
        b.send(.escape)   // while it is still copying
        #expect(b.state.eagerLoaded == nil && !b.state.eagerActive)
        b.send(.char("M"))
        while b.state.eagerActive { b.tick(); b.send(.char("j")); b.idle() }
        #expect(b.state.eagerLoaded == 3000)
        #expect(b.registeredObjectCount >= 3000)
        b.send(.char("M"))
        #expect(b.state.eagerLoaded == nil)
        #expect(b.registeredObjectCount < 3000)
    }

    @Test("a big sorted result shows its first rows while its IDs load; Esc cancels and r asks again")
    func progressiveOpenAndCancel() throws {
        let dir = TempDir()
        let path = try makeMillionRows(dir)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 80, height: 12)
        term.keys = [.escape]   // pressed while the IDs load
        let b = try Browser(store: store, options: BrowserOptions(table: "n", sort: "name desc"), backend: term)
        b.start()
        #expect(term.framesPresented >= 2)   // the first rows, then progress, before the cancel
        #expect(b.state.message == "loading cancelled: r loads it again")
        #expect(b.state.count == 0 && b.state.sort?.column == "name" && b.state.sort?.ascending == false)
        b.send(.char("r"))
        #expect(b.state.count == 1_000_000)
        #expect(term.text[1].contains("row 999999"))
    }
}
