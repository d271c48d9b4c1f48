import Foundation

extension ManagedObjectContext {
    /// This context's open results, held weakly (merges drop their stale batches).
    var openResults: OpenResults { featureState(OpenResults.self) { OpenResults() } }
}

extension ManagedObjectContext: SavingContext {}

extension ManagedObjectContext: ObjectContext {}

extension ManagedObjectContext: InsertingContext {
    public func executeCounting(_ request: BatchInsertRequest) throws -> InsertCounts {
        var request = request
        // An upsert keeps its written keys apart (inserted, updated); the other policies count.
        request.resultType = request.conflictPolicy == .upsert ? .changes : .count
        let result = try execute(request)
        guard let changes = result.changes else { return InsertCounts(inserted: result.count ?? 0, updated: 0) }
        var counts = InsertCounts(inserted: changes.insertedCount, updated: changes.updatedCount)
        counts.written = result.count
        return counts
    }
}

extension ManagedObjectContext: FetchingContext {
    public var engineName: String { "SQLite" }
    public var engineTraits: EngineTraits { .sqliteFile }
    public var storeNames: [String] { [store.name] }
    public var fileProblem: String? { store.fileProblem }
    public func settleMovedFile() { emptyWALOfMovedFile() }
    public var readerMaker: (@Sendable () throws -> any FetchingContext)? {
        { [store] in try ManagedObjectContext(store: store) }
    }
    public var entities: [Entity] { store.schema.entities }
    public var readOnlyReason: String? { store.isReadOnly ? "the file is read-only" : nil }
    public func entity(named name: String) throws -> Entity { try store.entity(named: name) }
    public func addQuery(_ sql: String) throws -> Entity { try store.addQuery(sql) }

    public func fetchBatched(_ request: FetchRequest, residentBatches: Int = 8, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        guard let firstBatch else { return try fetchBatched(request, residentBatches: residentBatches, progress: progress) }
        // The first batch's `LIMIT` query may scan far (a condition few rows meet, a correlated
        // subquery): the caller's handler stops it as it stops the ID fetch.
        // (Not inside an interruptible call of the caller's, which already watches it.)
        let progressive: ProgressiveFetch
        if let progress, connection.interruption == nil {
            progressive = try interruptible({ progress(IDFetchProgress(rowsScanned: 0, estimatedRows: nil, elapsed: $0.elapsed)) }) {
                try beginFetch(request, residentBatches: residentBatches)
            }
        } else {
            progressive = try beginFetch(request, residentBatches: residentBatches)
        }
        firstBatch(progressive.firstBatch)
        return try progressive.finish(progress: progress)
    }

    public func merge(_ changes: ChangeSet) { mergeChanges(changes) }
}

extension ManagedObjectContext {
    /// Merges `changes` into every context given (Core Data's `mergeChanges(fromRemoteContextSave:into:)`).
    @discardableResult
    public static func mergeChanges(_ changes: ChangeSet, into contexts: [ManagedObjectContext]) -> [MergeReport] {
        let updated = ChangeIndex(changes.updated)
        let deleted = ChangeIndex(changes.deleted)
        return contexts.map { $0.merge(updated: updated, deleted: deleted, stored: changes.stored, inserted: changes.insertedCount) }
    }

    /// Merges `changes` into this context: updated objects are refaulted (by ``mergePolicy`` when
    /// they have unsaved changes), deleted ones are marked deleted and leave the identity map, and
    /// open collections drop the resident batches that hold either.
    /// - Complexity: for ``ChangeSet/stored`` tables, one statement per 500 registered objects of the
    ///   changed entity, whatever the number of rows changed. For ID arrays, O(changed IDs) once to
    ///   index them, then O(registered objects × log(changed IDs)); no I/O.
    @discardableResult
    public func mergeChanges(_ changes: ChangeSet) -> MergeReport {
        Self.mergeChanges(changes, into: [self])[0]
    }

    func merge(updated: ChangeIndex, deleted: ChangeIndex, stored: [StoredChanges], inserted: Int) -> MergeReport {
        var merged = graph.merge(updated: updated.contains, deleted: deleted.contains,
                                 mayTouch: { updated.touches($0) || deleted.touches($0) }, stored: stored, inserted: inserted)
        if !merged.touched.isEmpty { merged.report.batchesInvalidated += openResults.evictStale(of: merged.touched) }
        return merged.report
    }
}

extension ManagedObject {
    /// The SQLite context the object lives in, or nil (another engine's, or gone).
    public var managedObjectContext: ManagedObjectContext? { link.owner as? ManagedObjectContext }
}
