import Foundation

/// Where a batched result's rows live, and the SQL that reaches them: one store
/// (``StoreResultSource``: the ID table and the rows share one connection, batches are packed) or
/// several (``CoordinatedResultSource``: the ID table on a connection that sees every store
/// attached, each batch faulted per store into that store's context).
///
/// This is the seam for another database engine: a source owns its dialect and its connection;
/// the result logic above it (``ResultStorage``: the ID table's life, the batch cache, refresh with
/// anchors, positions, membership, statistics, the error contract) is written once.
protocol ResultSource: AnyObject {
    /// The connection that holds the result's ID table.
    var connection: Connection { get }
    /// The ID query for `request` (its ID table's columns are ``IDQuery/columns(for:)`` of the same parts).
    func idQuery(_ request: FetchRequest) throws -> IDQuery
    /// The ID table's columns after `pos`.
    var idColumns: [String] { get }
    /// Faults the rows at `positions` of `ids` into objects, in position order (nil for a row gone
    /// since the fetch).
    func fault(_ positions: Range<Int>, of ids: IDTable) throws -> FaultedBatch
    /// The entity fetched (with several stores, the first store's).
    var entity: Entity { get }
    /// The object ID for the row of the ID table at `position`, whose columns are `idRow`.
    func objectID(idRow: [SQLValue], position: Int) -> ObjectID?
    /// The ID table's columns for `id`, or nil when `id` cannot be a row of this result.
    func idRow(of id: ObjectID) -> [SQLValue]?
    /// The name of the store a row of the ID table comes from.
    func storeName(idRow: [SQLValue]) -> String?
    /// Queries that each give the first `pos` after (or, backwards, before) `position` whose row
    /// matches `predicate`, one per store; the result's match is the nearest of their answers.
    func searchQueries(_ predicate: FetchPredicate, in ids: IDTable, after position: Int, backwards: Bool) throws -> [(sql: String, arguments: [SQLValue])]
    /// True when the result may hold objects of `entity`.
    func holds(_ entity: Entity) -> Bool
    /// Objects alive in the contexts the result faults into.
    var objectsAlive: Int { get }
    /// True when batches keep packed values (``BatchStatistics/valueBytesResident`` is then given).
    var packsValues: Bool { get }
}

/// The shared core of every batched result: its ID table, its batch cache, its source, and the
/// one error contract (the subscript gives nil and records ``lastError``; `object(at:)` throws).
final class ResultStorage: ResidentBatches {
    let source: ResultSource
    let request: FetchRequest
    let ids: IDTable
    let cache: BatchCache
    private(set) var lastError: BatchStoreError?

    /// Makes the result and runs its ID fetch (see ``IDTable/fill(_:progress:)``).
    init(source: ResultSource, request: FetchRequest, residentBatches: Int, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        self.source = source
        self.request = request
        self.ids = IDTable(connection: source.connection, columns: source.idColumns)
        self.cache = BatchCache(batchSize: request.fetchBatchSize, residentLimit: residentBatches)
        try ids.fill(try source.idQuery(request), progress: progress)
    }

    deinit { cache.evictAll() }

    var count: Int { ids.count }
    var batchSize: Int { cache.batchSize }

    /// The non-throwing read: nil for a gone row, and nil with ``lastError`` set when the fault failed.
    @inline(__always)
    func object(at position: Int) -> ManagedObject? {
        if let fast = cache.fastObject(at: position) { return fast }
        do {
            return try objectThrowing(at: position)
        } catch {
            lastError = BatchStoreError.wrap(error)
            return nil
        }
    }

    func objectThrowing(at position: Int) throws -> ManagedObject? {
        let ids = self.ids
        let source = self.source
        do {
            return try cache.object(at: position, fault: { try source.fault($0, of: ids) }, count: ids.count)
        } catch {
            throw BatchStoreError.wrap(error)
        }
    }

    func refresh(anchors: [Int]) throws -> Int? {
        let position = try ids.refill(try source.idQuery(request), anchors: anchors)
        cache.evictAll()
        return position
    }

    func objectID(at position: Int) throws -> ObjectID? {
        try ids.row(at: position).flatMap { source.objectID(idRow: $0, position: position) }
    }

    func storeName(at position: Int) throws -> String? {
        try ids.row(at: position).flatMap { source.storeName(idRow: $0) }
    }

    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        let queries = try source.searchQueries(predicate, in: ids, after: position, backwards: backwards)
        let estimate = count
        var best: Int?
        for query in queries {
            let found = try ids.connection.withDatabase { db -> Int? in
                let statement = try db.makeStatement(sql: query.sql)
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

    func members(of objectIDs: [ObjectID]) throws -> [ObjectID] {
        let rows = objectIDs.compactMap { id in source.idRow(of: id).map { (id, $0) } }
        guard !rows.isEmpty else { return [] }
        let found = try ids.contains(rows.map(\.1))
        return rows.filter { found.contains($0.1) }.map(\.0)
    }

    // MARK: ResidentBatches

    func holds(_ entity: Entity) -> Bool { source.holds(entity) }

    func evictBatches(where isStale: (ManagedObject) -> Bool) -> Int { cache.evict(where: isStale) }

    var statistics: BatchStatistics {
        BatchStatistics(
            count: count, batchSize: batchSize, batchesFaulted: cache.batchesFaulted, batchesResident: cache.residentCount,
            residentBatchLimit: cache.residentLimit, objectsResident: cache.objectsResident,
            objectsAlive: source.objectsAlive, idsHeld: count, idsInSwiftMemory: 0,
            idStorage: "SQLite temp table \(ids.name)" + (source.idColumns == ["store", "key"] ? " (store, key)" : ""),
            idFetchSeconds: ids.fillSeconds,
            lastFaultSeconds: cache.lastFaultSeconds, totalFaultSeconds: cache.totalFaultSeconds,
            valueBytesResident: source.packsValues ? cache.packedBytes : nil)
    }
}
