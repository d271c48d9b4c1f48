import Foundation
import GRDB

/// What one attribute holds over the rows of a batched result: its storage classes, NULLs,
/// distinct values, range, mean, text lengths and most frequent value, all computed by SQLite.
/// Made by ``BatchFaultingCollection/summary(of:rows:progress:)``.
public struct ColumnSummary: Sendable, Equatable {
    /// The attribute and its declared type (empty when the column has none).
    public var attribute: String
    public var declaredType: String
    /// Rows looked at: the result's rows that still exist.
    public var rows: Int
    /// Storage classes seen apart from NULL, in SQLite's order: `integer`, `real`, `text`, `blob`.
    public var storageClasses: [String]
    public var nulls: Int
    /// Distinct values other than NULL (as SQLite's `count(DISTINCT …)` compares them: 1 and 1.0
    /// are one value).
    public var distinct: Int
    /// The smallest and largest value in SQLite's order (numbers, then text, then blobs); nil when
    /// every value is NULL.
    public var min: SQLValue?
    public var max: SQLValue?
    /// The mean of the numeric values (integers and reals), nil without any.
    public var mean: Double?
    /// The shortest and longest text value, in characters; nil without text.
    public var shortest: Int?
    public var longest: Int?
    /// The most frequent value (ties by value, as the frequency sheet orders them); nil without rows.
    public var mostFrequent: ValueCount?

    public init(attribute: String, declaredType: String, rows: Int, storageClasses: [String], nulls: Int, distinct: Int,
                min: SQLValue?, max: SQLValue?, mean: Double?, shortest: Int?, longest: Int?, mostFrequent: ValueCount?) {
        self.attribute = attribute
        self.declaredType = declaredType
        self.rows = rows
        self.storageClasses = storageClasses
        self.nulls = nulls
        self.distinct = distinct
        self.min = min
        self.max = max
        self.mean = mean
        self.shortest = shortest
        self.longest = longest
        self.mostFrequent = mostFrequent
    }
}

extension BatchFaultingCollection {
    /// The summary of `attribute` over this result's rows (its filter; its order does not matter).
    /// `rows` says which rows are read, as for ``frequencies(of:rows:progress:)``. `progress` is
    /// called about every 50 ms while SQLite reads, and may cancel (a `.cancelled` error).
    ///
    /// Two statements over the values (see ``frequencies(of:rows:progress:)`` for the inner SELECT):
    /// `SELECT count(*), count(*) - count(value), count(DISTINCT value), min(value), max(value),
    /// avg(CASE WHEN typeof(value) IN ('integer', 'real') THEN value END), min(CASE WHEN typeof(value)
    /// = 'text' THEN length(value) END), max(…), max(typeof(value) = 'integer'), … FROM (<values>)`,
    /// then `SELECT value, count(*) FROM (<values>) GROUP BY value ORDER BY count(*) DESC, value LIMIT 1`.
    /// - Throws: ``BatchStoreError`` `.noSuchAttribute` for a name that is not a column of the entity.
    /// - Complexity: two passes over ``count`` rows in SQLite (the second sorts them); O(1) Swift memory.
    public func summary(of attribute: String, rows: ResultRows = .fetched, progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> ColumnSummary {
        let values = try storage.source.columnValues(of: attribute, rows: rows, request: storage.request)
        let estimate = storage.count
        let figures = """
            SELECT count(*), count(*) - count(value), count(DISTINCT value), min(value), max(value),
              avg(CASE WHEN typeof(value) IN ('integer', 'real') THEN value END),
              min(CASE WHEN typeof(value) = 'text' THEN length(value) END), max(CASE WHEN typeof(value) = 'text' THEN length(value) END),
              max(typeof(value) = 'integer'), max(typeof(value) = 'real'), max(typeof(value) = 'text'), max(typeof(value) = 'blob')
            FROM (\(values.select))
            """
        let frequent = "SELECT value, count(*) FROM (\(values.select)) GROUP BY value ORDER BY count(*) DESC, value LIMIT 1"
        // Both statements hold the inner SELECT once, so each binds its arguments once.
        return try values.connection.withDatabase { db in
            func one(_ sql: String) throws -> [SQLValue]? {
                let statement = try db.makeStatement(sql: sql)
                var found: [SQLValue]?
                try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                    // The cursor stays alive while the row is read: a row reads its statement.
                    let cursor = try Row.fetchCursor(statement, arguments: values.arguments.statementArguments)
                    if let row = try cursor.next() { found = (0..<row.count).map { SQLValue(row: row, at: $0) } }
                }
                return found
            }
            let f = try one(figures) ?? []
            func int(_ i: Int) -> Int? { if i < f.count, case .integer(let v) = f[i] { return Int(v) } else { return nil } }
            func value(_ i: Int) -> SQLValue? { i < f.count && f[i] != .null ? f[i] : nil }
            var mean: Double?
            if let v = value(5) { if case .real(let d) = v { mean = d } else if case .integer(let n) = v { mean = Double(n) } }
            let classes = ["integer", "real", "text", "blob"].enumerated().filter { int(8 + $0.offset) == 1 }.map(\.element)
            let top = try one(frequent)
            let mostFrequent = top.flatMap { r -> ValueCount? in
                guard r.count == 2, case .integer(let n) = r[1] else { return nil }
                return ValueCount(value: r[0], count: Int(n))
            }
            return ColumnSummary(attribute: values.attribute, declaredType: values.declaredType, rows: int(0) ?? 0, storageClasses: classes,
                                 nulls: int(1) ?? 0, distinct: int(2) ?? 0, min: value(3), max: value(4), mean: mean,
                                 shortest: int(6), longest: int(7), mostFrequent: mostFrequent)
        }
    }
}
