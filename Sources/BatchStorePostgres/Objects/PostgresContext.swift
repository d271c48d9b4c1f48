import BatchStore
import Foundation

/// A `FetchingContext` over one PostgreSQL store: what the browser (and any caller written
/// against the protocol) needs to list tables, open batched results, count and look up rows on a
/// server, as a `ManagedObjectContext` does on a SQLite file.
///
/// Each result opened here has a session of its own (its temp table lives there); the context
/// keeps one more session, opened at its first count or lookup, for those and for batch updates
/// and deletes (one transaction each, see `PostgresBatchRequests.swift`). Edits through a result
/// run in the result's session, limited to its rows.
///
/// It keeps an identity map, as a `ManagedObjectContext` does: at most one live object per
/// row, held weakly, whichever of its results (or ``existingObject(with:)``, ``object(with:)``)
/// read the row. An object whose values are dropped (``refresh(_:mergeChanges:)``, a merge) is a
/// fault again, and reading a value reads its row by key on the context's session. Merging a
/// change set refaults the registered objects of the rows it updated, marks those it deleted
/// (they leave the map), and drops the resident batches that hold either, so the next read faults
/// them as they are now. Objects hold unsaved changes until ``save()``, as on SQLite (see
/// `PostgresSaving.swift`); merges that name them follow ``mergePolicy``.
/// Undo journals are temp tables of the session that ran the edit (see `PostgresUndo.swift`); the
/// last ``undoDepth`` edits can be undone.
///
/// Not thread-safe: one thread uses it at a time, as with `ManagedObjectContext`.
public final class PostgresContext: ValueStreamingContext, ChangedIDStreamingContext, ObjectContext, ObjectOwner {
    public let store: PostgresStore
    private var lookupLease: PostgresSessionLease?
    /// True once the lookup session has the `pg_temp` text functions.
    private var lookupHasTextFunctions = false
    /// The most rows one undoable edit may journal (before-images live in temp tables of the
    /// server); an edit over it is rolled back and throws `.tooBigToUndo`.
    public var undoLimit = 1_000_000
    /// How many edits can be undone: each journal keeps its session open (a connection of the
    /// server's `max_connections`) until it is undone or forgotten.
    public var undoDepth = 16
    /// The handler of ``interruptible(_:_:)`` while it runs, and when it began.
    var interruption: (handler: (EditProgress) -> IDFetchDecision, started: UInt64)?
    /// Results opened through this context, held weakly: a merge drops their stale batches.
    var openResults: [WeakResult] = []
    struct WeakResult { weak var storage: ResultStorage? }

    /// The objects, their identity map and unsaved changes, and the rules both engines share.
    package let graph = ObjectGraph(link: ContextLink())
    /// At most one live object per row (see ``ObjectContext``).
    package var identity: IdentityMap { graph.identity }
    /// Shared by every object of the context; its owner is cleared in `deinit`, so objects that
    /// outlive the context see it as gone.
    package var link: ContextLink { graph.link }
    /// How a merge treats objects with unsaved changes whose rows a batch updated.
    public var mergePolicy: MergePolicy {
        get { graph.mergePolicy }
        set { graph.mergePolicy = newValue }
    }

    public init(store: PostgresStore) {
        self.store = store
        link.owner = self
    }

    deinit {
        link.owner = nil
    }

    /// The context's instance of `type` (``ObjectGraph/featureState(_:make:)``).
    func featureState<S: AnyObject>(_ type: S.Type, make: () -> S) -> S { graph.featureState(type, make: make) }

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
    public var engineTraits: EngineTraits { .server }
    /// Another context over the same server, with its own session (opened at its first read).
    public var readerMaker: (@Sendable () throws -> any FetchingContext)? {
        { [store] in PostgresContext(store: store) }
    }
    public var storeNames: [String] { [store.name] }
    public var entities: [Entity] { store.schema.tables.compactMap { try? store.entity(named: $0.name) } }
    /// Nil: what may be edited is the server's to say (views and tables without a primary key are
    /// refused per table; the role's privileges when the edit runs).
    public var readOnlyReason: String? { nil }
    /// `.count`: the browser refreshes every object and fetches its result again after an edit,
    /// which needs no change table on the server.
    public var editResultType: BatchResultType { .count }
    public func entity(named name: String) throws -> Entity { try store.entity(named: name) }

