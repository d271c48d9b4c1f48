@testable import BatchStore
import Foundation
import GRDB
import Testing

/// The result of a SQL query as an entity (`PersistentStore.Options.query`): refused unless it is
/// one statement that only reads, and otherwise read, filtered and sorted as SQLite itself
/// answers the query (the oracle is the same query run directly on the file).
@Suite struct QueryResultTests {
    static let schema = """
        CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT, born INTEGER);
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL, director_id INTEGER, genre TEXT);
        CREATE TABLE tag(code TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID;
        CREATE TABLE movie_tag(movie_id INTEGER, code TEXT);
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 12)
          INSERT INTO director SELECT i, CASE WHEN i % 5 = 0 THEN NULL ELSE 'Director ' || (i % 7) END, 1900 + i * 3 FROM c;
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)
          INSERT INTO movie SELECT i, 'Movie ' || (i % 40), CASE WHEN i % 11 = 0 THEN NULL ELSE 1950 + i % 60 END,
            CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 9) + 0.5 END, CASE WHEN i % 17 = 0 THEN 99 ELSE i % 12 + 1 END,
            CASE i % 4 WHEN 0 THEN 'Noir' WHEN 1 THEN 'Drama' WHEN 2 THEN NULL ELSE 'noir' END FROM c;
        INSERT INTO tag VALUES ('cl', 'classic'), ('nw', 'new'), ('Cl', 'Classic'), ('x', NULL);
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200)
          INSERT INTO movie_tag SELECT i * 7 % 320, CASE i % 5 WHEN 0 THEN 'cl' WHEN 1 THEN 'nw' WHEN 2 THEN 'Cl' WHEN 3 THEN 'zz' ELSE NULL END FROM c;
        INSERT INTO movie_tag VALUES (1, 'cl'), (1, 'cl');
        """

    /// Queries over the schema: joins (inner, outer, along dangling keys), aggregates, DISTINCT,
    /// UNION, window functions, VALUES, text keys, NULLs, duplicate rows and duplicate column names.
    static let bases = [
        "SELECT m.title, m.year, d.name FROM movie m LEFT JOIN director d ON d.id = m.director_id",
        "SELECT m.id, m.title, d.name, d.born FROM movie m JOIN director d ON d.id = m.director_id WHERE m.rating > 3",
        "SELECT genre, count(*) AS n, avg(rating) AS r FROM movie GROUP BY genre",
        "SELECT DISTINCT year FROM movie",
        "SELECT code, count(movie_id) FROM movie_tag GROUP BY code",
        "SELECT title FROM movie WHERE year < 1970 UNION ALL SELECT name FROM director",
        "SELECT title, year FROM movie UNION SELECT name, born FROM director",
        "WITH r AS (SELECT id, rating FROM movie WHERE rating IS NOT NULL) SELECT id, rating, rank() OVER (ORDER BY rating DESC) AS place FROM r",
        "SELECT t.label, m.title, m.title, mt.code FROM movie_tag mt LEFT JOIN tag t ON t.code = mt.code LEFT JOIN movie m ON m.id = mt.movie_id",
        "VALUES (1, 'a'), (NULL, 'b'), (2, NULL), (1, 'a')",
        "SELECT * FROM movie_tag",
        "SELECT year, genre, rating * 2 AS double_rating, length(title) FROM movie WHERE genre IS NOT NULL",
    ]

    static func values(of rows: [[SQLValue]]) -> [String] { rows.map { $0.map(\.description).joined(separator: "|") } }

    /// The query's rows as SQLite answers it on a plain connection.
    static func oracle(_ path: String, _ sql: String) throws -> (columns: [String], rows: [[SQLValue]]) {
        try DatabaseQueue(path: path).read { db in
            let statement = try db.makeStatement(sql: sql)
            let rows = try Row.fetchAll(statement).map { row in (0..<row.count).map { SQLValue(row[$0] as DatabaseValue) } }
            return (statement.columnNames, rows)
        }
    }

    /// SQLite's order of values: NULL, numbers, text (by bytes), blobs.
    static func ascending(_ a: SQLValue, _ b: SQLValue) -> Bool {
        func rank(_ v: SQLValue) -> Int { switch v { case .null: 0; case .integer, .real: 1; case .text: 2; case .blob: 3 } }
        if rank(a) != rank(b) { return rank(a) < rank(b) }
        switch (a, b) {
        case (.text(let x), .text(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        default: return (a.doubleValue ?? 0) < (b.doubleValue ?? 0)
        }
    }

    /// NSPredicate's `==` of two non-nil values.
    static func equal(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.integer, .integer), (.integer, .real), (.real, .integer), (.real, .real): return a.doubleValue == b.doubleValue
        case (.text(let x), .text(let y)): return Array(x.utf8) == Array(y.utf8)
        default: return a == b
        }
    }

