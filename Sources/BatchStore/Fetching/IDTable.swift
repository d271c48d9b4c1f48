import Foundation
import GRDB

/// The row IDs of one result, in result order, in an SQLite temp table
/// `temp."bs_ids_…"(pos INTEGER PRIMARY KEY, <columns>)`: `key` (a rowid or a one-column primary
/// key), `k0, k1, …` (a composite key), `store, key` (a result over several stores), or `c0, c1, …`
/// (the values themselves, for a view without a row key). Positions are 1-based in SQL and 0-based
/// in Swift.
///
/// The IDs never enter Swift memory: filling, looking up, refreshing with anchors and testing
/// membership all run in SQLite. The table is dropped when the value goes away.
final class IDTable: IDStore {
    let connection: Connection
    /// The columns after `pos`.
    let columns: [String]
    /// The table's name; stable for the table's life (a refresh renames the new table to it).
    private(set) var name: String
    /// Rows in the table.
    private(set) var count = 0
    /// Counts fills and refills, so what is derived from the table's rows can tell it is stale.
    private(set) var generation = 0
    /// How long the last fill took, in seconds.
    private(set) var fillSeconds = 0.0
    /// True when the columns identify a row (a key); false when they are a view's values, which
    /// may repeat, so a refill keeps no anchor.
    let keyed: Bool

    init(connection: Connection, columns: [String], keyed: Bool) {
        self.connection = connection
        self.columns = columns
        self.keyed = keyed
        self.name = connection.makeTempTableName("bs_ids")
    }

    deinit { connection.dropTempTable(name) }

    /// `SQLite temp table <name>`, and its columns when they are not one key.
    var location: String {
        "SQLite temp table \(name)" + (columns == ["store", "key"] ? " (store, key)" : "")
    }

    /// `temp."<name>"`.
    var qualifiedName: String { "temp.\(quoteIdentifier(name))" }

    /// Creates and fills the table with `query`'s rows; on failure (or a cancel from `progress`,
    /// called about every 50 ms) no table is left.
    ///
    /// Runs `CREATE TEMP TABLE … (pos INTEGER PRIMARY KEY, …)`, then `INSERT INTO temp.… (…) <query>`.
    /// - Complexity: the query's, in SQLite; no row enters Swift memory.
    func fill(_ query: IDQuery, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        count = try build(name, query, progress: progress)
        generation += 1
    }

    /// `INSERT INTO temp."<name>" (<columns>) <query's SELECT>`.
    func fillSQL(_ query: IDQuery) -> String { insertSQL(into: name, query) }

    private func insertSQL(into name: String, _ query: IDQuery) -> String {
        "INSERT INTO temp.\(quoteIdentifier(name)) (\(columns.joined(separator: ", "))) \(query.select)"
    }

    private func build(_ name: String, _ query: IDQuery, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int {
        let started = DispatchTime.now().uptimeNanoseconds
        let list = columns.joined(separator: ", ")
        let connection = self.connection
        let n = try connection.withDatabase { db -> Int in
            try connection.createTempTable(db, named: name, "(pos INTEGER PRIMARY KEY, \(list))")
            do {
                let statement = try db.makeStatement(sql: insertSQL(into: name, query))
                if let progress {
                    let estimate = try query.estimateSQL.flatMap { try Int.fetchOne(db, sql: $0) }
                    try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                        try statement.execute(arguments: query.arguments.statementArguments)
                    }
                } else {
                    try statement.execute(arguments: query.arguments.statementArguments)
                }
            } catch {
                try? connection.dropTempTable(db, named: name)
                throw error
            }
            return db.changesCount
        }
        fillSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return n
    }

    /// Fills a new table with `query` and swaps it in under the same name: the fill, `DROP TABLE`
    /// and `ALTER TABLE … RENAME`.
    func replace(with query: IDQuery) throws {
        let fresh = connection.makeTempTableName("bs_ids")
        let newCount = try build(fresh, query, progress: nil)
        let old = name
        try connection.withDatabase { db in
            try connection.dropTempTable(db, named: old)
            try db.execute(sql: "ALTER TABLE temp.\(quoteIdentifier(fresh)) RENAME TO \(quoteIdentifier(old))")
        }
        count = newCount
        generation += 1
    }

