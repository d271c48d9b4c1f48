import Foundation
import GRDB
import GRDBSQLite

/// A scratchpad of managed objects over one store, with an identity map: at most one object per
/// ``ObjectID``, held weakly, so objects nobody uses go away by themselves.
///
/// Each context owns its own SQLite connection (its temp tables are its own). It is not `Sendable`:
/// Swift 6 keeps it on the thread or actor that made it. For work in the background, make a second
/// context there from the same (Sendable) ``PersistentStore``; both work at the same time.
public final class ManagedObjectContext {
    /// The store the context reads and writes.
    public let store: PersistentStore
    /// The parent context for a child context: its ``save()`` pushes changes to the parent, not the store.
    public let parent: ManagedObjectContext?

    /// How a merge treats objects with unsaved changes whose rows a batch updated.
    public var mergePolicy: MergePolicy = .error

    let db: DatabaseQueue
    let serial: Int
    /// The most rows one undoable batch operation may journal (before-images live in SQLite).
    public var undoLimit = 1_000_000
    /// Recorded batch operations, last on top; each journal is a temp table.
    var undoStack: [UndoEntry] = []

    /// Open collections of this context, held weakly (merges drop their stale batches).
    private var collections: [WeakStorage] = []
    /// Shared by every object of this context; cleared in `deinit`.
    private(set) var link = ContextLink(nil)
    /// The identity map. Entries are unretained: each object removes its own entry in `deinit`
    /// (``objectDidDeallocate(_:)``), so no entry outlives its object, and no weak-reference side
    /// table is allocated per object.
    private var registry: [ObjectID: Unmanaged<ManagedObject>] = [:]
    /// Rowid-keyed objects, per entity (see ``RowidRegistry``): the common case, kept off SipHash.
    private var rowidRegistries: [(entity: Entity, table: RowidRegistry)] = []
    private var lastRowidRegistry: (entity: Entity, table: RowidRegistry)?
    /// Objects with unsaved changes, held strongly until saved or rolled back.
    private var changed: [ObjectID: ManagedObject] = [:]
    private var pendingDeletes: Set<ObjectID> = []
    private var nextTemporaryID: UInt64 = 1
    private var accessDepth = 0
    private var tempTablesToDrop: [String] = []
    private var tempTableCounter = 0
    private var statementsByEntity: [Entity: EntityStatements] = [:]
    /// True once the file is known to be in WAL mode (see ``switchToWALBeforeWriting(_:)``).
    private var walSwitched = false

    nonisolated(unsafe) private static var serialCounter = 0
    private static let serialLock = NSLock()

    /// Opens a context (and a connection) on `store`.
    /// - Complexity: one SQLite open; no rows are read.
    public init(store: PersistentStore) throws {
        self.store = store
        self.parent = nil
        self.db = try store.openConnection()
        self.serial = Self.nextSerial()
        self.link.context = self
    }

    private init(parent: ManagedObjectContext) throws {
        self.store = parent.store
        self.parent = parent
        self.db = try parent.store.openConnection()
        self.serial = Self.nextSerial()
        self.link.context = self
    }

    private static func nextSerial() -> Int {
        serialLock.lock(); defer { serialLock.unlock() }
        serialCounter += 1
        return serialCounter
    }

    /// A child context: it fetches (with batching) like any context, sees the parent's unsaved
    /// values in objects it fulfils, and its ``save()`` hands changes to the parent.
    public func newChildContext() throws -> ManagedObjectContext {
        try ManagedObjectContext(parent: self)
    }

    deinit {
        // Objects that outlive the context see it as gone. Temp tables die with the connection.
        link.context = nil
    }

    // MARK: - Database access

