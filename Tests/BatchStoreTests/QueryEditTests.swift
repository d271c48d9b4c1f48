@testable import BatchStore
import Foundation
import GRDB
import Testing

/// Edits through a query's result (``Entity/editTables``): which tables its rows name by key, and
/// deletes, updates and undo of marked rows acting on exactly those tables' rows, checked after
/// each step against a model of what the file must hold.
@Suite struct QueryEditTests {
    static let schema = QueryResultTests.schema + """
        CREATE VIEW good AS SELECT id, title FROM movie WHERE rating > 5;
        CREATE TABLE odd(rowid TEXT, v INTEGER);
        INSERT INTO odd VALUES ('7', 1), ('x', 2);
        CREATE TABLE dk(id INTEGER PRIMARY KEY DESC, x TEXT);
        INSERT INTO dk VALUES (10, 'a'), (1, 'b');
        CREATE TABLE ck(a INTEGER, b TEXT, v INTEGER, PRIMARY KEY (a, b));
        CREATE TABLE wk(a TEXT, b INTEGER, v INTEGER, PRIMARY KEY (b, a)) WITHOUT ROWID;
        INSERT INTO wk VALUES ('p', 1, 10), ('q', 1, 20), ('p', 2, 30), ('q', 2, 40);
        """

    /// The tables each query's rows name, in column order, or why there are none.
    @Test func editTablesFollowKeysAndShapes() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let cases: [(sql: String, tables: [String], why: String?)] = [
            ("SELECT m.id, m.title, d.name FROM movie m JOIN director d ON d.id = m.director_id", ["movie"], nil),
            ("SELECT d.id AS did, m.id, d.name FROM movie m JOIN director d ON d.id = m.director_id", ["director", "movie"], nil),
            ("SELECT main.movie.title, main.movie.rowid FROM main.movie", ["movie"], nil),
            ("SELECT rowid, * FROM movie_tag", ["movie_tag"], nil),
            ("SELECT * FROM movie_tag", [], "no table's whole key"),
            ("SELECT label, code FROM tag WHERE label <> 'union distinct'", ["tag"], nil),
            ("SELECT label FROM tag", [], "no table's whole key"),
            ("WITH x AS (SELECT id, title FROM movie WHERE year > 1990) SELECT * FROM x", ["movie"], nil),
            ("SELECT id + 0 AS id, title FROM movie", [], "no table's whole key"),
            ("SELECT genre, count(*) FROM movie GROUP BY genre", [], "aggregate count()"),
            ("SELECT genre, year FROM movie GROUP BY genre, year", [], "GROUP BY"),
            ("SELECT id, max(rating) FROM movie", [], "aggregate max()"),
            ("SELECT id, title, \"count\"(*) AS n FROM movie", [], "aggregate count()"),
            ("SELECT DISTINCT id FROM movie", [], "DISTINCT"),
            ("SELECT id FROM movie UNION ALL SELECT id FROM director", [], "UNION"),
            ("SELECT id, rank() OVER (ORDER BY rating) FROM movie", [], "window"),
            ("SELECT a.id, b.title FROM movie a JOIN movie b ON b.id = a.id + 1", [], "reads movie more than once"),
            ("SELECT id, title FROM good", [], "view good"),
            ("SELECT \"count\".id FROM movie AS \"count\"", ["movie"], nil),
            // A column called rowid: SQLite names the rowid's origin `rowid` too, so neither is a key.
            ("SELECT rowid, v FROM odd", [], "no table's whole key"),
            ("SELECT _rowid_, v FROM odd", [], "no table's whole key"),
            // A CTE read twice reads its table twice.
            ("WITH c AS (SELECT * FROM movie) SELECT a.id, b.title FROM c a JOIN c b ON b.id = a.id + 1", [], "reads c more than once"),
            ("WITH c(i, t) AS MATERIALIZED (SELECT id, title FROM movie) SELECT i, t FROM c", ["movie"], nil),
            // INTEGER PRIMARY KEY DESC is not the rowid: only the rowid itself names a row.
            ("SELECT id, x FROM dk", [], "no table's whole key"),
            ("SELECT rowid, id, x FROM dk", ["dk"], nil),
            // A rowid table's composite key is not its row key; a WITHOUT ROWID table's is.
            ("SELECT a, b, v FROM ck", [], "no table's whole key"),
            ("SELECT v, a, b FROM wk", ["wk"], nil),
        ]
        for c in cases {
            let store = try PersistentStore(path: path, options: .init(query: c.sql))
            let entity = try #require(store.queryEntity)
            #expect(entity.editTables.map(\.table) == c.tables, "\(c.sql)")
            if let why = c.why {
                #expect(entity.engineReadOnlyReason?.contains(why) == true, "\(c.sql): \(entity.engineReadOnlyReason ?? "no reason")")
            } else {
                #expect(entity.engineReadOnlyReason == nil, "\(c.sql)")
            }
        }
        let join = try PersistentStore(path: path, options: .init(query: cases[1].sql))
        let movie = try #require(join.queryEntity?.editTables.last)
        #expect(movie.keyAttributes == ["id"])
        #expect(movie.column(for: "id") == "id")
        #expect(movie.column(for: "ID") == nil)
        #expect(movie.column(for: "name") == nil)
    }

    struct Model: Equatable {
        var movies: [Int64: [SQLValue]] = [:]
        var directors: [Int64: [SQLValue]] = [:]
        var tags: [String: [SQLValue]] = [:]

        static func read(_ path: String) throws -> Model {
            try DatabaseQueue(path: path).read { db in
                var m = Model()
                for row in try Row.fetchAll(db, sql: "SELECT id, title, year, rating, director_id, genre FROM movie") {
                    m.movies[row[0]] = (1..<6).map { SQLValue(row[$0] as DatabaseValue) }
                }
                for row in try Row.fetchAll(db, sql: "SELECT id, name, born FROM director") {
                    m.directors[row[0]] = (1..<3).map { SQLValue(row[$0] as DatabaseValue) }
                }
                for row in try Row.fetchAll(db, sql: "SELECT code, label FROM tag") {
                    m.tags[row[0]] = [SQLValue(row[1] as DatabaseValue)]
                }
                return m
            }
        }
    }

    /// Random marks on random queries, deleted or updated through a random edit table, sometimes
    /// undone: after each step the file holds exactly the model, which changed only the rows the
    /// marked rows' keys name (the whole result's, unmarked).
    @Test func editsThroughAQueryActOnTheNamedRowsOnly() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let queries = [
            "SELECT m.id, m.title, m.year, d.name FROM movie m LEFT JOIN director d ON d.id = m.director_id WHERE m.year > 1960",
            "SELECT m.id, m.title, m.year, d.name FROM movie m LEFT JOIN director d ON d.id = m.director_id ORDER BY m.year DESC, m.id",
            "SELECT d.id AS did, d.name, m.id, m.year FROM director d JOIN movie m ON m.director_id = d.id WHERE m.rating > 2",
            "SELECT m.year, d.id, d.born FROM movie m LEFT JOIN director d ON d.id = m.director_id",
            "SELECT code, label FROM tag WHERE label IS NOT NULL OR code = 'x'",
        ]
        var model = try Model.read(path)
        var rng = SplitMix64(seed: 3_737)
        var done: [String: Int] = [:]
        for step in 0..<80 {
            let sql = queries[rng.below(queries.count)]
            let store = try PersistentStore(path: path, options: .init(query: sql))
            let context = try ManagedObjectContext(store: store)
            let entity = try #require(store.queryEntity)
            let result = try context.fetchBatched(FetchRequest(entityName: entity.name, fetchBatchSize: 1 + rng.below(30)))
            let names = entity.attributes.map(\.name)
            let rows = try result.map { object in try names.map { try object?.value(forKey: $0) ?? .null } }
            guard !rows.isEmpty, !result.editTables.isEmpty else { continue }
            let tableName = result.editTables[rng.below(result.editTables.count)]
            let edit = try #require(entity.editTables.first { $0.table == tableName })
            let keyIndexes = edit.keyAttributes.compactMap { entity.indexOfAttribute(named: $0) }
            let all = rng.below(8) == 0
            let picked = all ? Array(rows.indices) : (0..<(1 + rng.below(4))).map { _ in rng.below(rows.count) }
            // The keys the picked rows name: NULL names nothing; each once.
            var keys: [SQLValue] = []
            for p in picked where !keyIndexes.contains(where: { rows[p][$0].isNull }) {
                let k = rows[p][keyIndexes[0]]
                if !keys.contains(k) { keys.append(k) }
            }
            let marked = all ? nil : try result.objectIDs(in: tableName, for: picked.map { try #require(result[$0]?.objectID) })
            if let marked {
                #expect(marked.map { $0.keyValues[0] } == keys, "step \(step): \(tableName) keys of rows \(picked) in \(sql)")
            }
            let before = model
            if !keys.isEmpty { done[tableName, default: 0] += 1 }
            let deleting = rng.below(2) == 0 || tableName == "tag"
            if deleting {
                let request = marked.map { BatchDeleteRequest(objectIDs: $0) } ?? BatchDeleteRequest(fetchRequest: FetchRequest(entityName: tableName))
                #expect(try result.count(forDelete: request) == keys.count, "step \(step): delete count in \(sql)")
                _ = try result.execute(request, undoable: true)
                for k in keys {
                    switch (tableName, k) {
                    case ("movie", .integer(let id)): model.movies[id] = nil
                    case ("director", .integer(let id)): model.directors[id] = nil
                    case ("tag", .text(let code)): model.tags[code] = nil
                    default: Issue.record("step \(step): key \(k.description) of \(tableName)")
                    }
                }
            } else {
                let assignment = tableName == "movie" ? "year = coalesce(year, 0) + 1" : "born = coalesce(born, 0) - 1"
                let request = BatchUpdateRequest(entityName: tableName, propertiesToUpdate: try UpdateExpression.parseAssignments(assignment))
                #expect(try result.count(forUpdate: request, objectIDs: marked) == keys.count, "step \(step): update count in \(sql)")
                _ = try result.execute(request, objectIDs: marked, undoable: true)
                for case .integer(let id) in keys {
                    if tableName == "movie", let row = model.movies[id] {
                        model.movies[id]?[1] = .integer((row[1].integerValue ?? 0) + 1)
                    } else if let row = model.directors[id] {
                        model.directors[id]?[1] = .integer((row[1].integerValue ?? 0) - 1)
                    }
                }
            }
            #expect(try Model.read(path) == model, "step \(step): \(deleting ? "delete" : "update") of \(tableName) through \(sql)")
            // Undone often (always after a whole result's delete), so that rows remain to edit.
            if !keys.isEmpty, all || rng.below(2) == 0 {
                _ = try context.undo()
                model = before
                #expect(try Model.read(path) == model, "step \(step): undo of \(tableName) through \(sql)")
            }
        }
        // Every table was edited through a query, most of them several times.
        #expect(done.keys.sorted() == ["director", "movie", "tag"] && done.values.reduce(0, +) >= 50, "\(done)")
    }

    /// Keys that are not one integer column: the rowid of a table whose INTEGER PRIMARY KEY DESC is
    /// not its rowid, and a WITHOUT ROWID table's key in another order than the query's columns.
    @Test func editsByRowidAndCompositeKeys() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let dk = try PersistentStore(path: path, options: .init(query: "SELECT rowid, id, x FROM dk WHERE x = 'b'"))
        let dkRows = try ManagedObjectContext(store: dk).fetchBatched(FetchRequest(entityName: try #require(dk.queryEntity).name))
        let ids = try dkRows.objectIDs(in: "dk", for: [try #require(dkRows[0]?.objectID)])
        _ = try dkRows.execute(BatchDeleteRequest(objectIDs: ids))
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT id || x FROM dk") } == ["10a"])

        let wk = try PersistentStore(path: path, options: .init(query: "SELECT v, a, b FROM wk WHERE v > 10 ORDER BY v DESC"))
        let wkEntity = try #require(wk.queryEntity)
        #expect(wkEntity.editTables.first?.keyAttributes == ["b", "a"])
        let wkRows = try ManagedObjectContext(store: wk).fetchBatched(FetchRequest(entityName: wkEntity.name))
        // Rows 40 (q, 2) and 20 (q, 1).
        let named = try wkRows.objectIDs(in: "wk", for: [try #require(wkRows[0]?.objectID), try #require(wkRows[2]?.objectID)])
        #expect(named.map(\.keyValues) == [[.integer(2), .text("q")], [.integer(1), .text("q")]])
        #expect(try wkRows.count(forDelete: BatchDeleteRequest(objectIDs: named)) == 2)
        _ = try wkRows.execute(BatchDeleteRequest(objectIDs: named))
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT v FROM wk ORDER BY v") } == [10, 30])
    }

    /// `fetch(sql:arguments:batchSize:)`: each query becomes an entity of the store (`query`,
    /// `query_2`…), its `?` bound in order (not inside strings or quoted names), its rows SQLite's,
    /// its edits through the tables it names; a wrong argument count, a named parameter or a
    /// write is refused and adds nothing.
    @Test func fetchSQLAddsQueries() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let sql = "SELECT '?' AS q, \"a?b\".id, \"a?b\".title FROM movie AS \"a?b\" WHERE year >= ? AND title <> ? -- ?\n ORDER BY id"
        let arguments: [SQLValue] = [.integer(1990), .text("it's ? 'quoted'")]
        let rows = try context.fetch(sql: sql, arguments: arguments, batchSize: 7)
        let expected = try direct(path) { db in
            try Row.fetchAll(db, sql: sql, arguments: [1990, "it's ? 'quoted'"]).map { row in (0..<row.count).map { SQLValue(row[$0] as DatabaseValue) } }
        }
        let names = rows.entity.attributes.map(\.name)
        let got = try rows.map { o in try names.map { try o?.value(forKey: $0) ?? .null } }
        #expect(!expected.isEmpty && QueryResultTests.values(of: got) == QueryResultTests.values(of: expected))
        #expect(rows.entity.name == "query" && rows.editTables == ["movie"])
        let second = try context.fetch(sql: "SELECT code, label FROM tag")
        #expect(second.entity.name == "query_2" && second.editTables == ["tag"])
        #expect(store.queryEntity == nil)
        // Edits through it.
        let first = try #require(rows[0]?.objectID)
        let named = try rows.objectIDs(in: "movie", for: [first])
        _ = try rows.execute(BatchDeleteRequest(objectIDs: named))
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE id = ?", arguments: [named[0].keyValues[0].integerValue]) } == 0)
        // Refusals add nothing.
        let before = store.schema.entities.count
        for (bad, args, words) in [("SELECT id FROM movie WHERE id = ?", [SQLValue](), "1 ? parameter and 0 arguments"),
                                   ("SELECT id FROM movie WHERE id = :id", [.integer(1)], "parameter :id is named"),
                                   ("SELECT id FROM movie WHERE id = ?2", [.integer(1), .integer(2)], "parameter ?2 is named"),
                                   ("DELETE FROM movie WHERE id = ?", [.integer(1)], "DELETE is not a query")] {
            let error = #expect(throws: BatchStoreError.self) { _ = try context.fetch(sql: bad, arguments: args) }
            #expect(error?.message.contains(words) == true, "\(bad): \(error?.message ?? "no error")")
        }
        #expect(store.schema.entities.count == before)
    }

    /// An edit names a table the query's rows do not name by key, or the query itself: refused,
    /// nothing written.
    @Test func editsOfOtherTablesAreRefused() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.schema)
        let before = try Model.read(path)
        let store = try PersistentStore(path: path, options: .init(query: "SELECT m.id, m.title, d.name FROM movie m JOIN director d ON d.id = m.director_id"))
        let context = try ManagedObjectContext(store: store)
        let entity = try #require(store.queryEntity)
        let result = try context.fetchBatched(FetchRequest(entityName: entity.name))
        let first = try #require(result[0]?.objectID)
        #expect(throws: BatchStoreError.self) { try result.objectIDs(in: "director", for: [first]) }
        #expect(throws: BatchStoreError.self) { try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director"))) }
        #expect(throws: BatchStoreError.self) { try result.execute(BatchDeleteRequest(objectIDs: [first])) }
        #expect(throws: BatchStoreError.self) { try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: entity.name))) }
        let update = BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("year = 1"))
        let director = ObjectID(entity: try #require(store.schema.entity(named: "director")), key: .rowid(1))
        #expect(throws: BatchStoreError.self) { try result.execute(update, objectIDs: [director]) }
        #expect(try Model.read(path) == before)
    }
}
