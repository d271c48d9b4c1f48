import BatchStore
import Foundation

/// A ``FetchingContext`` over one PostgreSQL store: what the browser (and any caller written
/// against the protocol) needs to list tables, open batched results, count and look up rows on a
/// server, as a ``ManagedObjectContext`` does on a SQLite file.
///
/// Each result opened here has a session of its own (its temp table lives there); the context
/// keeps one more session, opened at its first count or lookup, for those and for batch updates
/// and deletes (one transaction each, see `PostgresBatchRequests.swift`). Edits through a result
/// run in the result's session, limited to its rows.
///
/// It keeps no identity map: objects are values read by a result's fault. Merging a change set
/// drops the resident batches of the context's open results that hold a changed row, so the next
/// read faults them as they are now. Undo journals are temp tables of the session that ran the
/// edit (see `PostgresUndo.swift`); the last ``undoDepth`` edits can be undone.
///
/// Not thread-safe: one thread uses it at a time, as with ``ManagedObjectContext``.
public final class PostgresContext: ValueStreamingContext {
    public let store: PostgresStore
    private var lookupLease: PostgresSessionLease?
    /// True once the lookup session has the `pg_temp` text functions.
    private var lookupHasTextFunctions = false
    /// Recorded undoable edits, last on top.
    var undoStack: [PostgresUndoEntry] = []
    /// The most rows one undoable edit may journal (before-images live in temp tables of the
    /// server); an edit over it is rolled back and throws `.tooBigToUndo`.
    public var undoLimit = 1_000_000
    /// How many edits can be undone: each journal keeps its session open (a connection of the
    /// server's `max_connections`) until it is undone or forgotten.
    public var undoDepth = 16
    /// The handler of ``interruptible(_:_:)`` while it runs, and when it began.
    var interruption: (handler: (EditProgress) -> IDFetchDecision, started: UInt64)?
    /// Results opened through this context, held weakly: a merge drops their stale batches.
    private var openResults: [WeakResult] = []
    private struct WeakResult { weak var storage: ResultStorage? }

    public init(store: PostgresStore) {
        self.store = store
    }

    /// The context's own session for counts, lookups and edits (opened at first use, again after
    /// the server closed it).
    func session() throws -> PostgresSession { try sessionLease().session }

    /// The context's own session and what keeps it open.
    func sessionLease() throws -> PostgresSessionLease {
        if let lookupLease, !lookupLease.session.isClosed { return lookupLease }
        let opened = PostgresSessionLease(try store.openSession())
        lookupLease = opened
        lookupHasTextFunctions = false
        return opened
    }

    public var engineName: String { "PostgreSQL" }
    public var storeNames: [String] { [store.name] }
    public var entities: [Entity] { store.schema.tables.compactMap { try? store.entity(named: $0.name) } }
    /// Nil: what may be edited is the server's to say (views and tables without a primary key are
    /// refused per table; the role's privileges when the edit runs).
    public var readOnlyReason: String? { nil }
    /// `.count`: no identity map to merge into; the browser fetches its result again after an edit.
    public var editResultType: BatchResultType { .count }
    public func entity(named name: String) throws -> Entity { try store.entity(named: name) }