    /// Runs `body` on the context's connection, converting errors to ``BatchStoreError``.
    /// Not reentrant by design: the body must not call back into the context's database.
    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        precondition(accessDepth == 0, "BatchStore: database access is not reentrant (a progress handler or a fault called back into its context)")
        accessDepth += 1
        defer { accessDepth -= 1 }
        do {
            return try db.inDatabase { db in
                if !tempTablesToDrop.isEmpty {
                    for name in tempTablesToDrop { try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))") }
                    tempTablesToDrop.removeAll()
                }
                return try body(db)
            }
        } catch let error as DatabaseError {
            throw BatchStoreError.wrap(error)
        }
        // BatchStoreError and errors thrown by callers' own closures (an insert handler) pass through.
    }

    /// Before a write transaction: switches the file to WAL when the store asks for it at the first
    /// write (``PersistentStore/Options/walAtFirstWrite``), with `PRAGMA journal_mode = WAL` outside
    /// any transaction. Where the file does not allow it (a read-only folder, a lock), the write
    /// goes ahead in the file's own mode and the switch is tried again at the next write.
    func switchToWALBeforeWriting(_ db: Database) {
        guard !walSwitched, store.options.walAtFirstWrite, !store.isReadOnly, !db.isInsideTransaction else { return }
        walSwitched = (try? String.fetchOne(db, sql: "PRAGMA journal_mode = WAL"))?.lowercased() == "wal"
    }

    /// A new unique temp table name for this connection.
    func makeTempTableName(_ prefix: String) -> String {
        tempTableCounter += 1
        return "\(prefix)_\(serial)_\(tempTableCounter)"
    }

    /// Drops a temp table now, or at the next database access when called during one.
    func dropTempTable(_ name: String) {
        if accessDepth == 0 {
            _ = try? db.inDatabase { db in try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))") }
        } else {
            tempTablesToDrop.append(name)
        }
    }

    /// Names of this connection's temp tables (for tests and diagnostics).
    public func temporaryTableNames() throws -> [String] {
        try withDatabase { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_temp_master WHERE type = 'table' ORDER BY name") }
    }

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
    public var registeredObjectCount: Int { registry.count + rowidRegistries.reduce(0) { $0 + $1.table.count } }

    @inline(__always)
    func rowidTable(for entity: Entity) -> RowidRegistry {
        if let last = lastRowidRegistry, last.entity === entity { return last.table }
        for entry in rowidRegistries where entry.entity === entity {
            lastRowidRegistry = entry
            return entry.table
        }
        let entry = (entity: entity, table: RowidRegistry())
        rowidRegistries.append(entry)
        lastRowidRegistry = entry
        return entry.table
    }

    /// Registers an open collection so merges can reach its resident batches.
    func registerCollection(_ storage: BatchStorage) {
        collections.removeAll { $0.storage == nil }
        collections.append(WeakStorage(storage: storage))
    }

    func openCollections() -> [BatchStorage] { collections.compactMap(\.storage) }

    /// Marks an object whose row was deleted outside the context: it drops its values and unsaved
    /// changes and leaves the identity map, so collections show the row as gone.
    func markDeleted(_ object: ManagedObject) {
        object.isDeleted = true
        object.values = nil
        object.changes.removeAll()
        changed[object.objectID] = nil
        pendingDeletes.remove(object.objectID)
        unregister(object)
    }

    /// Every registered object (strong references, for refresh, reset and merges).
    func allRegisteredObjects() -> [ManagedObject] {
        registry.values.map { $0.takeUnretainedValue() }
            + rowidRegistries.flatMap { $0.table.allValues().map { Unmanaged<ManagedObject>.fromOpaque($0).takeUnretainedValue() } }
    }

    /// The registered object for `id`, if one is alive; never does I/O.
    public func registeredObject(for id: ObjectID) -> ManagedObject? {
        if case .rowid(let r) = id.key {
            return rowidTable(for: id.entity).find(r).map { Unmanaged<ManagedObject>.fromOpaque($0).takeUnretainedValue() }
        }
        return registry[id]?.takeUnretainedValue()
    }

    /// The registered object for `id`, or a new one made by `make` and registered, with one probe
    /// (the fault path's identity check). `created` tells which.
    @inline(__always)
    func registeredObject(for id: ObjectID, orInsert make: () -> ManagedObject) -> (object: ManagedObject, created: Bool) {
        var created: ManagedObject?
        if case .rowid(let r) = id.key {
            let (pointer, isNew) = rowidTable(for: id.entity).findOrInsert(r) {
                let object = make()
                created = object
                return Unmanaged.passUnretained(object).toOpaque()
            }
            if isNew, let created { return (created, true) }
            return (Unmanaged<ManagedObject>.fromOpaque(pointer).takeUnretainedValue(), false)
        }
        let entry = registry[id, default: {
            let object = make()
            created = object
            return Unmanaged.passUnretained(object)
        }()].touched()
        if let created { return (created, true) }
        return (entry.takeUnretainedValue(), false)
    }

    /// The object for a row just read: the registered one (a fault gets `values()`), or a new one
    /// made with `values()` and registered, in one probe; nil when the object is marked deleted.
    /// Shared by the batch fault and the eager fetch.
    @inline(__always)
    func adoptRow(_ id: ObjectID, values: () -> [SQLValue]) -> ManagedObject? {
        let (object, created) = registeredObject(for: id) { ManagedObject(objectID: id, link: link, values: values()) }
        if created { return object }
        if object.isDeleted { return nil }
        if !object.hasValues && !object.isInserted { object.values = values() }
        return object
    }

    /// ``adoptPackedRow(_:rows:stmt:from:)`` for a rowid-keyed entity, with its identity table
    /// looked up once per batch by the caller: the sweep's per-row path.
    @inline(__always)
    func adoptPackedRow(rowid: Int64, entity: Entity, table: RowidRegistry, rows: PackedRows, stmt: OpaquePointer?, from first: Int32) -> ManagedObject? {
        if let pointer = table.find(rowid) {
            let object = Unmanaged<ManagedObject>.fromOpaque(pointer).takeUnretainedValue()
            if object.isDeleted { return nil }
            if !object.hasValues && !object.isInserted { object.storage = .packed(rows, rows.appendRow(stmt, from: first)) }
            return object
        }
        let object = ManagedObject(objectID: ObjectID(entity: entity, key: .rowid(rowid)), link: link,
                                   packed: rows, row: rows.appendRow(stmt, from: first))
        table.insert(rowid, Unmanaged.passUnretained(object).toOpaque())
        return object
    }

    /// ``adoptRow(_:values:)`` for a batch fault: a new object, or a registered fault, takes the
    /// current row of `stmt` packed into `rows` (no per-value allocation). Only for contexts without
    /// a parent (a child context lays its parent's unsaved changes over the row).
    @inline(__always)
    func adoptPackedRow(_ id: ObjectID, rows: PackedRows, stmt: OpaquePointer?, from first: Int32) -> ManagedObject? {
        let link = self.link
        let (object, created) = registeredObject(for: id) {
            ManagedObject(objectID: id, link: link, packed: rows, row: rows.appendRow(stmt, from: first))
        }
        if created { return object }
        if object.isDeleted { return nil }
        if !object.hasValues && !object.isInserted { object.storage = .packed(rows, rows.appendRow(stmt, from: first)) }
        return object
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

    func register(_ object: ManagedObject) {
        if case .rowid(let r) = object.objectID.key {
            rowidTable(for: object.entity).insert(r, Unmanaged.passUnretained(object).toOpaque())
            return
        }
        registry[object.objectID] = Unmanaged.passUnretained(object)
    }

    /// Called from the object's `deinit`: removes its entry, unless the entry is another object's by now.
    func objectDidDeallocate(_ object: ManagedObject) {
        unregister(object)
    }

    private func unregister(_ object: ManagedObject) {
        let pointer = Unmanaged.passUnretained(object).toOpaque()
        if case .rowid(let r) = object.objectID.key {
            rowidTable(for: object.entity).remove(r, ifValue: pointer)
            return
        }
        if let entry = registry[object.objectID], entry.toOpaque() == pointer {
            registry[object.objectID] = nil
        }
    }

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
    func fulfillFault(_ object: ManagedObject) throws {
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

    // MARK: - Refreshing

    /// Turns `object` back into a fault so its next access reads the store. With `mergeChanges`,
    /// unsaved changes are kept and laid over the fresh values; without, they are discarded.
    /// - Complexity: O(1); no I/O until the next access.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        object.values = nil
        if !mergeChanges {
            object.changes.removeAll()
            if !object.isInserted {
                changed[object.objectID] = nil
                if pendingDeletes.remove(object.objectID) != nil { object.isDeleted = false }
            }
        }
    }

    /// Refreshes every registered object, keeping unsaved changes (Core Data's `refreshAllObjects`).
    /// - Complexity: O(registered objects).
    public func refreshAllObjects() {
        for o in allRegisteredObjects() where !o.isInserted { o.values = nil }
    }

    /// Forgets every object and unsaved change. Registered objects held elsewhere become detached
    /// faults (their context is nil).
    public func reset() {
        let objects = allRegisteredObjects()
        registry.removeAll()
        for entry in rowidRegistries { entry.table.removeAll() }
        let detached = ContextLink(nil)
        for object in objects { object.link = detached }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    // MARK: - Changes and saving

    /// True when some object has unsaved changes.
    public var hasChanges: Bool { !changed.isEmpty }

    /// Objects with unsaved changes (inserted, updated or deleted), in no particular order.
    public var changedObjects: [ManagedObject] { Array(changed.values) }

    func noteChanged(_ object: ManagedObject) {
        changed[object.objectID] = object
    }

    func isPendingDelete(_ object: ManagedObject) -> Bool { pendingDeletes.contains(object.objectID) }

    /// Inserts a new object with `values`; it gets a permanent ID when saved.
    /// - Throws: `.noSuchEntity`, `.noSuchAttribute`, `.readOnly`.
    public func insertObject(into entityName: String, values: [String: SQLValue] = [:]) throws -> ManagedObject {
        let entity = try store.entity(named: entityName)
        try checkWritable(entity)
        let id = ObjectID(entity: entity, key: .temporary(nextTemporaryID))
        nextTemporaryID += 1
        let object = ManagedObject(objectID: id, link: link, values: nil)
        object.isInserted = true
        for (k, v) in values {
            let i = try object.attributeIndex(k)
            object.changes[i] = v
        }
        register(object)
        changed[id] = object
        return object
    }

    /// Marks `object` for deletion at the next save.
    public func delete(_ object: ManagedObject) throws {
        try checkWritable(object.entity)
        precondition(object.link.context === self, "delete(_:) got an object of another context")
        if object.isInserted {
            changed[object.objectID] = nil
            unregister(object)
            object.isDeleted = true
            return
        }
        object.isDeleted = true
        pendingDeletes.insert(object.objectID)
        changed[object.objectID] = object
    }

    /// The order ``save()`` writes in: deletes, then updates, then inserts (so a unique value a
    /// deleted or changed row gives up is free before an insert takes it), each by entity and then
    /// by key, so consecutive statements touch neighbouring pages (in hash order, a large save
    /// wrote each page many times over).
    static func writesBefore(_ a: ManagedObject, _ b: ManagedObject) -> Bool {
        func phase(_ o: ManagedObject) -> Int { o.isInserted ? 2 : (o.isDeleted ? 0 : 1) }
        let pa = phase(a), pb = phase(b)
        if pa != pb { return pa < pb }
        if a.entity !== b.entity { return a.entity.name < b.entity.name }
        switch (a.objectID.key, b.objectID.key) {
        case (.rowid(let x), .rowid(let y)): return x < y
        case (.temporary(let x), .temporary(let y)): return x < y
        default: return a.objectID.keyString < b.objectID.keyString
        }
    }

    /// Writes every change object by object, in one transaction: an `INSERT`, `UPDATE … WHERE
    /// rowid = ?` or `DELETE … WHERE rowid = ?` per object, through cached statements.
    ///
    /// This is the path batch requests are measured against. A child context hands its changes to
    /// its parent instead (no I/O).
    /// - Throws: `.objectNotFound` when an updated row was deleted meanwhile, `.constraint` and others
    ///   from SQLite; then nothing is written and the changes stay pending.
    /// - Complexity: O(changed objects) statements.
    public func save() throws {
        guard !changed.isEmpty else { return }
        if let parent { try pushChanges(to: parent); return }
        let objects = Array(changed.values).sorted(by: Self.writesBefore)
        var insertedKeys: [(ManagedObject, ObjectKey)] = []
        try withDatabase { db in
            switchToWALBeforeWriting(db)
            try db.inTransaction(.immediate) {
                for object in objects {
                    let entity = object.entity
                    let stmts = statements(for: entity)
                    if object.isInserted {
                        let indexes = object.changes.keys.sorted()
                        let sql = stmts.insertSQL(columns: indexes)
                        try db.cachedStatement(sql: sql).bound(indexes.compactMap { object.changes[$0] }).execute()
                        if entity.isKeyedByRowid {
                            insertedKeys.append((object, .rowid(db.lastInsertedRowID)))
                        } else {
                            let key = try entity.keyColumns.map { name -> SQLValue in
                                guard let i = entity.indexOfAttribute(named: name), let v = object.changes[i] else {
                                    throw BatchStoreError(.constraint, "\(entity.name): primary key column \(name) needs a value")
                                }
                                return v
                            }
                            insertedKeys.append((object, .primaryKey(key)))
                        }
                    } else if pendingDeletes.contains(object.objectID) {
                        try db.cachedStatement(sql: stmts.deleteByKey).bound(object.objectID.keyValues).execute()
                    } else if !object.changes.isEmpty {
                        let indexes = object.changes.keys.sorted()
                        let sql = stmts.updateSQL(columns: indexes)
                        try db.cachedStatement(sql: sql).bound(indexes.compactMap { object.changes[$0] } + object.objectID.keyValues).execute()
                        if db.changesCount == 0 {
                            throw BatchStoreError(.objectNotFound, "cannot save \(object.objectID): the row was deleted by someone else")
                        }
                    }
                }
                return .commit
            }
        }
        // Success: commit the new state in memory.
        for object in objects {
            if pendingDeletes.contains(object.objectID) {
                unregister(object)
                object.values = nil
            } else if !object.isInserted, var values = object.values {
                for (i, v) in object.changes { values[i] = v }
                object.values = values
            }
            object.changes.removeAll()
        }
        for (object, key) in insertedKeys {
            unregister(object)
            object.objectID = ObjectID(entity: object.entity, key: key)
            object.isInserted = false
            object.values = nil // defaults are read on next access
            register(object)
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    /// Discards every unsaved change.
    public func rollback() {
        for object in changed.values {
            object.changes.removeAll()
            if object.isInserted { unregister(object); object.isDeleted = true }
            if pendingDeletes.contains(object.objectID) { object.isDeleted = false }
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    private func pushChanges(to parent: ManagedObjectContext) throws {
        for object in changed.values {
            if object.isInserted {
                let values = Dictionary(uniqueKeysWithValues: object.changes.map { (object.entity.attributes[$0.key].name, $0.value) })
                _ = try parent.insertObject(into: object.entity.name, values: values)
            } else if pendingDeletes.contains(object.objectID) {
                try parent.delete(parent.object(with: object.objectID))
            } else {
                let target = parent.object(with: object.objectID)
                for (i, v) in object.changes { target.changes[i] = v }
                parent.noteChanged(target)
            }
            object.changes.removeAll()
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    /// The object ID that `uri` (from ``ObjectID/uriRepresentation``) names in this context's store.
    public func objectID(forURIRepresentation uri: String) throws -> ObjectID {
        let id = try ObjectID.parse(uriRepresentation: uri, stores: [store])
        // Entities are per store instance: resolve to this store's entity.
        return id
    }
}

struct WeakStorage {
    weak var storage: BatchStorage?
}

/// SQL text for one entity, built once per context.
final class EntityStatements {
    let entity: Entity
    /// `t."c1", t."c2", …` in attribute order.
    let columnList: String
    /// `t."rowid" = ?` or `t."a" = ? AND t."b" = ?`.
    let keyMatch: String
    let selectByKey: String
    let deleteByKey: String
    private var updateCache: [[Int]: String] = [:]
    private var insertCache: [[Int]: String] = [:]

    init(entity: Entity) {
        self.entity = entity
        self.columnList = entity.attributes.map { "t.\(quoteIdentifier($0.name))" }.joined(separator: ", ")
        let keys = entity.keyColumns
        self.keyMatch = keys.map { "t.\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
        let table = "main.\(quoteIdentifier(entity.name))"
        self.selectByKey = "SELECT \(columnList.isEmpty ? "NULL" : columnList) FROM \(table) AS t WHERE \(keyMatch.isEmpty ? "0" : keyMatch)"
        self.deleteByKey = "DELETE FROM \(table) AS t WHERE \(keyMatch.isEmpty ? "0" : keyMatch)"
    }

    func updateSQL(columns: [Int]) -> String {
        if let s = updateCache[columns] { return s }
        let sets = columns.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }.joined(separator: ", ")
        let s = "UPDATE main.\(quoteIdentifier(entity.name)) AS t SET \(sets) WHERE \(keyMatch)"
        updateCache[columns] = s
        return s
    }

    func insertSQL(columns: [Int]) -> String {
        if let s = insertCache[columns] { return s }
        let table = "main.\(quoteIdentifier(entity.name))"
        let s: String
        if columns.isEmpty {
            s = "INSERT INTO \(table) DEFAULT VALUES"
        } else {
            let names = columns.map { quoteIdentifier(entity.attributes[$0].name) }.joined(separator: ", ")
            s = "INSERT INTO \(table) (\(names)) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
        }
        insertCache[columns] = s
        return s
    }
}

extension ManagedObjectContext {
    /// Calls `handler` with the SQL of every statement this context's connection runs (arguments
    /// shown as `?`), or stops tracing when nil. For logs and for tests that count queries.
    public func traceSQL(_ handler: ((String) -> Void)?) throws {
        try withDatabase { db in
            if let handler {
                db.trace(options: .statement) { event in
                    if case .statement(let s) = event { handler(s.sql) }
                }
            } else {
                db.trace(options: .statement, nil)
            }
        }
    }
}

extension Unmanaged {
    /// A mutating no-op, so `dictionary[key, default: value].touched()` inserts a missing entry
    /// through the modify accessor: one hash lookup for find-or-insert.
    @inline(__always)
    mutating func touched() -> Unmanaged { self }
}

extension ManagedObjectContext {
    /// SQLite's `PRAGMA data_version` for this context's connection: it changes when another
    /// connection (another process, another context) commits to the file.
    public func dataVersion() throws -> Int {
        try withDatabase { db in try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }
}
