@testable import BatchStore
import Foundation
import GRDB
import Testing

/// SQL conditions (`FetchPredicate(sql:)`, a filter's `WHERE …`): refused unless they stay one
/// expression, and otherwise keeping exactly the rows SQLite's own `WHERE` keeps, in fetches,
/// searches over the ID table and batch edits (the oracle is the condition run directly on the file).
@Suite struct SQLConditionTests {
    static let schema = QueryResultTests.schema + """
        CREATE VIEW good AS SELECT id, title, year FROM movie WHERE rating > 5;
        CREATE TABLE ids(pos INTEGER, c0 TEXT, store INTEGER);
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50)
          INSERT INTO ids SELECT 51 - i, CASE WHEN i % 3 = 0 THEN NULL ELSE 'v' || i END, i % 4 FROM c;
        """

    /// Each text is refused before anything runs, with one line naming why and where.
    @Test func conditionsThatLeaveTheirParenthesesAreRefused() throws {
        let cases: [(String, String)] = [
            ("", "is empty"),
            ("   ", "is empty"),
            ("1; DROP TABLE movie", "holds ; — one condition runs, no statement after it (character 2)"),
            ("year > 1990 -- and more", "holds a comment (character 13)"),
            ("year > 1990 /* c */", "holds a comment"),
            ("year > ?", "holds the parameter ?: write the value itself (character 8)"),
            ("year > :y", "holds the parameter :y"),
            ("title = 'it''s", "has a string that is not closed (character 9)"),
            ("\"title = 1", "has a quoted name that is not closed (character 1)"),
            ("(year > 1990", "leaves a parenthesis open (character 1)"),
            ("year > 1990) OR (1", "closes a parenthesis it did not open (character 12)"),
            ("SELECT 1", "is a query, not a condition"),
            ("with x as (select 1) select 1", "is a query, not a condition"),
            ("year > 1\u{0}", "holds a NUL byte"),
            // SQLite's other parameters, with their Tcl forms, whose ( or ' is no bracket or quote.
            ("year > $x", "holds the parameter $x"),
            ("year > #x", "holds the parameter #x"),
            ("year > @x::y", "holds the parameter @x::y"),
            ("#a(') IS NULL OR 1)) --')", "holds the parameter #a(')"),
            ("$a(x y) = 1", "holds the parameter $a(x"),
            ("year IN (SELECT 1 FROM pragma_optimize)", "pragma_optimize"),
            // What would keep other rows each time it runs (to count, to edit, to undo).
            ("abs(random()) % 2 = 0", "calls random(), which answers differently each time it runs"),
            ("id IN (SELECT id FROM movie ORDER BY RANDOM() LIMIT 5)", "calls random()"),
            ("hex(randomblob (2)) > 'A'", "calls randomblob()"),
            ("changes() = 0", "calls changes()"),
            ("\"random\"() > 0", "calls random()"),
            ("year > strftime('%Y', 'NOW') - 30", "reads the clock ('now')"),
            ("title > datetime(('now'), '-1 day')", "reads the clock ('now')"),
            ("title < current_timestamp", "reads the clock (current_timestamp)"),
            ("title < date ( )", "reads the clock (date() with no time)"),
        ]
        for (text, why) in cases {
            #expect(throws: BatchStoreError.self, "\(text)") { try FetchPredicate(sql: text) }
            do {
                _ = try FetchPredicate(sql: text)
            } catch let error as BatchStoreError {
                #expect(error.code == .invalidQuery && error.message.contains(why), "\(text): \(error.message)")
                #expect(!error.message.contains("\n"), "\(text)")
            }
        }
        // Strings, quoted names and nested parentheses that hold the refused characters are fine.
        for text in ["title = ';' OR title = '--' OR \"ti)tle\" = 'x'", "(year > 1) AND ((rating < 2))", "title LIKE '(%'", "[ti;tle] = '?'",
                     "title > date('2020-01-01', '-1 day')", "\"random\" = 1", "title = 'now' OR title = 'random()'"] {
            #expect(try FetchPredicate(sql: text).format == "WHERE " + text)
        }
    }

