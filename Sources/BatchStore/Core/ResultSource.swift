import Foundation

/// Where a batched result's rows live, and the SQL that reaches them: one store
/// (``StoreResultSource``: the ID table and the rows share one connection, batches are packed) or
/// several (``CoordinatedResultSource``: the ID table on a connection that sees every store
/// attached, each batch faulted per store into that store's context).
///
/// This is the seam for another database engine: a source owns its dialect and its connection;
/// the result logic above it (``ResultStorage``: the ID table's life, the batch cache, refresh with
/// anchors, positions, membership, statistics, the error contract) is written once.
package protocol ResultSource: AnyObject {
    /// The result's IDs, in an ID table on the source's own database, made with the source.
    var ids: any IDStore { get }
    /// The ID query for `request`, in the source's dialect.
    func idQuery(_ request: FetchRequest) throws -> IDQuery
    /// Faults the rows at `positions` of the ID table into objects, in position order (nil for a
    /// row gone since the fetch).
    func fault(_ positions: Range<Int>) throws -> FaultedBatch
    /// ``fault(_:)`` for an iteration over the result (`for … in`, `map`, `reduce`: every element in
    /// order), which a source may serve another way once the sweep has gone on for a while.
    func fault(_ positions: Range<Int>, iterating: Bool) throws -> FaultedBatch
    /// The statement ``fault(_:)`` runs; it binds the batch's first and last 1-based positions (over
    /// PostgreSQL, an ID table addressed by tuple binds the list of the batch's tuples instead).
    var faultSQL: String { get }
    /// The statement that faults the batch at `positions` and its bound values (for a batch that
    /// can be read another way than ``faultSQL``, that way).
    func faultStatement(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue])
    /// The entity fetched (with several stores, the first store's).
    var entity: Entity { get }
    /// The object ID for the row of the ID table at `position`, whose columns are `idRow`.
    func objectID(idRow: [SQLValue], position: Int) -> ObjectID?
    /// The ID table's columns for `id`, or nil when `id` cannot be a row of this result.
    func idRow(of id: ObjectID) -> [SQLValue]?
    /// The name of the store a row of the ID table comes from.
    func storeName(idRow: [SQLValue]) -> String?
    /// Queries that each select the first `pos` after (or, backwards, before) `position` whose row
    /// matches `predicate`, one per store; the result's match is the nearest of their answers.
    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery]
    /// Objects alive in the contexts the result faults into.
    var objectsAlive: Int { get }
    /// True when batches keep packed values (``BatchStatistics/valueBytesResident`` is then given).
    var packsValues: Bool { get }
    /// The distinct values of `attribute` over the result's rows (`rows` says which: those of the
    /// ID table, those `request` matches now, or a sample), grouped into a temp table on the ID
    /// table's database; `estimate` is the rows read, for `progress`, which may cancel.
    func frequencies(of attribute: String, binWidth: Int64?, rows: ResultRows, request: FetchRequest, estimate: Int,
                     progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> any FrequencyTable
    /// The summary of `attribute` over the result's rows (``ColumnSummary/sampledFrom`` is left nil).
    func summary(of attribute: String, rows: ResultRows, request: FetchRequest, estimate: Int,
                 progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> ColumnSummary
    /// The smallest and largest number `attribute` holds over the result's rows, nil when none.
    func numericRange(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ClosedRange<Double>?
    /// Forgets any batch read ahead of its fault (a sweep's next batch), which the data may have
    /// changed since: called when resident batches are dropped as stale.
    func discardReadAhead()
    /// Batches read from a stream rather than faulted, and streams started (see ``fault(_:iterating:)``).
    var batchesStreamed: Int { get }
    var streamsStarted: Int { get }
}

extension ResultSource {
    package func discardReadAhead() {}
    package var batchesStreamed: Int { 0 }
    package var streamsStarted: Int { 0 }
    package func fault(_ positions: Range<Int>, iterating: Bool) throws -> FaultedBatch { try fault(positions) }
}

/// Which rows a frequency or a summary of a result reads.
public enum ResultRows: Sendable, Equatable {
    /// The rows of the result's ID table, as fetched (rows deleted since drop out): one key lookup
    /// per row.
    case fetched
    /// The rows the result's fetch request matches now, read with the same WHERE clause, so SQLite
    /// can use the table's indexes (a covering index can answer a GROUP BY alone). The same rows
    /// as ``fetched`` as long as nothing has changed the file since the fetch (compare
    /// `dataVersion()` before the fetch and now).
    case matchingNow
    /// `size` rows of the result's ID table, one from each of `size` equal stretches of it, at a
    /// pseudo-random place in its stretch (a stratified sample: spread evenly over the result,
    /// yet blind to any period in the rows, which evenly spaced rows are not: every 200th row of
    /// `x % 10` is always the same value), each looked up by its key: figures in milliseconds at
    /// any size, for a first look before the whole result is read. The same positions for the same
    /// count every time. All the rows when the result has no more than `size`.
    case sample(Int)

    /// The ID table as the FROM clause's `ids` for these rows: the whole table, or for a sample,
    /// the rows at its positions (`pos IN (…)`, the positions written out as integers, one
    /// primary-key lookup each).
    package func idsSource(_ qualifiedName: String, count: Int) -> String {
        guard case .sample(let size) = self, size > 0, count > size else { return "\(qualifiedName) AS ids" }
        return "(SELECT * FROM \(qualifiedName) WHERE pos IN (\(Self.samplePositions(size, of: count).map { String($0 + 1) }.joined(separator: ",")))) AS ids"
    }

    /// The 0-based positions of a sample of `size` of `count` rows, ascending: for each i in
    /// 0..<size, one position in `i·count/size ..< (i+1)·count/size`.
    package static func samplePositions(_ size: Int, of count: Int) -> [Int] {
        guard size > 0, count > size else { return Array(0..<max(0, count)) }
        var random = SplitMix64(seed: UInt64(count))
        return (0..<size).map { i in
            let low = Int(Int64(i) * Int64(count) / Int64(size)), high = Int(Int64(i + 1) * Int64(count) / Int64(size))
            return low + random.below(high - low)
        }
    }
}

/// Where a result's IDs live: a table on the source's database, in result order, which never
/// enters Swift memory (``IDTable`` for SQLite). Positions are 0-based.
package protocol IDStore: AnyObject {
    /// Rows in the table.
    var count: Int { get }
    /// How long the last fill took, in seconds.
    var fillSeconds: Double { get }
    /// Where the IDs are, for statistics: `SQLite temp table bs_ids_3_1`.
    var location: String { get }
    /// Creates and fills the table with `query`'s rows; `progress` may cancel, leaving no table.
    func fill(_ query: IDQuery, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws
    /// The INSERT ``fill(_:progress:)`` runs for `query` (bound with `query.arguments`).
    func fillSQL(_ query: IDQuery) -> String
    /// True when the ID columns name each row (a key; not a view's bare row number), so that a
    /// row can be found again after a refill.
    var keyed: Bool { get }
    /// Fills a new table with `query` and swaps it in under the same name.
    func replace(with query: IDQuery) throws
    /// The ID columns of the row at `position`, or nil outside the table.
    func row(at position: Int) throws -> [SQLValue]?
    /// The first position whose ID columns are `values` (NULL matching NULL).
    func position(of values: [SQLValue]) throws -> Int?
    /// Which of `rows` (values of the ID columns) are in the table.
    func contains(_ rows: [[SQLValue]]) throws -> Set<[SQLValue]>
    /// The nearest position that any of `queries` selects (each gives a 1-based `pos` or nothing).
    func nearest(_ queries: [IDQuery], backwards: Bool, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int?
}

extension IDStore {
    /// Fills a new table and swaps it in (``replace(with:)``); returns the new position of the
    /// first of `anchors` (old positions) whose row is still there.
    /// - Complexity: the ID fetch, plus one lookup of each anchor before and one search after.
    package func refill(_ query: IDQuery, anchors: [Int]) throws -> Int? {
        let rows = keyed ? try anchors.compactMap { try row(at: $0) } : []
        try replace(with: query)
        for row in rows {
            if let position = try position(of: row) { return position }
        }
        return nil
    }
}

/// The shared core of every batched result: its ID table, its batch cache, its source, and the
/// one error contract (the subscript gives nil and records ``lastError``; `object(at:)` throws).
package final class ResultStorage: ResidentBatches {
    package let source: ResultSource
    let request: FetchRequest
    let cache: BatchCache
    private(set) var lastError: BatchStoreError?

    /// Makes the result and runs its ID fetch (see ``IDTable/fill(_:progress:)``).
    package init(source: ResultSource, request: FetchRequest, residentBatches: Int, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        self.source = source
        self.request = request
        self.cache = BatchCache(batchSize: request.fetchBatchSize, residentLimit: residentBatches)
        self.ids = source.ids
        try ids.fill(try source.idQuery(request), progress: progress)
    }

    deinit { cache.evictAll() }

    /// The source's ID store, held here too: ``count`` is read once per element of a sweep, and
    /// a stored reference costs no call through the source and no retain.
    let ids: any IDStore
    var count: Int { ids.count }
    var batchSize: Int { cache.batchSize }

    /// The non-throwing read: nil for a gone row, and nil with ``lastError`` set when the fault failed.
    /// `iterating`: the read is an iteration's (see ``ResultSource/fault(_:iterating:)``).
    @inline(__always)
    func object(at position: Int, iterating: Bool = false) -> ManagedObject? {
        if let fast = cache.fastObject(at: position) { return fast }
        do {
            return try objectThrowing(at: position, iterating: iterating)
        } catch {
            lastError = BatchStoreError.wrap(error)
            return nil
        }
    }

    func objectThrowing(at position: Int, iterating: Bool = false) throws -> ManagedObject? {
        let source = self.source
        do {
            return try cache.object(at: position, fault: { try source.fault($0, iterating: iterating) }, count: ids.count)
        } catch {
            throw BatchStoreError.wrap(error)
        }
    }

    func refresh(anchors: [Int]) throws -> Int? {
        // Resident batches belong to the old table: dropped whatever happens below.
        defer { cache.evictAll() }
        source.discardReadAhead()
        return try ids.refill(try source.idQuery(request), anchors: anchors)
    }

    func objectID(at position: Int) throws -> ObjectID? {
        try ids.row(at: position).flatMap { source.objectID(idRow: $0, position: position) }
    }

    func storeName(at position: Int) throws -> String? {
        try ids.row(at: position).flatMap { source.storeName(idRow: $0) }
    }

    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        try ids.nearest(try source.searchQueries(predicate, after: position, backwards: backwards), backwards: backwards, progress: progress)
    }

    func members(of objectIDs: [ObjectID]) throws -> [ObjectID] {
        let rows = objectIDs.compactMap { id in source.idRow(of: id).map { (id, $0) } }
        guard !rows.isEmpty else { return [] }
        let found = try ids.contains(rows.map(\.1))
        return rows.filter { found.contains($0.1) }.map(\.0)
    }

    // MARK: ResidentBatches

    package func evictBatches(where isStale: (ManagedObject) -> Bool) -> Int {
        source.discardReadAhead()
        return cache.evict(where: isStale)
    }

    /// Forgets a batch read ahead (see ``ResultSource/discardReadAhead()``).
    package func discardReadAhead() { source.discardReadAhead() }

    var statistics: BatchStatistics {
        BatchStatistics(
            count: count, batchSize: batchSize, batchesFaulted: cache.batchesFaulted, batchesResident: cache.residentCount,
            residentBatchLimit: cache.residentLimit, objectsResident: cache.objectsResident,
            objectsAlive: source.objectsAlive, idsHeld: count, idsInSwiftMemory: 0,
            idStorage: ids.location,
            idFetchSeconds: ids.fillSeconds,
            lastFaultSeconds: cache.lastFaultSeconds, totalFaultSeconds: cache.totalFaultSeconds,
            valueBytesResident: source.packsValues ? cache.packedBytes : nil, batchesStreamed: source.batchesStreamed, streamsStarted: source.streamsStarted)
    }
}

/// The statements a batched result runs, as SQLite is given them, with the values bound to them:
/// the one that fills its temp table and the one that reads a batch of it back. For a
/// ``BatchFaultingCollection`` the ID fetch and the batch fault; for ``ValueFrequencies`` the
/// GROUP BY and the read of a page of values.
public struct ResultStatements: Sendable, Equatable {
    /// The ID fetch: `INSERT INTO temp."bs_ids_…" (key) SELECT t.rowid FROM main."T" AS t WHERE …
    /// ORDER BY …` (with several stores, one `UNION ALL` per store); for frequencies, `INSERT INTO
    /// temp."bs_freq_…" (value, count) SELECT value, count(*) FROM (…) GROUP BY value ORDER BY …`.
    public var idFetch: String
    /// The values bound to ``idFetch``'s parameters, in order (the predicate's constants).
    public var idFetchArguments: [SQLValue]
    /// The batch fault: `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS
    /// JOIN main."T" AS t ON … WHERE ids.pos BETWEEN ? AND ?`, or for a batch that is one range of
    /// a table's rowids, `SELECT t.rowid, t.<columns> FROM main."T" AS t WHERE t.rowid BETWEEN ? AND ?`.
    public var batchFault: String
    /// The values bound to ``batchFault`` for the batch asked for: its first and last 1-based
    /// positions in the ID table (for a range read, its first and last rowid).
    public var batchFaultArguments: [SQLValue]

    package init(idFetch: String, idFetchArguments: [SQLValue], batchFault: String, batchFaultArguments: [SQLValue]) {
        self.idFetch = idFetch
        self.idFetchArguments = idFetchArguments
        self.batchFault = batchFault
        self.batchFaultArguments = batchFaultArguments
    }
}
