import Foundation
import GRDB

/// A ``FrequencyTable`` in an SQLite temp table, `temp."bs_freq_…"(pos INTEGER PRIMARY KEY, value, count)`.
final class SQLiteFrequencyTable: FrequencyTable {
    let figures: FrequencyFigures
    let mixesStorageClasses: Bool
    let connection: Connection
    let name: String

    /// Groups `values` (the attribute for each row of a result) into a new temp table on their
    /// connection; `estimate` is the rows it reads, for progress.
    ///
    /// Runs `CREATE TEMP TABLE "bs_freq_…"(pos INTEGER PRIMARY KEY, value, count INTEGER NOT NULL)`,
    /// `INSERT INTO temp."bs_freq_…"(value, count) SELECT value, count(*) FROM (<values>) GROUP BY
    /// value ORDER BY count(*) DESC, value`, then `SELECT sum(count), max(count)` over it. On a
    /// failure or a cancel from `progress` no table is left.
    /// - Complexity: SQLite's GROUP BY over the result's rows (a sort of the values); nothing but
    ///   the two sums enters Swift memory.
    ///
    /// With `binWidth`, the values are `SELECT CASE WHEN value < '' THEN (CAST(value / w AS INTEGER)
    /// - (CAST(value / w AS INTEGER) * w > value)) * w ELSE value END AS value FROM (<values>)` (`value
    /// < ''` holds for numbers alone: every number sorts before any text, blobs after text; the
    /// correction makes the truncating CAST a floor for negative numbers) and the groups are
    /// ordered by value.
    init(_ values: ColumnValues, binWidth: Int64? = nil, estimate: Int, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        let connection = values.connection
        self.connection = connection
        let name = connection.makeTempTableName("bs_freq")
        self.name = name
        let started = DispatchTime.now().uptimeNanoseconds
        let table = "temp.\(quoteIdentifier(name))"
        // Values group byte for byte, as `==` compares them (a NOCASE column's 'alice' and 'ALICE' are two).
        var select = values.select, order = "count(*) DESC, value COLLATE BINARY"
        if let w = binWidth {
            select = "SELECT \(ValueSelection.binned("value", width: w)) AS value FROM (\(values.select))"
            order = "value"
        }
        let sql = "INSERT INTO \(table) (value, count) SELECT value, count(*) FROM (\(select)) GROUP BY value COLLATE BINARY ORDER BY \(order)"
        let found = try connection.withDatabase { db -> (count: Int, total: Int, max: Int, classes: Int) in
            try connection.createTempTable(db, named: name, "(pos INTEGER PRIMARY KEY, value, count INTEGER NOT NULL)")
            do {
                let statement = try db.makeStatement(sql: sql)
                try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                    try statement.execute(arguments: values.arguments.statementArguments)
                }
                // (In the same scan: which storage classes meet, numbers counted as one.)
                let row = try Row.fetchOne(db, sql: """
                    SELECT count(*), coalesce(sum(count), 0), coalesce(max(count), 0),
                      coalesce(max(typeof(value) IN ('integer', 'real')), 0) + coalesce(max(typeof(value) = 'text'), 0) + coalesce(max(typeof(value) = 'blob'), 0)
                    FROM \(table)
                    """)
                return (row?[0] ?? 0, row?[1] ?? 0, row?[2] ?? 0, row?[3] ?? 0)
            } catch {
                try? connection.dropTempTable(db, named: name)
                throw error
            }
        }
        figures = FrequencyFigures(attribute: values.attribute, binWidth: binWidth, groupSQL: sql, groupArguments: values.arguments,
                                   count: found.count, total: found.total, maxCount: found.max, started: started)
        mixesStorageClasses = found.classes > 1
    }

    deinit { connection.dropTempTable(name) }

    var pageSQL: String { "SELECT value, count FROM temp.\(quoteIdentifier(name)) WHERE pos BETWEEN ? AND ? ORDER BY pos" }

    /// Where the grouped rows are: `SQLite temp table bs_freq_3_2`.
    var location: String { "SQLite temp table \(name)" }

    /// The values at `positions` (0-based, clamped to the table), in order.
    ///
    /// Runs `SELECT value, count FROM temp."bs_freq_…" WHERE pos BETWEEN ? AND ? ORDER BY pos`.
    /// - Complexity: one range scan of the primary key: O(`positions.count`).
    func values(in positions: Range<Int>) throws -> [ValueCount] {
        let lower = max(0, positions.lowerBound), upper = min(count, positions.upperBound)
        guard lower < upper else { return [] }
        let sql = pageSQL
        return try connection.withDatabase { db in
            let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [lower + 1, upper])
            var out: [ValueCount] = []
            out.reserveCapacity(upper - lower)
            while let row = try cursor.next() { out.append(ValueCount(value: SQLValue(row: row, at: 0), count: row[1])) }
            return out
        }
    }
}

extension SQLiteFrequencyTable {
    /// The rows of the values at `positions` (0-based), for an edit of them: a ``ValueSelection``
    /// whose SQL literals are read from this table, so that they are exactly the values counted
    /// (text as its bytes in the file's encoding, `CAST(X'…' AS TEXT)`, whatever they hold; reals
    /// in a form SQLite reads back to the same double).
    /// - Throws: `.invalidArgument` for a position that is not on the sheet.
    /// - Complexity: one primary-key lookup per position.
    func selection(at positions: [Int]) throws -> ValueSelection {
        let sql = "SELECT value, typeof(value), hex(value) FROM temp.\(quoteIdentifier(name)) WHERE pos = ?"
        var values: [SQLValue] = [], literals: [String] = []
        try connection.withDatabase { db in
            for position in positions {
                guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [position + 1]) else {
                    throw BatchStoreError(.invalidArgument, "value \(position + 1) is not on the frequency sheet; nothing was changed")
                }
                let value = SQLValue(row: row, at: 0)
                let hex: String = row[2]
                values.append(value)
                switch row[1] as String {
                case "text": literals.append("CAST(X'\(hex)' AS TEXT)")
                case "blob": literals.append("X'\(hex)'")
                default: literals.append(value.sqlLiteral)
                }
            }
        }
        return ValueSelection(attribute: attribute, values: values, literals: literals, dialect: .sqlite, binWidth: binWidth)
    }

    /// The position (0-based) of the one value `selection` holds (another sheet's, read exactly
    /// by ``selection(at:)``) among these values, nil when it is not one: where a recount finds
    /// the value the cursor was on, text compared byte for byte.
    ///
    /// Runs `SELECT pos FROM temp."bs_freq_…" WHERE value IS <literal> ORDER BY pos LIMIT 1`.
    func position(of selection: ValueSelection) throws -> Int? {
        guard let literal = selection.literals.first else { return nil }
        let sql = "SELECT pos FROM temp.\(quoteIdentifier(name)) WHERE value IS \(literal) ORDER BY pos LIMIT 1"
        return try connection.withDatabase { db in try Int.fetchOne(db, sql: sql).map { $0 - 1 } }
    }
}
