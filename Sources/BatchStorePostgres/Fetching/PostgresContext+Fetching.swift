import BatchStore
import Foundation

extension PostgresContext {
    /// Opens a batched result in a session of its own (see ``PostgresStore/fetchBatched(_:residentBatches:firstBatch:progress:)``);
    /// edits through it can be undone here, and merges here reach it.
    public func fetchBatched(_ request: FetchRequest, residentBatches: Int, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> BatchFaultingCollection {
        let result = try store.fetchBatched(request, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress, context: self)
        openResults.removeAll { $0.storage == nil }
        openResults.append(WeakResult(storage: result.storage))
        return result
    }

    /// The rows `request` matches as one streamed statement (``PostgresStore/streamRows(_:_:)``).
    /// The first rows of `request` by one `… ORDER BY … LIMIT` on this context's own session
    /// (kept open), with no ID table: objects that hold their values. Without a limit, every row
    /// through a batched result.
    public func firstRows(_ request: FetchRequest) throws -> [ManagedObject] {
        guard request.fetchLimit > 0 else {
            // No limit: every row, through a batched result (as on SQLite).
            let result = try fetchBatched(request, residentBatches: 1, firstBatch: nil, progress: nil)
            return try (0..<result.count).compactMap { try result.object(at: $0) }
        }
        var request = request
        request.fetchBatchSize = request.fetchLimit
        let table = try store.table(named: request.entityName)
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name)") }
        let source = PostgresResultSource(store: store, table: table, entity: try store.entity(named: table.name), lease: try sessionLease())
        return try source.firstRows(request, progress: nil)
    }

    /// Opens this context's session now.
    public func prepareForReads() throws { _ = try sessionLease() }

    public func streamValues(_ request: FetchRequest, _ body: ([SQLValue]) throws -> Void) throws {
        try store.streamRows(request, body)
    }

    /// `SELECT count(*)` of the rows `request` matches (within its limit and offset).
    public func count(for request: FetchRequest) throws -> Int {
        try request.checkBounds()
        let table = try store.table(named: request.entityName)
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name)") }
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
        var sql = "SELECT count(*) FROM \(builder.fromClause)\(condition)"
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            let limit = request.fetchLimit > 0 ? " LIMIT \(request.fetchLimit)" : ""
            sql = "SELECT count(*) FROM (SELECT 1 FROM \(builder.fromClause)\(condition)\(limit) OFFSET \(request.fetchOffset)) AS s"
        }
        let session = try session()
        try installTextFunctions(in: session, if: PostgresTextFunctions.areUsed(in: sql))
        guard let n = try session.query(sql, builder.arguments).first?.first?.integerValue else {
            throw BatchStoreError(.postgres("XX000"), "the server did not answer a count")
        }
        return Int(n)
    }
}
