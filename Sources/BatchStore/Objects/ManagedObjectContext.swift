import Foundation
import GRDB
import GRDBSQLite

/// A scratchpad of managed objects over one store, with an identity map: at most one object per
/// ``ObjectID``, held weakly, so objects nobody uses go away by themselves.
///
/// Each context owns its own SQLite connection (its temp tables are its own). It is not `Sendable`:
/// Swift 6 keeps it on the thread or actor that made it. For work in the background, make a second
/// context there from the same (Sendable) ``PersistentStore``; both work at the same time.
///
/// What it is made of, each in its own file:
/// - the connection and its temp tables (`Connection`, Store/),
/// - the identity map (`IdentityMap`) and faults (this file),
/// - refreshing (`+Refreshing`), unsaved changes and saving (`+Saving`),
/// - the SQL text per entity (`EntityStatements`, Store/),
/// - state that the folders built on it keep per context (`featureState(_:make:)`): the open
///   results whose batches a merge must drop (`OpenResults`, Fetching/) and the undo journal of
///   batch requests (`UndoJournal`, Batch/), each next to the code that uses it.
public final class ManagedObjectContext {
    /// The store the context reads and writes.
    public let store: PersistentStore
    /// The parent context for a child context: its ``save()`` pushes changes to the parent, not the store.
    public let parent: ManagedObjectContext?

    /// How a merge treats objects with unsaved changes whose rows a batch updated.
    public var mergePolicy: MergePolicy {
        get { graph.mergePolicy }
        set { graph.mergePolicy = newValue }
    }

    /// The context's own SQLite connection and temp tables.
    let connection: Connection
    /// The objects, their identity map and unsaved changes, and the rules both engines share.
    package let graph = ObjectGraph(link: ContextLink())
    /// At most one live object per ID.
    var identity: IdentityMap { graph.identity }
    /// Shared by every object of this context; cleared in `deinit`.
    var link: ContextLink { graph.link }
    private var statementsByEntity: [Entity: EntityStatements] = [:]
    /// True once the file is known to be in WAL mode (see ``switchToWALBeforeWriting(_:)``).
    private var walSwitched = false
    /// What this context's own switch to WAL moved `PRAGMA data_version` by: taken off what
    /// ``dataVersion()`` says, so that the switch is not seen as another program's write (it was
    /// said "file changed" after a write that failed once the switch was made).
    private var ownVersionShift = 0

    /// Opens a context (and a connection) on `store`.
    /// - Complexity: one SQLite open; no rows are read.
    public init(store: PersistentStore) throws {
        self.store = store
        self.parent = nil
        self.connection = Connection(try store.openConnection())
        self.link.owner = self
    }

    private init(parent: ManagedObjectContext) throws {
        self.store = parent.store
        self.parent = parent
        self.connection = Connection(try parent.store.openConnection())
        self.link.owner = self
    }

    /// A child context: it fetches (with batching) like any context, sees the parent's unsaved
    /// values in objects it fulfils, and its ``save()`` hands changes to the parent.
    public func newChildContext() throws -> ManagedObjectContext {
        try ManagedObjectContext(parent: self)
    }

    deinit {
        // Objects that outlive the context see it as gone. Temp tables die with the connection.
        link.owner = nil
        emptyWALOfMovedFile()
    }

    // MARK: - Database access