    /// A filter is SQL when its first word is WHERE (any case), and NSPredicate's format otherwise.
    @Test func aFilterIsSQLAfterWhere() throws {
        #expect(FetchPredicate.sqlCondition(ofFilter: "WHERE year > 1") == " year > 1")
        #expect(FetchPredicate.sqlCondition(ofFilter: "  where\tyear > 1") == "\tyear > 1")
        #expect(FetchPredicate.sqlCondition(ofFilter: "whereabouts == 1") == nil)
        #expect(FetchPredicate.sqlCondition(ofFilter: "year > 1") == nil)
        #expect(try FetchPredicate(filter: "WHERE year > 1").node == .sql("year > 1"))
        #expect(try FetchPredicate(filter: "year > 1").node != .sql("year > 1"))
        let round = try FetchPredicate(filter: "where  title LIKE 'U%' ")
        #expect(round.format == "WHERE title LIKE 'U%'")
        #expect(try FetchPredicate(filter: round.format) == round)
        #expect(throws: BatchStoreError.self) { try FetchPredicate(filter: "WHERE") }
        // Positions count in what was typed, WHERE and spaces included.
        #expect(throws: BatchStoreError(.invalidQuery, "the SQL condition holds the parameter ?: write the value itself (character 16)")) {
            try FetchPredicate(filter: "WHERE   year > ?")
        }
        // A column named where is written in backticks where a filter is made for it.
        #expect(FetchPredicate.formatKey("where") == "`where`" && FetchPredicate.formatKey("Where") == "`Where`")
        #expect(FetchPredicate.sqlCondition(ofFilter: FetchPredicate.formatKey("where") + " == 1") == nil)
        // A dollar inside a name is a letter of it.
        #expect(SQLText("a$b = 1").lexemes.map(\.kind) == [.word, .symbol, .word])
    }

    /// `?` arguments written into a query: a negative number after `-` is not a comment.
    @Test func negativeArgumentsStayNumbers() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let store = try PersistentStore(path: path)
        let entity = try store.addQuery("SELECT id, genre FROM movie WHERE id = 10 -? AND genre = 'Drama' ORDER BY id", arguments: [.integer(-3)])
        let rows = try ManagedObjectContext(store: store).fetchBatched(FetchRequest(entityName: entity.name))
        #expect(rows.map { (try? $0?.value(forKey: "id"))?.integerValue ?? -1 } == [13])
    }

    static let atoms = [
        "year > 1980", "title LIKE 'movie 1%'", "rating IS NULL", "genre = 'noir'", "genre IN ('Noir', 'Drama')",
        "director_id IN (SELECT id FROM director WHERE name LIKE 'Director 3')", "t.year % 7 = 3", "coalesce(rating, 0) < 2",
        "title GLOB '*5'", "length(title) = 8", "year BETWEEN 1960 AND 1970", "rowid % 3 = 0", "genre > 'N'", "id = 17",
        "NOT EXISTS (SELECT 1 FROM movie_tag WHERE movie_id = t.id)", "rating * 2 >= year - 1950",
    ]

    static func condition(_ rng: inout SplitMix64, depth: Int = 0) -> String {
        if depth >= 2 || rng.below(3) == 0 { return atoms[rng.below(atoms.count)] }
        let a = condition(&rng, depth: depth + 1), b = condition(&rng, depth: depth + 1)
        switch rng.below(3) {
        case 0: return "(\(a)) AND (\(b))"
        case 1: return "(\(a)) OR \(b)"
        default: return "NOT (\(a))"
        }
    }

    /// Random conditions, alone and with an NSPredicate, under random sorts, batch sizes, limits
    /// and offsets: the result is the unfiltered result's order restricted to the rows SQLite's
    /// own `WHERE` keeps; a search with another condition finds the first such row after a position.
    @Test func conditionsKeepTheRowsSQLiteKeeps() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let sorts = [[], [SortDescriptor(key: "year")], [SortDescriptor(key: "title", ascending: false), SortDescriptor(key: "rating")]]
        var rng = SplitMix64(seed: 4_404)
        var partial = 0, searched = 0
        for step in 0..<60 {
            let text = Self.condition(&rng)
            let withPredicate = rng.below(3) == 0
            let sort = sorts[rng.below(sorts.count)]
            var predicate = try FetchPredicate(sql: text)
            if withPredicate { predicate = try FetchPredicate("year >= 1970") && predicate }
            let oracleWhere = withPredicate ? "(\(text)) AND year >= 1970" : text
            let matching = Set(try direct(path) { try Int64.fetchAll($0, sql: "SELECT id FROM movie AS t WHERE \(oracleWhere)") })
            let everything = try context.fetchBatched(FetchRequest(entityName: "movie", sortDescriptors: sort)).map { $0?.intID ?? -1 }
            var expected = everything.filter { matching.contains($0) }
            var request = FetchRequest(entityName: "movie", predicate: predicate, sortDescriptors: sort, fetchBatchSize: 1 + rng.below(40))
            if rng.below(3) == 0 {
                request.fetchOffset = rng.below(20)
                request.fetchLimit = 1 + rng.below(30)
                expected = Array(expected.dropFirst(request.fetchOffset).prefix(request.fetchLimit))
            }
            let result = try context.fetchBatched(request)
            let got = result.map { $0?.intID ?? -1 }
            #expect(got == expected, "step \(step): \(oracleWhere) sorted \(sort)")
            if !matching.isEmpty && matching.count < everything.count { partial += 1 }
            guard !got.isEmpty else { continue }
            let other = Self.atoms[rng.below(Self.atoms.count)]
            let hits = Set(try direct(path) { try Int64.fetchAll($0, sql: "SELECT id FROM movie AS t WHERE \(other)") })
            let from = rng.below(got.count)
            let next = got.indices.first { $0 > from && hits.contains(got[$0]) }
            #expect(try result.firstPosition(matching: try FetchPredicate(sql: other), after: from) == next, "step \(step): search \(other) after \(from)")
            if next != nil { searched += 1 }
        }
        // Most conditions keep some rows and not others; most searches find one.
        #expect(partial >= 35 && searched >= 20, "\(partial) partial, \(searched) found")
    }

    /// Columns named as the ID table's (`pos`, `c0`, `store`) and a table named `ids`: the
    /// condition's names are the table's, in a fetch and in a search that joins the ID table.
    @Test func namesAreTheTablesWhateverTheStatementJoins() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "ids", predicate: try FetchPredicate(sql: "pos > 40 OR c0 IS NULL"), fetchBatchSize: 7))
        let expected = try direct(path) { try Int64.fetchAll($0, sql: "SELECT rowid FROM ids WHERE pos > 40 OR c0 IS NULL ORDER BY rowid") }
        #expect(result.map { $0?.intID ?? -1 } == expected)
        let position = try result.firstPosition(matching: try FetchPredicate(sql: "store = 2 AND pos < 30"), after: 0)
        let rows = result.map { $0?.intID ?? -1 }
        let hits = Set(try direct(path) { try Int64.fetchAll($0, sql: "SELECT rowid FROM ids WHERE store = 2 AND pos < 30") })
        #expect(position == rows.indices.first { $0 > 0 && hits.contains(rows[$0]) })
        #expect(position != nil)
    }

    /// A view, a WITHOUT ROWID table and a query's result (read inline, `t.` naming their columns).
    @Test func viewsKeylessTablesAndQueries() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let view = try context.fetchBatched(FetchRequest(entityName: "good", predicate: try FetchPredicate(sql: "t.year > 1990 AND title LIKE '%1%'")))
        let viewRows = try direct(path) { try Int64.fetchAll($0, sql: "SELECT id FROM good WHERE year > 1990 AND title LIKE '%1%'") }
        #expect(Set(view.map { (try? $0?.value(forKey: "id"))?.integerValue ?? -1 }) == Set(viewRows))
        #expect(!viewRows.isEmpty)
        let tags = try context.fetchBatched(FetchRequest(entityName: "tag", predicate: try FetchPredicate(sql: "label LIKE 'c%'")))
        #expect(Set(tags.map { $0?.objectID.keyValues.first?.textValue ?? "" }) == ["cl", "Cl"])
        let query = try PersistentStore(path: path, options: .init(query: "SELECT m.title, d.name FROM movie m LEFT JOIN director d ON d.id = m.director_id"))
        let entity = try #require(query.queryEntity)
        let rows = try ManagedObjectContext(store: query).fetchBatched(FetchRequest(entityName: entity.name, predicate: try FetchPredicate(sql: "t.name IS NULL AND title LIKE '%7'")))
        let expected = try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie m LEFT JOIN director d ON d.id = m.director_id WHERE d.name IS NULL AND m.title LIKE '%7'") }
        #expect(rows.count == expected && rows.count > 0)
        // A name SQLite does not know is SQLite's error, one line.
        #expect(throws: BatchStoreError.self) { try context.fetchBatched(FetchRequest(entityName: "movie", predicate: try FetchPredicate(sql: "yeer > 1"))) }
    }

    /// Deletes and updates by a SQL condition change exactly the rows SQLite's `WHERE` names, and
    /// undo puts them back: checked against a model of the file after each step.
    @Test func editsByAConditionChangeItsRowsOnly() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        var rng = SplitMix64(seed: 5_505)
        var model = try QueryEditTests.Model.read(path)
        for step in 0..<30 {
            let text = Self.condition(&rng)
            let ids = try direct(path) { try Int64.fetchAll($0, sql: "SELECT id FROM movie AS t WHERE \(text)") }
            let predicate = try FetchPredicate(sql: text)
            let before = model
            if rng.below(2) == 0 {
                let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: predicate), resultType: .count), undoable: true)
                #expect(result.count == ids.count, "step \(step): delete \(text)")
                for id in ids { model.movies[id] = nil }
            } else {
                let request = BatchUpdateRequest(entityName: "movie", predicate: predicate, propertiesToUpdate: try UpdateExpression.parseAssignments("year = coalesce(year, 0) + 1"), resultType: .count)
                let result = try context.execute(request, undoable: true)
                #expect(result.count == ids.count, "step \(step): update \(text)")
                for id in ids {
                    let year = model.movies[id]?[1].integerValue ?? 0
                    model.movies[id]?[1] = .integer(year + 1)
                }
            }
            #expect(try QueryEditTests.Model.read(path) == model, "step \(step): \(text)")
            if !ids.isEmpty, rng.below(2) == 0 {
                _ = try context.undo()
                model = before
                #expect(try QueryEditTests.Model.read(path) == model, "step \(step): undo of \(text)")
            }
        }
    }
}
