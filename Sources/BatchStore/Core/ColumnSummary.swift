import Foundation

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
