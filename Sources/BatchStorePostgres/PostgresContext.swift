import BatchStore
import Foundation

/// A ``FetchingContext`` over one PostgreSQL store: what the browser (and any caller written
/// against the protocol) needs to list tables, open batched results, count and look up rows on a
/// server, as a ``ManagedObjectContext`` does on a SQLite file.
///
/// Each result opened here has a session of its own (its temp table lives there); the context
/// keeps one more session, opened at its first count or lookup, for those and for batch updates
/// and deletes (one transaction each, see `PostgresBatchRequests.swift`). It keeps no identity map
/// (objects are values with no context), so there is nothing to merge into and no undo yet; the
/// browser therefore treats it as read-only (``readOnlyReason``), while `faultline update` and
/// `delete` and library callers run batch requests through it.
///
/// Not thread-safe: one thread uses it at a time, as with ``ManagedObjectContext``.
public final class PostgresContext: ValueStreamingContext {
    public let store: PostgresStore
    private var lookupSession: PostgresSession?
    /// True once the lookup session has the `pg_temp` text functions.
    private var lookupHasTextFunctions = false

    public init(store: PostgresStore) {
        self.store = store
    }

    deinit { lookupSession?.close() }

    /// The context's own session for counts, lookups and edits (opened at first use, again after
    /// the server closed it).
    func session() throws -> PostgresSession {
        if let lookupSession, !lookupSession.isClosed { return lookupSession }
        let opened = try store.openSession()
        lookupSession = opened
        lookupHasTextFunctions = false
        return opened
    }

    public var engineName: String { "PostgreSQL" }
    public var storeNames: [String] { [store.name] }
    public var entities: [Entity] { store.schema.tables.compactMap { try? store.entity(named: $0.name) } }
    /// Why the browser does not edit through this context: results over PostgreSQL are not refreshed
    /// after an edit and cannot undo it yet. Batch requests run all the same.
    public var readOnlyReason: String? { "edits in the browser over PostgreSQL are not built yet (faultline update and delete take the URL)" }
    public func entity(named name: String) throws -> Entity { try store.entity(named: name) }

    public func fetchBatched(_ request: FetchRequest, residentBatches: Int, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> BatchFaultingCollection {
        try store.fetchBatched(request, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress)
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
        guard needed, !lookupHasTextFunctions || session !== lookupSession else { return }
        try PostgresTextFunctions.install(in: session)
        if session === lookupSession { lookupHasTextFunctions = true }
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

    public var registeredObjectCount: Int { 0 }
    public var canUndo: Bool { false }
    public func undo() throws -> ChangeSet { throw BatchStoreError(.readOnly, "nothing to undo") }
    public func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T { try body() }
    public func merge(_ changes: ChangeSet) {}
    public func refreshAllObjects() {}

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
