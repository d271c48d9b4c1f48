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
    /// How many values share ``mostFrequent``'s count (1: it stands alone).
    public var mostFrequentTies = 1
    /// The first values (up to three, in value order, NULL first) that share ``mostFrequent``'s
    /// count, it first; empty without rows.
    public var tiedForMostFrequent: [SQLValue] = []
    /// For figures of a sample (``ResultRows/sample(_:)``), the rows of the result it was drawn
    /// from: every figure is then of the ``rows`` sampled, not of the result. Nil: of every row.
    public var sampledFrom: Int?

    public init(attribute: String, declaredType: String, rows: Int, storageClasses: [String], nulls: Int, distinct: Int,
                min: SQLValue?, max: SQLValue?, mean: Double?, shortest: Int?, longest: Int?, mostFrequent: ValueCount?, sampledFrom: Int? = nil) {
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
        self.sampledFrom = sampledFrom
    }
}

extension BatchFaultingCollection {
    /// The summary of `attribute` over this result's rows (its filter; its order does not matter).
    /// `rows` says which rows are read, as for ``frequencies(of:binWidth:rows:progress:)``; with
    /// ``ResultRows/sample(_:)``, the figures are of the sample, and ``ColumnSummary/sampledFrom``
    /// says so. `progress` is
    /// called about every 50 ms while SQLite reads, and may cancel (a `.cancelled` error).
    ///
    /// Two statements over the values (see ``frequencies(of:binWidth:rows:progress:)`` for the inner SELECT),
    /// neither with a `count(DISTINCT …)` (an ephemeral index that SQLite fills row by row, the
    /// slowest part of a summary: 8.3 s of 7 columns at 1M rows before):
    /// `SELECT count(*), count(*) - count(value), min(value), max(value), avg(CASE WHEN typeof(value)
    /// IN ('integer', 'real') THEN value END), min(CASE WHEN typeof(value) = 'text' THEN length(value)
    /// END), max(…), max(typeof(value) = 'integer'), … FROM (<values>)`, a plain scan, then
    /// `SELECT max(c), value, count(value) FROM (SELECT value, count(*) AS c FROM (<values>) GROUP BY
    /// value ORDER BY value)`: one GROUP BY (an index's order when the column has one, else a sort)
    /// gives the distinct count (the non-NULL groups) and the most frequent value (`value` is the
    /// row where `max(c)` was found, SQLite's bare-column rule; the first of equal counts in value
    /// order, as the frequency sheet orders ties).
    /// - Throws: ``BatchStoreError`` `.noSuchAttribute` for a name that is not a column of the entity.
    /// - Complexity: a scan and a GROUP BY over ``count`` rows in SQLite; O(1) Swift memory.
    public func summary(of attribute: String, rows: ResultRows = .fetched, progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> ColumnSummary {
        var estimate = storage.count
        var sampledFrom: Int?
        if case .sample(let size) = rows, size > 0, storage.count > size { estimate = size; sampledFrom = storage.count }
        var summary = try storage.source.summary(of: attribute, rows: rows, request: storage.request, estimate: estimate, progress: progress)
        summary.sampledFrom = sampledFrom
        return summary
    }
}

extension ColumnSummary {
    /// The summary of `values` over SQLite (the two statements described at
    /// ``BatchFaultingCollection/summary(of:rows:progress:)``).
    init(sqlite values: ColumnValues, estimate: Int, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        let figures = """
            SELECT count(*), count(*) - count(value), min(value), max(value),
              avg(CASE WHEN typeof(value) IN ('integer', 'real') THEN value END),
              min(CASE WHEN typeof(value) = 'text' THEN length(value) END), max(CASE WHEN typeof(value) = 'text' THEN length(value) END),
              max(typeof(value) = 'integer'), max(typeof(value) = 'real'), max(typeof(value) = 'text'), max(typeof(value) = 'blob')
            FROM (\(values.select))
            """
        // One GROUP BY (SQLite materializes a CTE read more than once): the top count, the
        // distinct values, how many share the top count, and the first three of them by value.
        let grouped = """
            WITH g AS (SELECT value, count(*) AS c FROM (\(values.select)) GROUP BY value COLLATE BINARY),
              top AS (SELECT max(c) AS m, count(value) AS d FROM g)
            SELECT top.m, top.d, (SELECT count(*) FROM g WHERE g.c = top.m), g.value FROM top LEFT JOIN g ON g.c = top.m ORDER BY g.value COLLATE BINARY LIMIT 3
            """
        // Each statement holds the inner SELECT once, so each binds its arguments once.
        self = try values.connection.withDatabase { db in
            func all(_ sql: String) throws -> [[SQLValue]] {
                let statement = try db.makeStatement(sql: sql)
                var found: [[SQLValue]] = []
                try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                    // The cursor stays alive while the row is read: a row reads its statement.
                    let cursor = try Row.fetchCursor(statement, arguments: values.arguments.statementArguments)
                    while let row = try cursor.next() { found.append((0..<row.count).map { SQLValue(row: row, at: $0) }) }
                }
                return found
            }
            func one(_ sql: String) throws -> [SQLValue]? { try all(sql).first }
            let f = try one(figures) ?? []
            func int(_ i: Int) -> Int? { if i < f.count, case .integer(let v) = f[i] { return Int(v) } else { return nil } }
            func value(_ i: Int) -> SQLValue? { i < f.count && f[i] != .null ? f[i] : nil }
            var mean: Double?
            if let v = value(4) { if case .real(let d) = v { mean = d } else if case .integer(let n) = v { mean = Double(n) } }
            let classes = ["integer", "real", "text", "blob"].enumerated().filter { int(7 + $0.offset) == 1 }.map(\.element)
            let tops = try all(grouped)
            let g = tops.first ?? []
            var mostFrequent: ValueCount?
            if g.count == 4, case .integer(let n) = g[0] { mostFrequent = ValueCount(value: g[3], count: Int(n)) }
            var distinct = 0
            if g.count == 4, case .integer(let n) = g[1] { distinct = Int(n) }
            var summary = ColumnSummary(attribute: values.attribute, declaredType: values.declaredType, rows: int(0) ?? 0, storageClasses: classes,
                                        nulls: int(1) ?? 0, distinct: distinct, min: value(2), max: value(3), mean: mean,
                                        shortest: int(5), longest: int(6), mostFrequent: mostFrequent)
            if mostFrequent != nil {
                if g.count == 4, case .integer(let ties) = g[2] { summary.mostFrequentTies = Swift.max(1, Int(ties)) }
                summary.tiedForMostFrequent = tops.map { $0[3] }
            }
            return summary
        }
    }
}
