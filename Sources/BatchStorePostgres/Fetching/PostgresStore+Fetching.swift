import BatchStore
import Foundation

extension PostgresStore {
    /// Fetches with batching, as `ManagedObjectContext/fetchBatched(_:residentBatches:progress:)`
    /// does on SQLite: opens a session of the result's own, runs the ID fetch into a temp table
    /// there (`CREATE TEMP TABLE … AS SELECT row_number() OVER () AS pos, <key> FROM (SELECT … WHERE
    /// … ORDER BY …)`, then a primary key on `pos`), and returns the collection; rows are faulted
    /// `fetchBatchSize` at a time (100 when 0) by position range as they are touched. The session
    /// ends, and its temp table with it, when the last copy of the collection goes away.
    ///
    /// The predicate and sort keys compile to PostgreSQL with NSPredicate's semantics (see
    /// `PostgresQueryBuilder`): the same request selects the same rows in the same order as on a
    /// SQLite store holding the same values.
    ///
    /// `firstBatch`, when given, gets the result's first `fetchBatchSize` rows before the ID fetch
    /// runs (one `… ORDER BY … LIMIT` query on the same session, watched and cancelled as the ID
    /// fetch is). `progress` is called about every
    /// 50 ms while the server fills the ID table (elapsed seconds only: PostgreSQL does not report
    /// a query's progress); `.cancel` cancels the statement on the server
    /// (``cancelStatement(of:)``), leaves no temp table, and the call throws `.cancelled`.
    ///
    /// Objects of a result opened here have no context: they hold their values (open it through
    /// a ``PostgresContext`` for an identity map, refreshing and merging). Edits through the result (`BatchFaultingCollection/execute(_:objectIDs:values:undoable:)`)
    /// run in its session on its rows only; they can be undone when the result was opened through
    /// a ``PostgresContext``, which keeps the journals.
    /// - Complexity: the ID fetch runs on the server (a sort of the matching keys); client memory
    ///   stays O(batch size × resident batches) whatever the table's size.
    public func fetchBatched(_ request: FetchRequest, residentBatches: Int = 8, firstBatch: (([ManagedObject]) -> Void)? = nil,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        try fetchBatched(request, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress, context: nil)
    }

    /// The result, its edits undone through `context` when given.
    func fetchBatched(_ request: FetchRequest, residentBatches: Int, firstBatch: (([ManagedObject]) -> Void)?,
                      progress: ((IDFetchProgress) -> IDFetchDecision)?, context: PostgresContext?) throws -> BatchFaultingCollection {
        var request = request
        if request.fetchBatchSize <= 0 { request.fetchBatchSize = 100 }
        let table = try table(named: request.entityName)
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name)") }
        let session = try openSession()
        do {
            let source = PostgresResultSource(store: self, table: table, entity: try entity(named: table.name), session: session)
            source.context = context
            if let firstBatch { firstBatch(try source.firstRows(request, progress: progress)) }
            let storage = try ResultStorage(source: source, request: request, residentBatches: residentBatches, progress: progress)
            return BatchFaultingCollection(storage: storage)
        } catch {
            session.close()
            throw error
        }
    }

    /// Streams the rows `request` matches, in its order (the same rows and order as
    /// ``fetchBatched(_:residentBatches:firstBatch:progress:)`` would give), as one statement on a
    /// session of its own: no ID table, no objects, every row read once from one snapshot, the
    /// entity's columns in order, as `PostgresSession.query(_:_:)` reads them. What `faultline
    /// export` reads a URL with. An error `body` throws stops the stream (the statement is
    /// cancelled on the server) and is rethrown.
    /// - Returns: the number of rows.
    /// - Complexity: the server's plan for the query; client memory O(1) rows.
    @discardableResult
    public func streamRows(_ request: FetchRequest, _ body: ([SQLValue]) throws -> Void) throws -> Int {
        let table = try table(named: request.entityName)
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name)") }
        let session = try openSession()
        defer { session.close() }
        let source = PostgresResultSource(store: self, table: table, entity: try entity(named: table.name), session: session)
        let query = try source.rowQuery(request)
        let empty = table.columns.isEmpty
        return try withoutActuallyEscaping(body) { body in
            // The callback runs on the event loop while this thread waits; the box lets it reach
            // `body` and is emptied before `body` goes out of scope.
            let box = RowCallback(body)
            defer { box.body = nil }
            do {
                return try session.streamRows(query.select, query.arguments) { values in
                    do {
                        try box.body?(empty ? [] : values)
                    } catch {
                        box.error = error
                        throw error
                    }
                }
            } catch {
                // The body's own error as it threw it (the session would call it unreachable).
                throw box.error ?? error
            }
        }
    }
}