    /// Runs `body` on the context's connection, converting errors to ``BatchStoreError``.
    /// Not reentrant by design: the body must not call back into the context's database.
    @inline(__always)
    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        try connection.withDatabase(body)
    }

    /// Before a write transaction: switches the file to WAL when the store asks for it at the first
    /// write (``PersistentStore/Options/walAtFirstWrite``), with `PRAGMA journal_mode = WAL` outside
    /// any transaction. Where the file does not allow it (a read-only folder, a lock), the write
    /// goes ahead in the file's own mode and the switch is tried again at the next write.
    /// - Returns: the journal mode the file had, when this call switched it (so that a write that
    ///   then fails can put it back: see ``switchBackAfterFailedWrite(_:to:)``).
    @discardableResult
    func switchToWALBeforeWriting(_ db: Database) -> String? {
        guard !walSwitched, store.options.walAtFirstWrite, !store.isReadOnly, !db.isInsideTransaction else { return nil }
        let mode = try? String.fetchOne(db, sql: "PRAGMA journal_mode")
        guard mode?.lowercased() != "wal" else { walSwitched = true; return nil }
        let before = try? Int.fetchOne(db, sql: "PRAGMA data_version")
        walSwitched = (try? String.fetchOne(db, sql: "PRAGMA journal_mode = WAL"))?.lowercased() == "wal"
        if walSwitched, let before, let after = try? Int.fetchOne(db, sql: "PRAGMA data_version") {
            ownVersionShift &+= after &- before
        }
        return walSwitched ? mode : nil
    }

    /// After the first write failed (a condition naming no column, a constraint) and rolled back:
    /// the journal mode the file had, so that a refused write leaves the file as it was. Best
    /// effort: where SQLite cannot switch back (another connection has the file), it stays WAL.
    func switchBackAfterFailedWrite(_ db: Database, to mode: String?) {
        guard let mode, !db.isInsideTransaction, ["delete", "truncate", "persist", "memory", "off"].contains(mode.lowercased()) else { return }
        let before = try? Int.fetchOne(db, sql: "PRAGMA data_version")
        guard (try? String.fetchOne(db, sql: "PRAGMA journal_mode = \(mode)"))?.lowercased() == mode.lowercased() else { return }
        walSwitched = false
        if let before, let after = try? Int.fetchOne(db, sql: "PRAGMA data_version") { ownVersionShift &+= after &- before }
    }

    /// The page cache a batch insert, delete or undo runs with, in KiB, when the connection's own
    /// is smaller. Rows inserted or deleted change every index of their table, at pages all over
    /// the file; with SQLite's default 2 MiB cache those pages are written out and read back again
    /// and again (1M rows into the demo's movie table: 11.6 s, of which 4.9 s in the kernel; with
    /// 16 MiB: 7.6 s, 0.85 s; 2.5M of 10M rows deleted: 1.30x raw, 1.10x–1.20x with it). Bounded:
    /// it does not grow with the rows. Updates keep the connection's cache (their memory growth
    /// stays within 5 MB; at 10M rows the larger cache did not speed them up).
    static let batchInsertCacheKiB = 16_384

    /// The transaction of a batch write: the WAL switch first (outside the transaction), then
    /// `BEGIN IMMEDIATE`; for an insert, a delete or an undo (`largerCache`), with the page cache raised to
    /// ``batchInsertCacheKiB`` for its length and put back afterwards, whatever happens.
    func inBatchWriteTransaction(_ db: Database, largerCache: Bool = false, _ body: () throws -> Database.TransactionCompletion) throws {
        let modeBefore = switchToWALBeforeWriting(db)
        var committed = false
        defer { if !committed { switchBackAfterFailedWrite(db, to: modeBefore) } }
        // An interruptible call (see Interruption) is now in the part a cancel rolls back; once
        // it commits, nothing stops the call.
        connection.interruption?.phase = .writing
        defer { connection.interruption?.phase = .reading }
        defer { truncateLargeWAL(db) }
        guard largerCache else {
            try db.inTransaction(.immediate, body)
            committed = true
            connection.interruption?.didCommit()
            return
        }
        let previous = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        let previousKiB = previous < 0 ? -previous : previous * pageSize / 1024
        let raise = previousKiB < Self.batchInsertCacheKiB
        if raise { try db.execute(sql: "PRAGMA cache_size = -\(Self.batchInsertCacheKiB)") }
        defer { if raise { try? db.execute(sql: "PRAGMA cache_size = \(previous)") } }
        try db.inTransaction(.immediate, body)
        committed = true
        connection.interruption?.didCommit()
    }

    /// After a write that left the WAL larger than the journal size limit (64 MiB: a delete of a
    /// million rows, its undo), copies it into the file and truncates it to nothing, so that an
    /// 830 MB `-wal` does not stay beside the file. A passive checkpoint first (it never waits);
    /// the truncating one only when that copied every frame, and then at most a busy timeout if
    /// another process is reading. Any failure leaves the WAL for SQLite's next checkpoint.
    /// - Complexity: what the checkpoint writes, which SQLite's next one would write anyway.
    func truncateLargeWAL(_ db: Database) {
        if store.fileProblem != nil, !db.isInsideTransaction {
            _ = try? Row.fetchOne(db, sql: "PRAGMA main.wal_checkpoint(TRUNCATE)")
            return
        }
        // A stat of the -wal file first: nothing is asked of SQLite after an ordinary write.
        var info = stat()
        guard !db.isInsideTransaction, stat(store.path + "-wal", &info) == 0, Int(info.st_size) > Self.walTruncationBytes,
              let row = try? Row.fetchOne(db, sql: "PRAGMA main.wal_checkpoint(PASSIVE)"),
              let busy = row[0] as Int?, let frames = row[1] as Int?, let copied = row[2] as Int?,
              busy == 0, frames > 0, copied == frames,
              let pageSize = try? Int.fetchOne(db, sql: "PRAGMA main.page_size"),
              frames * pageSize > Self.walTruncationBytes else { return }
        _ = try? Row.fetchOne(db, sql: "PRAGMA main.wal_checkpoint(TRUNCATE)")
    }

    /// When the store's file was deleted or replaced since it was opened and a `-wal` with frames
    /// is at its path: checkpoints them into the file this connection opened and truncates the
    /// WAL. SQLite skips the checkpoint when it closes a moved file, and the frames it leaves
    /// would be read as part of whatever file is put at the path (a replacement would show the old
    /// file's pages). Any failure leaves the WAL as it is.
    func emptyWALOfMovedFile() {
        guard !store.isReadOnly, store.fileProblem != nil else { return }
        var info = stat()
        guard stat(store.path + "-wal", &info) == 0, info.st_size > 0 else { return }
        _ = try? withDatabase { db in
            guard !db.isInsideTransaction else { return }
            _ = try Row.fetchOne(db, sql: "PRAGMA main.wal_checkpoint(TRUNCATE)")
        }
    }

    /// A WAL past this size is truncated after the write that grew it (the journal size limit).
    static let walTruncationBytes = 64 << 20

    /// The context's instance of `type` (``ObjectGraph/featureState(_:make:)``).
    func featureState<S: AnyObject>(_ type: S.Type, make: () -> S) -> S { graph.featureState(type, make: make) }

    /// A new unique temp table name for this connection.
    func makeTempTableName(_ prefix: String) -> String { connection.makeTempTableName(prefix) }

    /// Drops a temp table now, or at the next database access when called during one.
    func dropTempTable(_ name: String) { connection.dropTempTable(name) }

    /// Names of this connection's temp tables (for tests and diagnostics).
    package func temporaryTableNames() throws -> [String] { try connection.temporaryTableNames() }

    /// The SQL text of `entity`'s per-row statements, built once per context.
    func statements(for entity: Entity) -> EntityStatements {
        if let s = statementsByEntity[entity] { return s }
        let s = EntityStatements(entity: entity)
        statementsByEntity[entity] = s
        return s
    }

    func checkWritable(_ entity: Entity) throws {
        if store.isReadOnly { throw BatchStoreError(.readOnly, "\(store.path) is open read-only") }
        if entity.kind == .view { throw BatchStoreError(.readOnly, "\(entity.name) is a view and cannot be changed") }
        if entity.keyColumns.isEmpty { throw BatchStoreError(.readOnly, "\(entity.name) has no addressable key (its rowid names are all taken by columns)") }
    }

    // MARK: - Identity map

    /// How many registered objects are alive (each row at most once).
    public var registeredObjectCount: Int { identity.count }

    /// Every registered object (strong references, for refresh, reset and merges).
    func allRegisteredObjects() -> [ManagedObject] { identity.allObjects() }

    /// The registered object for `id`, if one is alive; never does I/O.
    public func registeredObject(for id: ObjectID) -> ManagedObject? { identity.object(for: id) }

    /// The object for a row just read (see ``IdentityMap/adopt(_:link:storage:)``), its values
    /// decoded by `values` when they are needed.
    @inline(__always)
    func adoptRow(_ id: ObjectID, values: () -> [SQLValue]) -> ManagedObject? {
        identity.adopt(id, link: link) { .decoded(values()) }
    }

    /// The attribute values of the current row of `stmt` (columns `first` on, read with the C API),
    /// with a parent context's unsaved changes laid over them, as a child context must see them.
    @inline(__always)
    func rowValues(_ stmt: OpaquePointer?, from first: Int32, count: Int, id: ObjectID) -> [SQLValue] {
        var values = [SQLValue]()
        values.reserveCapacity(count)
        for i in first..<(first + Int32(count)) { values.append(SQLValue(statement: stmt, column: i)) }
        if let parent, let p = parent.registeredObject(for: id) {
            for (i, v) in p.changes { values[i] = v }
        }
        return values
    }

    func register(_ object: ManagedObject) { identity.register(object) }

    /// Called from the object's `deinit`: removes its entry, unless the entry is another object's by now.
    package func objectDidDeallocate(_ object: ManagedObject) { identity.unregister(object) }


    // MARK: - Faults

    /// Returns the registered object for `id`, or registers a new fault for it. No I/O: the row may
    /// not exist; reading a value of such a fault throws `.objectNotFound`.
    /// - Complexity: O(1).
    public func object(with id: ObjectID) -> ManagedObject {
        if let existing = registeredObject(for: id) { return existing }
        let object = ManagedObject(objectID: id, link: link, values: nil)
        register(object)
        return object
    }

    /// Returns the object for `id`, fulfilled, or throws when its row no longer exists.
    ///
    /// Runs `SELECT <columns> FROM main."T" WHERE rowid = ?` (or the primary key) unless the object
    /// is already registered and fulfilled.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        guard id.entity.storeName == store.name else {
            throw BatchStoreError(.invalidArgument, "\(id) belongs to store \(id.entity.storeName), not \(store.name)")
        }
        if let existing = registeredObject(for: id) {
            if existing.isDeleted { throw BatchStoreError(.objectNotFound, "\(id) was deleted") }
            if !existing.isFault { return existing }
            try fulfillFault(existing)
            return existing
        }
        guard id.isAddressable else { throw BatchStoreError(.objectNotFound, "\(id) is not a stored row") }
        let object = ManagedObject(objectID: id, link: link, values: nil)
        try fulfillFault(object)
        register(object)
        return object
    }

    /// Reads the object's row; throws `.objectNotFound` if it is gone.
    package func fulfillFault(_ object: ManagedObject) throws {
        let id = object.objectID
        guard id.isAddressable else { throw BatchStoreError(.objectNotFound, "\(id) is not a stored row") }
        let stmts = statements(for: id.entity)
        let values = try withDatabase { db -> [SQLValue]? in
            let statement = try db.cachedStatement(sql: stmts.selectByKey)
            let cursor = try Row.fetchCursor(try statement.bound(id.keyValues))
            guard let row = try cursor.next() else { return nil }
            return (0..<row.count).map { SQLValue(row: row, at: $0) }
        }
        guard var values else {
            throw BatchStoreError(.objectNotFound, "\(id.entity.name) row \(id.keyString) no longer exists")
        }
        if let parentObject = parent?.registeredObject(for: id) {
            if parentObject.isDeleted { throw BatchStoreError(.objectNotFound, "\(id) is deleted in the parent context") }
            for (i, v) in parentObject.changes { values[i] = v }
        }
        object.values = values
    }

    /// The object ID that `uri` (from ``ObjectID/uriRepresentation``) names in this context's store.
    public func objectID(forURIRepresentation uri: String) throws -> ObjectID {
        let id = try ObjectID.parse(uriRepresentation: uri, stores: [store])
        // Entities are per store instance: resolve to this store's entity.
        return id
    }
}


extension ManagedObjectContext {
    /// Calls `handler` with the SQL of every statement this context's connection runs (arguments
    /// shown as `?`), or stops tracing when nil. For logs and for tests that count queries.
    public func traceSQL(_ handler: ((String) -> Void)?) throws { try connection.traceSQL(handler) }

    /// SQLite's `PRAGMA data_version` for this context's connection: it changes when another
    /// connection (another process, another context) commits to the file.
    public func dataVersion() throws -> Int { try connection.dataVersion() &- ownVersionShift }
}
