import BatchStore
@testable import Browser
import Foundation
import GRDB
import TerminalCore
import Testing

/// The filter prompt's SQL conditions (`WHERE …`): the rows SQLite's own WHERE keeps, edited with
/// the same questions and undo as any filter's, narrowed by F's values in SQL, and a condition
/// that would leave its parentheses refused with one line and nothing touched.
@Suite struct SQLFilterTests {
    static func browser(_ path: String) throws -> (Browser, MemoryTerminal) {
        let terminal = MemoryTerminal(width: 100, height: 12)
        let browser = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "movie"), backend: terminal)
        browser.start()
        return (browser, terminal)
    }

    /// `f`, the line emptied (it opens holding the current filter), `text`, Enter; when a refused
    /// filter left its prompt open to fix, the line is emptied there.
    static func filter(_ b: Browser, _ text: String) {
        var typed: [Key] = [.ctrl("a"), .ctrl("k")] + keys(text) + [.enter]
        if case .prompt(.filter, _) = b.state.mode {} else { typed.insert(.char("f"), at: 0) }
        b.send(typed)
    }

    @Test("f WHERE … keeps SQLite's rows; D deletes exactly them and u restores them")
    func aSQLFilterFiltersAndEdits() throws {
        let dir = TempDir()
        let path = try QuerySheetTests.makeFile(dir)
        let movies = try QuerySheetTests.table(path, "SELECT * FROM movie")
        let (b, term) = try Self.browser(path)
        #expect(b.state.count == 30)
        // LIKE is SQL's: % is its wildcard and ASCII case is folded.
        Self.filter(b, "WHERE title LIKE 'movie 1%' AND year % 2 = 1")
        let kept = try QuerySheetTests.table(path, "SELECT * FROM movie WHERE title LIKE 'movie 1%' AND year % 2 = 1")
        #expect(b.state.count == kept.count && kept.count == 6, "\(term.text)")
        #expect(b.state.filter == "WHERE title LIKE 'movie 1%' AND year % 2 = 1")
        #expect(term.text.joined(separator: "\n").contains("filter: WHERE title LIKE 'movie 1%'"))
        b.send(.char("D"))
        #expect(term.text[11].hasPrefix("Delete all 6 rows"), "\(term.text[11])")
        b.send(.char("y"))
        #expect(try QuerySheetTests.table(path, "SELECT * FROM movie") == movies.filter { !kept.contains($0) })
        #expect(b.state.count == 0)
        b.send([.char("u"), .char("y")])
        #expect(try QuerySheetTests.table(path, "SELECT * FROM movie") == movies)
        #expect(b.state.count == 6)
    }

    @Test("F on a SQL-filtered sheet, then Enter: the value's rows among the filter's, narrowed in SQL")
    func frequencyDrillDownStaysSQL() throws {
        let dir = TempDir()
        let path = try QuerySheetTests.makeFile(dir)
        let (b, _) = try Self.browser(path)
        Self.filter(b, "WHERE year > 1960")
        b.send([.char("c")] + keys("director_id") + [.enter])
        b.send(.char("F"))
        #expect(b.state.frequencySheet != nil)
        b.send(.enter)
        let counts = try direct(path) { try Row.fetchAll($0, sql: "SELECT director_id, count(*) FROM movie WHERE year > 1960 GROUP BY director_id ORDER BY count(*) DESC, director_id") }
        let first: Int64 = counts[0][0]
        #expect(b.state.filter.hasPrefix("WHERE (year > 1960) AND "), "\(b.state.filter)")
        #expect(b.state.filter.contains("\(first)"))
        #expect(b.state.count == counts[0][1] as Int)
    }

    @Test("F and Enter on a SQL-filtered sheet of a NOCASE column: the rows counted under the value, byte for byte")
    func drillDownKeepsTheSheetsGroups() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, r REAL);
            INSERT INTO p(name, r) VALUES ('alice', 1), ('ALICE', 2), ('Alice', 3), ('bob', 4), ('alice', 5);
            """)
        let terminal = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "p"), backend: terminal)
        b.start()
        Self.filter(b, "WHERE id > 0")
        b.send([.char("c")] + keys("name") + [.enter, .char("F")])
        b.send(.enter)
        #expect(b.state.count == 2, "\(b.state.filter)")
        #expect(b.state.frequencySheet == nil)
        b.send([.escape, .escape])
        #expect(b.state.filter == "WHERE id > 0" && b.state.frequencySheet == nil && b.state.count == 5)
    }

    @Test("SQL typed without WHERE: a LIKE with % that matches nothing, and IS NULL, say how SQL is written")
    func sqlWithoutWhereIsExplained() throws {
        let dir = TempDir()
        let path = try QuerySheetTests.makeFile(dir)
        let (b, term) = try Self.browser(path)
        Self.filter(b, "title LIKE 'movie 1%'")
        #expect(b.state.count == 0)
        #expect(term.text[1].contains("this LIKE takes * and ?: for SQL's %, start the filter with WHERE"), "\(term.text)")
        Self.filter(b, "year IS NULL")
        #expect(b.state.message?.contains("(for SQL, start the filter with WHERE)") == true, "\(b.state.message ?? "")")
        Self.filter(b, "WHERE year IS NULL OR title LIKE 'movie 1%'")
        #expect(b.state.count == 11)
    }

    @Test("A condition with ; or a comment, or a name SQLite does not know: one line, the rows and file as they were")
    func badConditionsAreRefused() throws {
        let dir = TempDir()
        let path = try QuerySheetTests.makeFile(dir)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let (b, _) = try Self.browser(path)
        Self.filter(b, "WHERE 1; DROP TABLE movie")
        #expect(b.state.message?.contains("holds ; — one condition runs") == true, "\(b.state.message ?? "")")
        // The prompt is back with the line, to fix.
        if case .prompt(.filter, let line) = b.state.mode { #expect(line.text == "WHERE 1; DROP TABLE movie") } else { Issue.record("\(b.state.mode)") }
        #expect(b.state.count == 30 && b.state.filter.isEmpty)
        Self.filter(b, "WHERE year > 1 -- )")
        #expect(b.state.message?.contains("holds a comment") == true, "\(b.state.message ?? "")")
        Self.filter(b, "WHERE yeer > 1")
        #expect(b.state.message?.contains("no such column: yeer") == true, "\(b.state.message ?? "")")
        #expect(b.state.count == 30)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try QuerySheetTests.table(path, "SELECT count(*) FROM movie") == ["30"])
    }
}