    /// Opens a batched result in a session of its own (see ``PostgresStore/fetchBatched(_:residentBatches:firstBatch:progress:)``);
    /// edits through it can be undone here, and merges here reach it.
    public func fetchBatched(_ request: FetchRequest, residentBatches: Int, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> BatchFaultingCollection {
        let result = try store.fetchBatched(request, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress, context: self)
        openResults.removeAll { $0.storage == nil }
        openResults.append(WeakResult(storage: result.storage))
        return result
    }

    /// Rows read in place are SQLite's: over PostgreSQL, ``streamValues(_:_:)``.
    public func streamRows(_ request: FetchRequest, _ body: (StreamedRow) throws -> Void) throws {
        throw BatchStoreError(.invalidQuery, "rows of PostgreSQL stream as values (streamValues), not in place")
    }

    /// The rows `request` matches as one streamed statement (``PostgresStore/streamRows(_:_:)``).
    public func streamValues(_ request: FetchRequest, _ body: ([SQLValue]) throws -> Void) throws {
        try store.streamRows(request, body)
    }

    /// `SELECT count(*)` of the rows `request` matches (within its limit and offset).
    public func count(for request: FetchRequest) throws -> Int {
        guard request.fetchLimit >= 0, request.fetchOffset >= 0 else {
            throw BatchStoreError(.invalidArgument, "fetchLimit and fetchOffset must not be negative")
        }
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

    /// Creates the `pg_temp` text functions in the lookup session the first time `needed`.
    func installTextFunctions(in session: PostgresSession, if needed: Bool) throws {
        guard needed, !lookupHasTextFunctions || session !== lookupLease?.session else { return }
        try PostgresTextFunctions.install(in: session)
        if session === lookupLease?.session { lookupHasTextFunctions = true }
    }

    /// The row `id` names, read now.
    /// - Throws: `.objectNotFound` when it is gone; `.invalidQuery` for an ID of a row without a key.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        let table = try store.table(named: id.entity.name)
        guard id.isAddressable, table.rowKey != .none else {
            throw BatchStoreError(.invalidQuery, "\(table.name) has no row key, so a row of it cannot be looked up again")
        }
        let keys = PostgresIDColumn.of(table)
        let values = id.keyValues
        guard values.count == keys.count else { throw BatchStoreError(.objectNotFound, "\(id): not a key of \(table.name)") }
        let condition = keys.enumerated().map { "\($1.source) = \($1.cast("$\($0 + 1)"))" }.joined(separator: " AND ")
        let columns = table.columns.map { $0.selectExpression(alias: "t") }
        let sql = "SELECT \(columns.isEmpty ? "NULL" : columns.joined(separator: ", ")) FROM \(table.qualifiedSQL) AS t WHERE \(condition)"
        guard let row = try session().query(sql, values).first else {
            throw BatchStoreError(.objectNotFound, "\(id) is gone: another session deleted it")
        }
        return ManagedObject(objectID: id, link: ContextLink(nil), values: columns.isEmpty ? [] : row)
    }

    /// 0: the context keeps no identity map (objects live in the resident batches of its results).
    public var registeredObjectCount: Int { 0 }

    /// Drops, in every open result of this context, the resident batches that hold a row
    /// `changes` updated or deleted, so the next read faults them as they are now (a deleted row
    /// reads as gone). Stored changes are asked only about the rows those batches hold (one
    /// statement per 500); a change table that cannot be read drops every batch of its table.
    /// Inserted rows appear after ``BatchFaultingCollection/refresh(keeping:)``.
    public func merge(_ changes: ChangeSet) {
        let listed = Set(changes.updated + changes.deleted)
        for storage in openResults.compactMap(\.storage) {
            // A batch read ahead may hold any changed row: it goes whatever the change.
            storage.discardReadAhead()
            let held = storage.residentObjectIDs
            guard !held.isEmpty else { continue }
            var stale = Set(held.filter { listed.contains($0) })
            var unknown = Set<String>()
            for stored in changes.stored where stored.kind != .inserted && stored.count > 0 {
                do {
                    stale.formUnion(try stored.matching(held))
                } catch {
                    unknown.insert(stored.entity.name)
                }
            }
            guard !stale.isEmpty || !unknown.isEmpty else { continue }
            _ = storage.evictBatches { stale.contains($0.objectID) || unknown.contains($0.objectID.entity.name) }
        }
    }

    /// Drops every resident batch of the context's open results: each is read again as it is now.
    public func refreshAllObjects() {
        for storage in openResults.compactMap(\.storage) { _ = storage.evictBatches { _ in true } }
    }

    /// What stands in for SQLite's `data_version`: the rows inserted, updated and deleted in every
    /// permanent table of the database, as the server's statistics count them
    /// (`pg_stat_user_tables`), plus the tables' file numbers (`relfilenode`, which TRUNCATE,
    /// VACUUM FULL and CLUSTER change at once, and no row counter does). The counters grow when
    /// any session's writes are reported, within about a second of their commit (up to ten when
    /// that session wrote shortly before), rolled-back writes included; never when `track_counts`
    /// is off. Temp tables are left out: result sessions fill theirs with inserts.
    public func dataVersion() throws -> Int {
        let sql = """
            SELECT (coalesce(sum(s.n_tup_ins + s.n_tup_upd + s.n_tup_del), 0) + coalesce(sum(c.relfilenode::int8), 0))::int8
            FROM pg_catalog.pg_stat_user_tables AS s JOIN pg_catalog.pg_class AS c ON c.oid = s.relid WHERE c.relpersistence <> 't'
            """
        return Int(try session().query(sql).first?.first?.integerValue ?? 0)
    }
}