    /// Creates the `pg_temp` text functions in the lookup session the first time `needed`.
    func installTextFunctions(in session: PostgresSession, if needed: Bool) throws {
        guard needed, !lookupHasTextFunctions || session !== lookupLease?.session else { return }
        try PostgresTextFunctions.install(in: session)
        if session === lookupLease?.session { lookupHasTextFunctions = true }
    }

    /// The object for `id`, fulfilled: the registered one (read now when it is a fault), else one
    /// read now and registered.
    /// - Throws: `.objectNotFound` when it is gone (or was merged as deleted); `.invalidQuery`
    ///   for an ID of a row without a key.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        guard id.entity.storeName == store.name else {
            throw BatchStoreError(.invalidArgument, "\(id) belongs to store \(id.entity.storeName), not \(store.name)")
        }
        if let existing = identity.object(for: id) {
            if existing.isDeleted { throw BatchStoreError(.objectNotFound, "\(id) was deleted") }
            if existing.isFault { try fulfillFault(existing) }
            return existing
        }
        let object = ManagedObject(objectID: id, link: link, storage: .decoded(try readRow(id)))
        if try registers(id) { identity.register(object) }
        return object
    }

    /// The registered object for `id`, or a new registered fault for it. No I/O: the row may not
    /// exist; reading a value of such a fault throws `.objectNotFound`. (A row of a table without
    /// a primary key, named by its `ctid`, gets a new fault each time: a place is not a row.)
    public func object(with id: ObjectID) -> ManagedObject {
        if let existing = identity.object(for: id) { return existing }
        let object = ManagedObject(objectID: id, link: link, storage: .fault)
        if (try? registers(id)) == true { identity.register(object) }
        return object
    }

    /// True when objects for `id` join the identity map: rows of tables with a primary key. A
    /// `ctid` names a place that another row may take after a delete and a vacuum.
    private func registers(_ id: ObjectID) throws -> Bool {
        guard id.isAddressable else { return false }
        return try store.table(named: id.entity.name).hasPrimaryKey
    }

    /// The registered object for `id`, if one is alive; never does I/O.
    public func registeredObject(for id: ObjectID) -> ManagedObject? { identity.object(for: id) }

    /// Objects alive in the identity map.
    public var registeredObjectCount: Int { identity.count }

    /// The row `id` names, its columns read now on the context's session (one statement by key).
    private func readRow(_ id: ObjectID) throws -> [SQLValue] {
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
        return columns.isEmpty ? [] : row
    }

    // MARK: ObjectOwner

    /// Reads a fault's row into it (``ManagedObject/value(at:)`` calls this).
    package func fulfillFault(_ object: ManagedObject) throws {
        // A delete not saved yet still has its row, which a read shows (as on SQLite).
        if object.isDeleted && !isPendingDelete(object) { throw BatchStoreError(.objectNotFound, "\(object.objectID) was deleted") }
        object.values = try readRow(object.objectID)
    }

    package func objectDidDeallocate(_ object: ManagedObject) { identity.unregister(object) }


    // MARK: Refreshing and merging

    /// Turns `object` back into a fault, so its next access reads the row as it is now. With
    /// `mergeChanges`, its unsaved changes are kept and laid over the fresh values; without, they
    /// are discarded (a pending delete too), as `ManagedObjectContext/refresh(_:mergeChanges:)`.
    /// - Complexity: O(1); no I/O until the next access.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        guard object.link === link else { return }
        graph.refresh(object, mergeChanges: mergeChanges)
        // Its next read is of the row as it is now: not from a batch read ahead or a stream.
        discardReadAheadOfOpenResults()
    }

    /// Forgets every object and unsaved change: objects held elsewhere become detached (their
    /// context is gone, so a fault among them cannot be fulfilled); open results read their rows
    /// again.
    public func reset() {
        graph.reset()
        for storage in openResults.compactMap(\.storage) { _ = storage.evictBatches { _ in true } }
    }

    /// Merges `changes` (from `FetchingContext/merge(_:)`); see ``mergeChanges(_:)``.
    public func merge(_ changes: ChangeSet) { mergeChanges(changes) }

    /// Merges `changes` into this context, as `ManagedObjectContext/mergeChanges(_:)` does: the
    /// registered objects of rows it updated are refaulted (their next access reads the new
    /// values; one with unsaved changes as ``mergePolicy`` says), those of rows it deleted are marked deleted and leave the identity map, and open
    /// results drop the resident batches that hold either (and any batch read ahead). Stored
    /// changes are asked only about the objects the context holds (one statement per 500); a
    /// change table that cannot be read refaults every object of its table. Inserted rows appear
    /// after `BatchFaultingCollection/refresh(keeping:)`.
    /// - Complexity: O(registered objects) plus one statement per 500 of them per stored table.
    @discardableResult
    public func mergeChanges(_ changes: ChangeSet) -> MergeReport {
        // A batch read ahead may hold any changed row: it goes whatever the change.
        discardReadAheadOfOpenResults()
        let updated = Set(changes.updated), deleted = Set(changes.deleted)
        var merged = graph.merge(updated: updated.contains, deleted: deleted.contains, mayTouch: { _ in true },
                                 stored: changes.stored, inserted: changes.insertedCount)
        // Results opened without this context's objects (a view's, a key-less table's) and any
        // batch of a table whose change table could not be read: by their resident IDs.
        let listed = updated.union(deleted)
        for storage in openResults.compactMap(\.storage) {
            merged.report.batchesInvalidated += storage.evictBatches { object in
                let entity = ObjectIdentifier(object.entity)
                return (merged.touched.contains(entity) && (object.isDeleted || object.isFault))
                    || merged.unknown.contains(entity) || (object.link !== self.link && listed.contains(object.objectID))
            }
        }
        return merged.report
    }

    /// Drops, in every result the context opened, the batch read ahead and a sweep's stream: what
    /// an edit through the context does first, since their rows would not show it.
    func discardReadAheadOfOpenResults() {
        for storage in openResults.compactMap(\.storage) { storage.discardReadAhead() }
    }

    /// Turns every registered object back into a fault, and drops every resident batch of the
    /// context's open results: each is read again as it is now.
    public func refreshAllObjects() {
        graph.refreshAll()
        for storage in openResults.compactMap(\.storage) { _ = storage.evictBatches { _ in true } }
    }

    /// The planner's estimate of each table's rows (`pg_class.reltuples`, as the last VACUUM or
    /// ANALYZE left it), by entity name; tables never analysed (-1) are left out. One catalog
    /// query, whatever the tables' sizes.
    public func estimatedRowCounts() -> [String: Int] {
        let tables = store.schema.tables
        guard !tables.isEmpty, let rows = try? session().query("SELECT oid::int8, reltuples::int8 FROM pg_catalog.pg_class WHERE reltuples >= 0 AND oid = ANY('{\(tables.map { String($0.oid) }.joined(separator: ","))}'::oid[])") else { return [:] }
        var byOID: [Int64: Int] = [:]
        for row in rows { if let oid = row.first?.integerValue, let n = row.last?.integerValue { byOID[oid] = Int(n) } }
        var out: [String: Int] = [:]
        for table in tables { if let n = byOID[table.oid] { out[table.name] = n } }
        return out
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