    /// Random queries, each browsed whole, sorted by a column and filtered on a value, against the
    /// query run directly. A failure names the seed, step and query.
    @Test func resultsEqualSQLitesAnswer() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        var rng = SplitMix64(seed: 37)
        for step in 0..<60 {
            var sql = Self.bases[rng.below(Self.bases.count)]
            let ordered = rng.below(2) == 0
            let oracle0 = try Self.oracle(path, sql)
            if ordered {
                if sql.hasPrefix("VALUES") { sql = "SELECT * FROM (\(sql))" }
                // Every column, so ties are identical rows and the order is exact.
                sql += " ORDER BY " + (1...oracle0.columns.count).map { "\($0)\(rng.below(2) == 0 ? "" : " DESC")" }.joined(separator: ", ")
            }
            let expected = try Self.oracle(path, sql)
            let store = try PersistentStore(path: path, options: .init(readOnly: rng.below(2) == 0, query: sql))
            let entity = try #require(store.queryEntity)
            let context = try ManagedObjectContext(store: store)
            let names = entity.attributes.map(\.name)
            #expect(names.count == expected.columns.count, "step \(step): \(sql)")
            func read(_ request: BatchStore.FetchRequest) throws -> [[SQLValue]] {
                try context.fetchBatched(request).map { object in try names.map { try object?.value(forKey: $0) ?? .null } }
            }
            let batch = 1 + rng.below(40)
            let all = try read(FetchRequest(entityName: entity.name, fetchBatchSize: batch))
            if ordered {
                #expect(Self.values(of: all) == Self.values(of: expected.rows), "step \(step): \(sql)")
            } else {
                #expect(Self.values(of: all).sorted() == Self.values(of: expected.rows).sorted(), "step \(step): \(sql)")
            }
            // Sorted by one column: the same rows, in the column's order.
            let c = rng.below(names.count), up = rng.below(2) == 0
            let sorted = try read(FetchRequest(entityName: entity.name, sortDescriptors: [SortDescriptor(key: names[c], ascending: up)], fetchBatchSize: batch))
            #expect(Self.values(of: sorted).sorted() == Self.values(of: expected.rows).sorted(), "step \(step): sort \(names[c]) of \(sql)")
            for (a, b) in zip(sorted, sorted.dropFirst()) {
                let inOrder = up ? !Self.ascending(b[c], a[c]) : !Self.ascending(a[c], b[c])
                #expect(inOrder, "step \(step): sort \(names[c]) \(up ? "asc" : "desc") of \(sql): \(a[c].description) before \(b[c].description)")
                if !inOrder { break }
            }
            // Filtered on a value the column holds (or on nil): the rows NSPredicate's == keeps, in
            // the query's order.
            guard !expected.rows.isEmpty else { continue }
            let pick = expected.rows[rng.below(expected.rows.count)][c]
            let predicate = try FetchPredicate(format: "%K == %@", arguments: [.key(names[c]), .value(pick)])
            let filtered = try read(FetchRequest(entityName: entity.name, predicate: predicate, fetchBatchSize: batch))
            let kept = expected.rows.filter { pick == .null ? $0[c] == .null : $0[c] != .null && Self.equal($0[c], pick) }
            // A search in place (the browser's `/`, `n`, `N`) finds the rows the filter keeps, in
            // result order, both ways, over the rows as fetched.
            let rows = try context.fetchBatched(FetchRequest(entityName: entity.name, fetchBatchSize: batch))
            let fetched = try rows.map { object in try names.map { try object?.value(forKey: $0) ?? .null } }
            let matches = fetched.indices.filter { i in pick == .null ? fetched[i][c] == .null : fetched[i][c] != .null && Self.equal(fetched[i][c], pick) }
            let start = rng.below(fetched.count + 1) - 1
            let forward = try rows.firstPosition(matching: predicate, after: start)
            #expect(forward == matches.first { $0 > start }, "step \(step): search after \(start) for \(names[c]) == \(pick.description) in \(sql)")
            let backward = try rows.firstPosition(matching: predicate, after: start + 1, backwards: true)
            #expect(backward == matches.last { $0 < start + 1 }, "step \(step): search back from \(start + 1) in \(sql)")
            if ordered {
                #expect(Self.values(of: filtered) == Self.values(of: kept), "step \(step): \(names[c]) == \(pick.description) in \(sql)")
            } else {
                #expect(Self.values(of: filtered).sorted() == Self.values(of: kept).sorted(), "step \(step): \(names[c]) == \(pick.description) in \(sql)")
            }
        }
        // Reading queries never wrote to the file.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// Anything but one statement that only reads is refused when the store opens, with one line
    /// naming why, and nothing is run: the file is byte for byte what it was, and ATTACH made no file.
    @Test func onlyOneReadRuns() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let attached = dir.path("attached.sqlite")
        let refused: [(String, String)] = [
            ("DELETE FROM movie", "not a query"),
            ("UPDATE movie SET year = 1", "not a query"),
            ("INSERT INTO tag VALUES ('q', 'q')", "not a query"),
            ("WITH d AS (SELECT 1) DELETE FROM movie", "would write"),
            ("PRAGMA user_version = 7", "not a query"),
            ("PRAGMA journal_mode = WAL", "not a query"),
            ("ATTACH '\(attached)' AS other", "not a query"),
            ("SELECT 1; DELETE FROM movie", "more than one statement"),
            ("SELECT 1; SELECT 2", "more than one statement"),
            ("BEGIN IMMEDIATE", "not a query"),
            ("EXPLAIN SELECT * FROM movie", "not a query"),
            ("CREATE TABLE x(a)", "not a query"),
            ("VACUUM", "not a query"),
            ("", "empty"),
            ("  -- only a comment\n", "empty"),
            ("SELECT * FROM movie WHERE", "at character"),
            ("SELECT nope FROM movie", "no such column"),
            // The one table-valued pragma that writes (it may run ANALYZE), however it is written.
            ("SELECT * FROM pragma_optimize", "pragma_optimize"),
            ("SELECT id FROM movie UNION ALL SELECT 0 FROM \"PRAGMA_OPTIMIZE\"(1)", "pragma_optimize"),
            ("SELECT 1\u{0}; DELETE FROM movie", "NUL"),
            ("SELECT 1; DROP TABLE movie", "the second starts at character 11"),
            ("SELECT 1 /* never closed", "/* comment"),
        ]
        for (sql, words) in refused {
            let error = #expect(throws: BatchStoreError.self, "\(sql)") {
                _ = try PersistentStore(path: path, options: .init(query: sql))
            }
            #expect(error?.code == .invalidQuery, "\(sql)")
            #expect(error?.message.contains(words) == true, "\(sql): \(error?.message ?? "")")
            #expect(error?.message.contains("\n") == false, "\(sql)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: attached))
    }

    /// What is accepted around the one statement: comments, a final `;`, a `--` comment at the end
    /// (which must not swallow the wrapping), and the entity's name when a table is called `query`.
    @Test func oneStatementWithItsComments() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema + "CREATE TABLE query(a);")
        let accepted = [
            "/* lead */ SELECT id FROM movie WHERE id <= 3;", "SELECT id FROM movie WHERE id <= 3 -- the end",
            "select id from movie where id <= 3 ;  -- done\n", ";SELECT id FROM movie WHERE id <= 3",
            // Windows line ends after a leading comment; a comment whose dashes a combining mark follows.
            "-- the first three\r\nSELECT id FROM movie WHERE id <= 3;\r\n", "SELECT id FROM movie WHERE id <= 3 --\u{301}x",
        ]
        for sql in accepted {
            let store = try PersistentStore(path: path, options: .init(query: sql))
            let entity = try #require(store.queryEntity)
            #expect(entity.name == "query_2")
            #expect(entity.isReadOnly)
            let rows = try ManagedObjectContext(store: store).fetchBatched(FetchRequest(entityName: entity.name, predicate: try FetchPredicate("id >= 2")))
            #expect(try rows.map { try $0?.value(forKey: "id") } == [.integer(2), .integer(3)], "\(sql)")
        }
    }

    /// A search in a result without a row key names the position apart from every column, one
    /// called `bs_pos` included.
    @Test func searchWhereAColumnIsCalledLikeThePosition() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let store = try PersistentStore(path: path, options: .init(query: "SELECT 'x' || id AS bs_pos, title AS BS_POS_2, year FROM movie ORDER BY id"))
        let entity = try #require(store.queryEntity)
        let rows = try ManagedObjectContext(store: store).fetchBatched(FetchRequest(entityName: entity.name, fetchBatchSize: 10))
        #expect(try rows.firstPosition(matching: try FetchPredicate(format: "bs_pos == 'x5'"), after: -1) == 4)
        #expect(try rows.firstPosition(matching: try FetchPredicate(format: "BS_POS_2 == 'Movie 7'"), after: 10) == 46)
        #expect(try rows.firstPosition(matching: try FetchPredicate(format: "bs_pos == 'x5'"), after: 4) == nil)
    }

    /// Duplicate column names are told apart as SQLite names them in a subquery, and each reads its own value.
    @Test func duplicateColumnNames() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let store = try PersistentStore(path: path, options: .init(query: "SELECT m.id, d.id, m.title, d.name AS title FROM movie m JOIN director d ON d.id = m.director_id WHERE m.id = 5"))
        let entity = try #require(store.queryEntity)
        #expect(Set(entity.attributes.map(\.name)).count == 4)
        let object = try #require(try ManagedObjectContext(store: store).fetchBatched(FetchRequest(entityName: entity.name)).first ?? nil)
        #expect(try entity.attributes.map { try object.value(forKey: $0.name) } == [.integer(5), .integer(6), .text("Movie 5"), .text("Director 6")])
    }
}
