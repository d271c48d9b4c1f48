import BatchStore
@testable import Browser
import Foundation
import GRDB
import TerminalCore
import Testing

/// A query's result in the browser: D, U and e act on the rows of the table its rows name by key
/// (T picks which), with the same questions and undo as a table's; a query whose rows name no
/// table's rows is read-only and says why.
@Suite struct QuerySheetTests {
    static func makeFile(_ dir: TempDir) throws -> String {
        try makeDatabase(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, director_id INTEGER);
            INSERT INTO director VALUES (1, 'Kurosawa'), (2, 'Varda'), (3, 'Ozu');
            WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 30)
              INSERT INTO movie SELECT i, 'Movie ' || i, 1950 + i, CASE WHEN i % 7 = 0 THEN 99 ELSE i % 3 + 1 END FROM c;
            """)
    }

    static func browser(_ path: String, query: String) throws -> (Browser, MemoryTerminal) {
        let store = try PersistentStore(path: path, options: .init(query: query))
        let terminal = MemoryTerminal(width: 100, height: 12)
        let browser = try Browser(store: store, options: BrowserOptions(table: try #require(store.queryEntity).name), backend: terminal)
        browser.start()
        return (browser, terminal)
    }

    static func table(_ path: String, _ sql: String) throws -> [String] {
        try direct(path) { db in try Row.fetchAll(db, sql: sql).map { row in (0..<row.count).map { "\(row[$0] as DatabaseValue)" }.joined(separator: "|") } }
    }

    static let join = "SELECT m.id, m.title, m.year, d.id AS did, d.name FROM movie m JOIN director d ON d.id = m.director_id ORDER BY m.id"

    @Test("D on a marked row of a join deletes exactly that row of the table it names, u restores it; T picks the other table")
    func deleteThroughAJoin() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let movies = try Self.table(path, "SELECT * FROM movie")
        let directors = try Self.table(path, "SELECT * FROM director")
        let (b, term) = try Self.browser(path, query: Self.join)
        #expect(b.state.readOnlyReason == nil)
        #expect(b.state.count == 26)
        #expect(term.text.joined(separator: "\n").contains("edits movie"))
        // Row 2 is movie 2; D asks about movie, naming the marked row it comes from.
        b.send(keys("jv"))
        b.send(.char("D"))
        #expect(term.text[11] == "Delete the 1 row named by the 1 marked row of this query from movie? y/n")
        b.send(.char("y"))
        #expect(try Self.table(path, "SELECT * FROM movie") == movies.filter { !$0.hasPrefix("2|") })
        #expect(try Self.table(path, "SELECT * FROM director") == directors)
        #expect(b.state.count == 25)
        #expect(b.state.message?.hasPrefix("deleted 1 row from movie; u undoes") == true)
        b.send([.char("u"), .char("y")])
        #expect(try Self.table(path, "SELECT * FROM movie") == movies)
        #expect(b.state.count == 26)

        // T: edits act on director; two marked rows of the same director delete it once.
        b.send(.char("T"))
        #expect(b.state.message?.hasPrefix("D, U and e act on director: the rows named by did") == true)
        #expect(term.text.joined(separator: "\n").contains("edits director"))
        b.send(keys("gvjjv"))   // rows 1 and 4: movies 1 and 4, both of director 2
        b.send(.char("D"))
        #expect(term.text[11] == "Delete the 1 row named by the 2 marked rows of this query from director? y/n")
        b.send(.char("y"))
        #expect(try Self.table(path, "SELECT * FROM director") == directors.filter { !$0.hasPrefix("2|") })
        #expect(try Self.table(path, "SELECT * FROM movie") == movies)
        b.send([.char("u"), .char("y")])
        #expect(try Self.table(path, "SELECT * FROM director") == directors)
    }

    @Test("U and e set the named table's columns under the query's names; a column of another table is refused")
    func updateThroughAJoin() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let (b, term) = try Self.browser(path, query: Self.join)
        b.send(keys("v"))   // movie 1
        b.send(keys("U") + keys("year = year + 100") + [.enter])
        #expect(term.text.joined(separator: "\n").contains("in movie: year = year + 100"), "\(term.text)")
        b.send(.char("y"))
        #expect(try Self.table(path, "SELECT id, year FROM movie WHERE id <= 2") == ["1|2051", "2|1952"])
        // name is director's: not a column of movie here.
        b.send(keys("vU") + keys("name = 'x'") + [.enter])
        #expect(b.state.message?.contains("name is not a column of movie in this query") == true, "\(b.state.message ?? "")")
        b.send([.escape])
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT name FROM director ORDER BY id") } == ["Kurosawa", "Varda", "Ozu"], "\(term.text)")
        // e on the name column is refused at once; T, then e sets the director's name.
        b.send(keys("gllll"))
        b.send(.char("e"))
        #expect(b.state.message?.contains("name is not a column of movie") == true, "\(b.state.message ?? "")")
        b.send(keys("Te"))
        b.send(Array(repeating: Key.backspace, count: 20) + keys("'Akira'") + [.enter])
        b.send(.char("y"))
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT name FROM director ORDER BY id") } == ["Kurosawa", "Akira", "Ozu"], "\(term.text)")
    }

    @Test("F on a query's column, v, D: deletes the rows of the named table whose query rows hold the value; u restores")
    func deleteByValueThroughAJoin() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let movies = try Self.table(path, "SELECT * FROM movie")
        let (b, term) = try Self.browser(path, query: Self.join)
        b.send(keys("llll"))
        b.send(.char("F"))
        // The value on the first line of the sheet: a director's name, and the movies it names.
        let name = try #require(["Kurosawa", "Varda", "Ozu"].first { term.text[1].contains($0) }, "\(term.text)")
        let named = try direct(path) { try Int64.fetchAll($0, sql: "SELECT m.id FROM movie m JOIN director d ON d.id = m.director_id WHERE d.name = ?", arguments: [name]) }
        b.send(keys("vD"))
        #expect(term.text.last == "Delete the \(named.count) rows named by this query's rows with 1 value of name from movie? y/n", "\(term.text)")
        b.send(.char("y"))
        #expect(try direct(path) { try Int64.fetchAll($0, sql: "SELECT id FROM movie ORDER BY id") } == (1...30).filter { !named.contains(Int64($0)) }.map(Int64.init))
        b.send(keys("uy"))
        #expect(try Self.table(path, "SELECT * FROM movie") == movies)
    }

    @Test("Q on a query's sheet: the query, its result as a statement the sqlite3 shell runs to the same rows, and what edits act on")
    func sqlOfAQuery() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let (b, _) = try Self.browser(path, query: Self.join)
        b.send(.char("Q"))
        let fields = try #require(b.state.textSheet?.fields)
        func field(_ name: String) -> String? { fields.first { $0.name == name }.flatMap { if case .text(let t) = $0.value { t } else { nil } } }
        #expect(field("query") == Self.join)
        #expect(field("edits") == "movie (rows named by id); director (rows named by did); D, U and e act on movie, T picks the next")
        let result = try #require(field("result"))
        #expect(result.hasPrefix("SELECT "), "\(result)")
        // Pasted into the shell, it gives the sheet's rows in the sheet's order.
        #expect(try sqlite3(path, result) == (try sqlite3(path, Self.join)))
        b.send(.escape)
        let (g, _) = try Self.browser(path, query: "SELECT year, count(*) FROM movie GROUP BY year")
        g.send(.char("Q"))
        let edits = g.state.textSheet?.fields.first { $0.name == "edits" }?.value
        #expect(edits == .text("none: a query with the aggregate count() is read-only: its rows are not each one row of a table"))
    }

    @Test("U's names, on both sides, are the query's columns: year AS title is movie's year")
    func updateNamesTheShownColumn() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let (b, _) = try Self.browser(path, query: "SELECT m.id, m.title, d.name FROM movie m JOIN director d ON d.id = m.director_id")
        b.send(keys("v"))
        // Names on the right are the query's too: `year AS title` read as movie's year.
        let (y, _) = try Self.browser(path, query: "SELECT m.id, m.year AS title FROM movie m WHERE m.id = 2")
        y.send(keys("U") + keys("title = title + 1") + [.enter, .char("y")])
        #expect(try Self.table(path, "SELECT id, title, year FROM movie WHERE id = 2") == ["2|\"Movie 2\"|1953"])
        b.send(keys("U") + keys("title = 'x'") + [.enter, .char("y")])
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT title FROM movie WHERE id = 1") } == "x")
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT name FROM director ORDER BY id") } == ["Kurosawa", "Varda", "Ozu"])
    }

    @Test(":SELECT … opens the query as a new sheet over the table (Esc goes back), kept in the : history; edits go through it; a bad query keeps the prompt")
    func queryPrompt() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: store, options: BrowserOptions(table: "movie"), backend: term)
        b.start()
        #expect(b.state.table == "movie" && b.state.count == 30)
        let sql = "SELECT m.id, m.title, d.name FROM movie m JOIN director d ON d.id = m.director_id WHERE m.year >= 1970"
        b.send([.char(":")] + keys(sql) + [.enter])
        #expect(b.state.table == "query" && b.state.count == 9, "\(term.text)")
        #expect(b.state.sheets.count == 1)
        #expect(term.text.joined(separator: "\n").contains("edits movie"))
        // D through it: the first row is movie 20.
        b.send(keys("vD"))
        #expect(term.text.last == "Delete the 1 row named by the 1 marked row of this query from movie? y/n")
        b.send(.char("y"))
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE id = 20") } == 0)
        #expect(b.state.count == 8)
        // Esc: back to the table, which an edit left out of date or counted again.
        b.send(.escape)
        #expect(b.state.table == "movie" && b.state.sheets.isEmpty)
        // The : history holds the query; a query with an error keeps the prompt open with its text.
        b.send([.char(":"), .up])
        var typed: String?
        if case .prompt(_, let line) = b.state.mode { typed = line.text }
        #expect(typed == sql, "\(typed ?? "no prompt")")
        b.send([.escape, .char(":")] + keys("SELECT nope FROM movie") + [.enter])
        #expect(b.state.message?.contains("no such column: nope") == true, "\(b.state.message ?? "")")
        #expect(b.state.table == "movie")
        // A second query is query_2; it is read-only and says why.
        b.send([.escape, .char(":")] + keys("SELECT director_id, count(*) AS n FROM movie GROUP BY 1") + [.enter])
        #expect(b.state.table == "query_2" && b.state.count == 4, "\(term.text)")
        #expect(b.state.readOnlyReason?.contains("aggregate count()") == true)
    }

    @Test("a query whose rows name no table's rows is read-only: D, U, e say why and nothing is written")
    func groupedQueryIsReadOnly() throws {
        let dir = TempDir()
        let path = try Self.makeFile(dir)
        let before = try Self.table(path, "SELECT * FROM movie")
        let (b, term) = try Self.browser(path, query: "SELECT director_id, count(*) AS n FROM movie GROUP BY director_id")
        #expect(b.state.readOnlyReason?.contains("aggregate count()") == true)
        #expect(term.text.joined(separator: "\n").contains("read-only"))
        b.send(keys("vD"))
        #expect(b.state.message?.hasPrefix("D does nothing: a query with the aggregate count() is read-only") == true, "\(b.state.message ?? "")")
        b.send(keys("Ty"))
        #expect(try Self.table(path, "SELECT * FROM movie") == before)
    }
}
