import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

@Suite("The browser over several stores")
struct StoresBrowserTests {
    func make(_ dir: TempDir) throws -> [String] {
        try ["north", "south"].enumerated().map { i, name in
            let path = dir.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE shop(id INTEGER PRIMARY KEY, city TEXT, sales INTEGER)")
                for id in 1...30 { try db.execute(sql: "INSERT INTO shop VALUES (?, ?, ?)", arguments: [id, "\(name) \(id)", id * 2 + i]) }
            }
            return path
        }
    }

    func open(_ paths: [String], sort: String? = nil) throws -> (Browser, MemoryTerminal) {
        let coordinator = try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) })
        let term = MemoryTerminal(width: 70, height: 12)
        let b = try Browser(coordinator: coordinator, options: BrowserOptions(table: "shop", sort: sort), backend: term)
        b.start()
        return (b, term)
    }

    @Test("one grid across stores, sorted by SQLite, with a column naming each row's store")
    func grid() throws {
        let dir = TempDir()
        let paths = try make(dir)
        let (b, term) = try open(paths, sort: "sales desc")
        #expect(b.state.count == 60)
        #expect(term.text[0].contains("@store") && term.text[0].contains("city"))
        #expect(term.text[1].contains("south") && term.text[1].contains("61"))
        #expect(term.text[2].contains("north") && term.text[2].contains("60"))
        b.send([.char("f")] + keys("sales < 10") + [.enter])
        #expect(b.state.count == 8)   // ids 1…4 in each store
        b.send(keys("ll/south 3") + [.enter])
        #expect(b.state.snapshot(b.state.cursorRow)?.values[2] == .text("south 3"))
        b.send(.char("G"))
        #expect(term.text[10].contains("row 8 of 8"))
    }

    @Test("s, S, / and n on the @store column say it cannot be sorted or searched, and change nothing")
    func storeColumnIsNotATableColumn() throws {
        let dir = TempDir()
        let paths = try make(dir)
        let (b, term) = try open(paths, sort: "sales desc")
        let before = b.state.sort
        for key: Key in [.char("s"), .char("S"), .char("/"), .char("n")] {
            b.send(key)
            #expect(term.text[11].contains("@store names the file each row comes from"), "\(key): \(term.text[11])")
            #expect(b.state.sort == before && b.state.count == 60 && b.state.mode == .grid)
        }
        // One column to the right, the table's own columns sort as before.
        b.send([.char("l"), .char("l"), .char("s")])
        #expect(b.state.sort?.column == "city")
    }

    @Test("edits change every store's rows, all or nothing, and u undoes them in every store")
    func edits() throws {
        let dir = TempDir()
        let paths = try make(dir)
        let (b, term) = try open(paths)
        func sum(_ p: String) throws -> Int { try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT sum(sales) FROM shop") ?? 0 } }
        let before = try paths.map(sum)
        b.send([.char("f")] + keys("id <= 5") + [.enter, .char("U")] + keys("sales = sales + 1000") + [.enter])
        #expect(term.text[9...11].joined(separator: " ").hasSuffix("Update all 10 rows of this result (nothing is marked) in shop: sales = sales + 1000 — e.g. id 1 (north): 2 → 1002; id 2 (north): 4 → 1004; id 3 (north): 6 → 1006; …? y/n"),
                "\(term.text)")
        b.send(.char("y"))
        #expect(try paths.map(sum) == before.map { $0 + 5000 })
        b.send([.char("u"), .char("y")])
        #expect(try paths.map(sum) == before)
        // Marked rows in both stores: U changes exactly those, store by store.
        // Unsorted, rows go store by store: row 1 is north's id 1, row 6 south's id 1.
        b.send([.char("v")] + keys(":6") + [.enter, .char("v"), .char("U")] + keys("sales = -1") + [.enter])
        #expect(term.text[10...11].joined(separator: " ").hasSuffix("Update the 2 marked rows in shop: sales = -1 — e.g. id 1 (north): 2 → -1; id 1 (south): 3 → -1? y/n"), "\(term.text)")
        b.send(.char("y"))
        let changed = try paths.map { p in try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM shop WHERE sales = -1") ?? 0 } }
        #expect(changed == [1, 1])
        b.send([.char("u"), .char("y")])
        b.send([.char("g"), .char("j"), .char("v"), .char("D"), .char("y")])   // one marked row: its store only
        let counts = try paths.map { p in try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM shop") ?? 0 } }
        #expect(counts.sorted() == [29, 30])
        #expect(b.state.count == 9)
    }
}
