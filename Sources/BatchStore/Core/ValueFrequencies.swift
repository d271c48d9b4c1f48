import Foundation

/// One distinct value of a column and how many rows of the result hold it.
public struct ValueCount: Sendable, Equatable {
    public var value: SQLValue
    public var count: Int

    public init(value: SQLValue, count: Int) {
        self.value = value
        self.count = count
    }
}

/// The distinct values of one attribute over the rows of a batched result, with how many rows hold
/// each, most frequent first (ties by value: NULL first, then in the engine's order). Made by
/// ``BatchFaultingCollection/frequencies(of:binWidth:rows:progress:)``.
///
/// Itself batched: the grouped rows live in a temp table of the result's own engine and session
/// (`temp."bs_freq_…"(pos INTEGER PRIMARY KEY, value, count)` on SQLite,
/// `pg_temp."bs_freq_…"(pos bigint PRIMARY KEY, value, count)` on PostgreSQL), and
/// ``values(in:)`` reads a range of positions, so ten million distinct values cost what the rows on
/// screen cost. The table is dropped when the value goes away.
///
/// Values group as the engine's `GROUP BY` groups them. On SQLite the integer 1 and the real 1.0
/// are one value, the text '1' another, and a column's collation applies. On PostgreSQL a column
/// has one type and its values group as the predicate language's `==` compares them: numbers,
/// booleans, `bytea`, dates and times, `uuid` and text by their own equality (`numeric` 1.0 and
/// 1.00 are one value), every other type (`json`, arrays, `interval`, …) by its text.
public final class ValueFrequencies {
    let table: any FrequencyTable

    package init(_ table: any FrequencyTable) { self.table = table }

    /// The attribute counted.
    public var attribute: String { table.attribute }
    /// Distinct values (rows of the temp table).
    public var count: Int { table.count }
    /// Rows counted: the result's rows that still exist (the sum of the counts).
    public var total: Int { table.figures.total }
    /// The largest count (the first value's), 0 when there are none.
    public var maxCount: Int { table.figures.maxCount }
    /// How long the grouping took, in seconds.
    public var seconds: Double { table.figures.seconds }
    /// The width of the bins the numbers were counted in (nil: each value on its own). Binned, a
    /// number `v` counts as its bin's lower bound `floor(v / w) * w`, text and blobs as
    /// themselves, NULL as NULL, and the values come in bin order (NULL, the bins, text, blobs),
    /// not by count.
    public var binWidth: Int64? { table.binWidth }

    /// The SQL of these frequencies: as ``ResultStatements/idFetch`` the GROUP BY that filled
    /// their table (with the values it bound), as ``ResultStatements/batchFault`` the read of the
    /// `pageSize` values from `position` on (bound with their 1-based first and last positions).
    /// Nothing runs.
    public func statements(readingAt position: Int, pageSize: Int) -> ResultStatements {
        table.statements(readingAt: position, pageSize: pageSize)
    }

    /// Where the grouped rows are: `SQLite temp table bs_freq_3_2`, `PostgreSQL temp table bs_freq_2`.
    public var location: String { table.location }
    /// True when the values are of more than one storage class among numbers, text and blobs
    /// (integer 1 and text '1' are two values): the browser then shows text in quotes.
    public var mixesStorageClasses: Bool { table.mixesStorageClasses }

    /// The values at `positions` (0-based, clamped to the table), in order: one range scan of the
    /// table's primary key, O(`positions.count`).
    public func values(in positions: Range<Int>) throws -> [ValueCount] { try table.values(in: positions) }

    /// The rows of the values at `positions` (0-based), for an edit of them: a ``ValueSelection``
    /// whose SQL literals are read from this table, so that they are exactly the values counted
    /// (on SQLite text as its bytes in the file's encoding, `CAST(X'…' AS TEXT)`, whatever they
    /// hold, and reals in a form SQLite reads back to the same double; on PostgreSQL each value's
    /// text cast to the column's type).
    /// - Throws: `.invalidArgument` for a position that is not on the sheet.
    /// - Complexity: one primary-key lookup per position.
    public func selection(at positions: [Int]) throws -> ValueSelection { try table.selection(at: positions) }

    /// The position (0-based) of the one value `selection` holds (another sheet's of the same
    /// engine, read exactly by ``selection(at:)``) among these values, nil when it is not one:
    /// where a recount finds the value the cursor was on, text compared byte for byte.
    public func position(of selection: ValueSelection) throws -> Int? { try table.position(of: selection) }
}

/// The grouped rows behind a ``ValueFrequencies``, in one engine's temp table.
package protocol FrequencyTable: AnyObject {
    var figures: FrequencyFigures { get }
    var location: String { get }
    /// The read of a page of values, bound with its first and last 1-based positions.
    var pageSQL: String { get }
    func values(in positions: Range<Int>) throws -> [ValueCount]
    func selection(at positions: [Int]) throws -> ValueSelection
    func position(of selection: ValueSelection) throws -> Int?
    /// True when the values are of more than one storage class among numbers, text and blobs
    /// (SQLite: integer 1 and text '1' are two values that would look alike).
    var mixesStorageClasses: Bool { get }
}