    /// The ID columns of the row at `position`, or nil outside the table.
    /// - Complexity: one indexed lookup.
    func row(at position: Int) throws -> [SQLValue]? {
        guard position >= 0 && position < count else { return nil }
        let sql = "SELECT \(columns.joined(separator: ", ")) FROM \(qualifiedName) WHERE pos = ?"
        return try connection.withDatabase { db -> [SQLValue]? in
            // The cursor stays alive while the row is read: a row reads its statement.
            let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [position + 1])
            guard let row = try cursor.next() else { return nil }
            return (0..<row.count).map { SQLValue(row: row, at: $0) }
        }
    }

    /// The ID columns of the rows at `positions`, with each row's position.
    /// - Complexity: one range scan of the primary key.
    func rows(in positions: Range<Int>) throws -> [(position: Int, values: [SQLValue])] {
        let sql = "SELECT pos, \(columns.joined(separator: ", ")) FROM \(qualifiedName) WHERE pos BETWEEN ? AND ?"
        return try connection.withDatabase { db in
            let statement = try db.cachedStatement(sql: sql)
            let cursor = try Row.fetchCursor(statement, arguments: [positions.lowerBound + 1, positions.upperBound])
            var rows: [(position: Int, values: [SQLValue])] = []
            while let row = try cursor.next() {
                rows.append((Int(row[0] as Int64) - 1, (1..<row.count).map { SQLValue(row: row, at: $0) }))
            }
            return rows
        }
    }

    /// The first position whose ID columns are `values` (`IS`, so NULL keys of a view match).
    /// - Complexity: one scan of the table.
    func position(of values: [SQLValue]) throws -> Int? {
        let match = columns.map { "\($0) IS ?" }.joined(separator: " AND ")
        let sql = "SELECT pos FROM \(qualifiedName) WHERE \(match) LIMIT 1"
        return try connection.withDatabase { db in
            try Int.fetchOne(try db.cachedStatement(sql: sql).bound(values)).map { $0 - 1 }
        }
    }

    /// The nearest position that any of `queries` selects (each a `SELECT pos … LIMIT 1` over this
    /// table, run on its connection); `progress` is called about every 50 ms while SQLite scans.
    /// - Complexity: each query's, in SQLite.
    func nearest(_ queries: [IDQuery], backwards: Bool, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        let estimate = count
        var best: Int?
        for query in queries {
            let found = try connection.withDatabase { db -> Int? in
                let statement = try db.makeStatement(sql: query.select)
                guard let progress else { return try Int.fetchOne(statement, arguments: query.arguments.statementArguments) }
                var pos: Int?
                try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                    pos = try Int.fetchOne(statement, arguments: query.arguments.statementArguments)
                }
                return pos
            }
            if let pos = found {
                let p = pos - 1
                if best.map({ backwards ? p > $0 : p < $0 }) ?? true { best = p }
            }
        }
        return best
    }

    /// Which of `rows` (values of the ID columns) are in the table.
    ///
    /// Runs `SELECT <columns> FROM temp.… WHERE (<columns>) IN (VALUES (?, …), …)`, 500 rows at a time.
    /// - Complexity: one scan of the table per 500 rows; meant for hand-picked rows.
    func contains(_ rows: [[SQLValue]]) throws -> Set<[SQLValue]> {
        let tuple = sqlTuple(columns)
        let placeholder = sqlTuple(columns.map { _ in "?" })
        var found = Set<[SQLValue]>()
        try connection.withDatabase { db in
            for chunk in rows.chunks(of: 500) {
                let list = columns.count == 1
                    ? chunk.map { _ in "?" }.joined(separator: ", ")
                    : "VALUES " + chunk.map { _ in placeholder }.joined(separator: ", ")
                let sql = "SELECT \(columns.joined(separator: ", ")) FROM \(qualifiedName) WHERE \(tuple) IN (\(list))"
                let statement = try db.makeStatement(sql: sql).bound(chunk.flatMap { $0 })
                let cursor = try Row.fetchCursor(statement)
                while let row = try cursor.next() { found.insert((0..<row.count).map { SQLValue(row: row, at: $0) }) }
            }
        }
        return found
    }
}