/// What grouping a column's values found, as every engine's ``FrequencyTable`` reports it.
package struct FrequencyFigures: Sendable {
    package let attribute: String
    package let binWidth: Int64?
    /// The GROUP BY that filled the table, and its bound values.
    package let groupSQL: String
    package let groupArguments: [SQLValue]
    /// How many distinct values (or bins), rows counted, and the largest count.
    package let count: Int, total: Int, maxCount: Int
    package let seconds: Double

    /// The figures of a grouping begun at `started` (uptime nanoseconds) that found `count`
    /// values over `total` rows.
    package init(attribute: String, binWidth: Int64?, groupSQL: String, groupArguments: [SQLValue],
                 count: Int, total: Int, maxCount: Int, started: UInt64) {
        self.attribute = attribute
        self.binWidth = binWidth
        self.groupSQL = groupSQL
        self.groupArguments = groupArguments
        self.count = count
        self.total = total
        self.maxCount = maxCount
        seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    }
}

extension FrequencyTable {
    package var attribute: String { figures.attribute }
    package var count: Int { figures.count }
    package var binWidth: Int64? { figures.binWidth }
    package var groupSQL: String { figures.groupSQL }
    package var groupArguments: [SQLValue] { figures.groupArguments }

    /// One type per column (PostgreSQL): never mixed.
    package var mixesStorageClasses: Bool { false }

    /// See ``ValueFrequencies/statements(readingAt:pageSize:)``.
    package func statements(readingAt position: Int, pageSize: Int) -> ResultStatements {
        let start = max(0, min(position, count - 1))
        return ResultStatements(idFetch: groupSQL, idFetchArguments: groupArguments, batchFault: pageSQL,
                                batchFaultArguments: [.integer(Int64(start + 1)), .integer(Int64(max(start + 1, min(start + pageSize, count))))])
    }
}

extension BatchFaultingCollection {
    /// The distinct values of `attribute` over this result's rows (its filter; its order does not
    /// matter), with their counts, most frequent first: a batched result of its own (see
    /// ``ValueFrequencies``). `rows` says which rows are read: the ID table's, or (faster, the same
    /// while the file is unchanged since the fetch) those the fetch's WHERE matches now.
    /// `progress` is called about every 50 ms while SQLite groups, and may cancel (a `.cancelled`
    /// error, no table left).
    ///
    /// One store: `SELECT value, count(*) FROM (SELECT t."genre" AS value FROM temp."bs_ids_…" AS ids
    /// CROSS JOIN main."movie" AS t ON t.rowid = ids.key) GROUP BY value ORDER BY count(*) DESC, value`;
    /// several stores: the inner SELECT once per store, `UNION ALL`. With `.matchingNow` the inner
    /// SELECT is `SELECT t."genre" AS value FROM main."movie" AS t WHERE <the fetch's predicate>`.
    /// - Throws: ``BatchStoreError`` `.noSuchAttribute` for a name that is not a column of the entity.
    /// - Complexity: a GROUP BY over ``count`` rows in SQLite; O(1) Swift memory.
    /// With `binWidth`, numbers are counted in bins of that width (see ``ValueFrequencies/binWidth``).
    public func frequencies(of attribute: String, binWidth: Int64? = nil, rows: ResultRows = .fetched,
                            progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> ValueFrequencies {
        ValueFrequencies(try storage.source.frequencies(of: attribute, binWidth: binWidth, rows: rows, request: storage.request,
                                                        estimate: storage.count, progress: progress))
    }

    /// The smallest and largest number (integer or real) `attribute` holds over this result's
    /// rows, nil when it holds none: `SELECT min(value), max(value) FROM (<values>) WHERE value < ''`.
    /// - Complexity: a scan of ``count`` rows in SQLite.
    public func numericRange(of attribute: String, rows: ResultRows = .fetched) throws -> ClosedRange<Double>? {
        try storage.source.numericRange(of: attribute, rows: rows, request: storage.request)
    }
}

extension ValueFrequencies {
    /// Bin widths for numbers spanning `range`: the powers of ten from 1 whose bins number from
    /// 2 to 1,000 over it (at most four, narrowest first), or `[1]` when none does (a span under 1).
    public static func binWidths(for range: ClosedRange<Double>) -> [Int64] {
        let span = range.upperBound - range.lowerBound
        var widths: [Int64] = []
        var w: Int64 = 1
        while widths.count < 4, w <= Int64.max / 10 {
            let bins = span / Double(w)
            if bins < 1 { break }
            if bins <= 1_000 { widths.append(w) }
            w *= 10
        }
        return widths.isEmpty ? [1] : widths
    }
}

extension Entity {
    /// The index of attribute `name` (as ``indexOfAttribute(named:)`` matches it), or a
    /// `.noSuchAttribute` error that names the entity.
    func requireAttributeIndex(_ name: String) throws -> Int {
        guard let i = indexOfAttribute(named: name) else {
            throw BatchStoreError(.noSuchAttribute, "\(self.name) has no column named \(name.debugDescription)")
        }
        return i
    }
}
