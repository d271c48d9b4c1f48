import Foundation
import GRDB
import GRDBSQLite

/// A context over a ``PersistentStoreCoordinator``: one ``ManagedObjectContext`` per store (each
/// with its identity map, merging and undo), plus one connection that sees every store attached,
/// for the ID fetch that sorts across them.
///
/// Not thread-safe, like its contexts: confine it to one thread or actor.
public final class CoordinatedContext {
    public let coordinator: PersistentStoreCoordinator
    /// One context per store, in the coordinator's order.
    public let contexts: [ManagedObjectContext]
    /// `main` is the first store; the others are attached as `bs_store1`, `bs_store2`, ….
    let sortQueue: DatabaseQueue
    private var collections: [WeakCoordinatedStorage] = []
    private var serial = 0

    public init(coordinator: PersistentStoreCoordinator) throws {
        self.coordinator = coordinator
        contexts = try coordinator.stores.map { try ManagedObjectContext(store: $0) }
        sortQueue = try coordinator.stores[0].openConnection()
        do {
            try sortQueue.inDatabase { db in
                for (i, store) in coordinator.stores.enumerated().dropFirst() {
                    try db.execute(sql: "ATTACH DATABASE ? AS \(Self.databaseName(i))", arguments: [store.path])
                }
            }
        } catch {
            throw BatchStoreError.wrap(error)
        }
    }

    static func databaseName(_ storeIndex: Int) -> String { storeIndex == 0 ? "main" : "bs_store\(storeIndex)" }

    /// The context of the store named `name`.
    public func context(for storeName: String) throws -> ManagedObjectContext {
        guard let i = coordinator.stores.firstIndex(where: { $0.name == storeName }) else {
            _ = try coordinator.store(named: storeName)   // throws the message listing the stores
            preconditionFailure("unreachable")
        }
        return contexts[i]
    }

    func storeIndex(of entity: Entity) -> Int {
        guard let i = coordinator.stores.firstIndex(where: { $0.name == entity.storeName }) else {
            preconditionFailure("entity \(entity) does not belong to this coordinator")
        }
        return i
    }

    // MARK: Fetching

    /// Fetches `request.entityName` from every store that has it (or `affectedStores`) as one
    /// result: one ID fetch sorts across all stores in SQLite, `(store, key)` pairs go into a temp
    /// table, and batches fault per store.
    ///
    /// Runs `INSERT INTO temp.ids (store, key) SELECT s, k FROM (SELECT 0 AS s, t.rowid AS k, <sort
    /// keys> FROM main."T" AS t WHERE … UNION ALL SELECT 1, … FROM bs_store1."T" AS t WHERE …)
    /// ORDER BY <sort keys>, s, k`. Ties sort by store, then key.
    /// - Complexity: the ID fetch is O(rows) in SQLite; memory O(batch size × resident batches).
    ///
    /// - Parameters:
    ///   - firstBatch: when given, called with the result's first `fetchBatchSize` objects before
    ///     the ID fetch runs (one `… ORDER BY … LIMIT` query, which needs no full sort).
    ///   - progress: called about every 50 ms during the ID fetch; `.cancel` stops it (the call
    ///     then throws `.cancelled` and leaves no temp table).
    public func fetchBatched(_ request: FetchRequest, affectedStores: [String]? = nil, residentBatches: Int = 8,
                             firstBatch: (([ManagedObject]) -> Void)? = nil,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> CoordinatedCollection {
        var request = request
        if request.fetchBatchSize <= 0 { request.fetchBatchSize = 100 }
        guard request.fetchLimit >= 0, request.fetchOffset >= 0 else {
            throw BatchStoreError(.invalidArgument, "fetchLimit and fetchOffset must not be negative")
        }
        let entities = try coordinator.entities(named: request.entityName, in: affectedStores)
        guard entities[0].keyColumns.count == 1 else {
            throw BatchStoreError(.invalidQuery, "\(request.entityName): results across stores need a table with one row key (a rowid or a one-column primary key)")
        }
        if let firstBatch {
            var first = request
            first.fetchLimit = request.fetchLimit > 0 ? min(request.fetchLimit, request.fetchBatchSize) : request.fetchBatchSize
            let pairs = try runIDQuery(first, entities: entities)
            var slots = [ManagedObject?](repeating: nil, count: pairs.count)
            for (store, indexes) in Dictionary(grouping: pairs.indices, by: { pairs[$0].store }) {
                guard let entity = entities.first(where: { storeIndex(of: $0) == store }) else { continue }
                let found = try contexts[store].objects(of: entity, keys: indexes.map { pairs[$0].key })
                for i in indexes { slots[i] = found[pairs[i].key] }
            }
            let objects = slots.compactMap { $0 }
            firstBatch(objects)
        }
        let fetched = try runIDFetch(request, entities: entities, progress: progress)
        let storage = CoordinatedStorage(owner: self, entities: entities, request: request, table: fetched.table, count: fetched.count,
                                         residentLimit: residentBatches, idFetchSeconds: fetched.seconds)
        collections.removeAll { $0.storage == nil }
        collections.append(WeakCoordinatedStorage(storage: storage))
        return CoordinatedCollection(storage: storage)
    }

    /// The sorted `SELECT s, k FROM (… UNION ALL …) ORDER BY …` over `entities`, with its arguments.
    private func idQuery(_ request: FetchRequest, entities: [Entity]) throws -> (sql: String, arguments: [SQLValue]) {
        var selects: [String] = []
        var arguments: [SQLValue] = []
        for entity in entities {
            let i = storeIndex(of: entity)
            let builder = QueryBuilder(entity: entity, schema: coordinator.stores[i].schema, databaseName: Self.databaseName(i))
            // The SELECT list comes before WHERE in the text, so its arguments are bound first.
            let sortColumns = try request.sortDescriptors.enumerated().map { "\(try builder.column(for: $1.keyPath)) AS o\($0)" }
            let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
            let key = builder.keyColumnsSQL[0]
            selects.append("SELECT \(i) AS s, \(key) AS k\(sortColumns.map { ", " + $0 }.joined()) FROM \(builder.fromClause)\(condition)")
            arguments += builder.arguments
        }
        let order = request.sortDescriptors.enumerated().map { "o\($0) \($1.ascending ? "ASC" : "DESC")" } + ["s ASC", "k ASC"]
        var limit = ""
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            limit = " LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset)"
        }
        return ("SELECT s, k FROM (\(selects.joined(separator: " UNION ALL "))) ORDER BY \(order.joined(separator: ", "))\(limit)", arguments)
    }

    /// Runs the ID query directly (for a first batch): `(store, key)` pairs in result order.
    private func runIDQuery(_ request: FetchRequest, entities: [Entity]) throws -> [(store: Int, key: SQLValue)] {
        let (sql, arguments) = try idQuery(request, entities: entities)
        do {
            return try sortQueue.inDatabase { db in
                let statement = try db.makeStatement(sql: sql).bound(arguments)
                let cursor = try Row.fetchCursor(statement)
                var pairs: [(store: Int, key: SQLValue)] = []
                while try cursor.next() != nil {
                    pairs.append((Int(sqlite3_column_int64(statement.sqliteStatement, 0)), SQLValue(statement: statement.sqliteStatement, column: 1)))
                }
                return pairs
            }
        } catch {
            throw BatchStoreError.wrap(error)
        }
    }

    /// Creates a new ID table for `request` over `entities` and fills it in one sorted statement.
    func runIDFetch(_ request: FetchRequest, entities: [Entity], progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> (table: String, count: Int, seconds: Double) {
        let (select, arguments) = try idQuery(request, entities: entities)
        serial += 1
        let table = "bs_multi_ids_\(serial)"
        let sql = "INSERT INTO temp.\(quoteIdentifier(table)) (store, key) \(select)"
        let started = Date()
        do {
            let count = try sortQueue.inDatabase { db -> Int in
                try db.execute(sql: "CREATE TEMP TABLE \(quoteIdentifier(table)) (pos INTEGER PRIMARY KEY, store INTEGER NOT NULL, key)")
                do {
                    let statement = try db.makeStatement(sql: sql)
                    if let progress {
                        try ProgressReporter.run(db: db, statement: statement, estimate: nil, handler: progress) {
                            try statement.execute(arguments: arguments.statementArguments)
                        }
                    } else {
                        try statement.execute(arguments: arguments.statementArguments)
                    }
                } catch {
                    try? db.execute(sql: "DROP TABLE temp.\(quoteIdentifier(table))")
                    throw error
                }
                return db.changesCount
            }
            return (table, count, Date().timeIntervalSince(started))
        } catch {
            throw BatchStoreError.wrap(error)
        }
    }

    /// Rows of every store's context, refreshed (after another writer changed the files).
    public func refreshAllObjects() {
        for context in contexts { context.refreshAllObjects() }
        for storage in collections.compactMap(\.storage) { storage.evictStale() }
    }

    /// True when some store's context can undo.
    public var canUndo: Bool { contexts.contains { $0.canUndo } }

    /// The sum of the stores' `PRAGMA data_version`: it changes when another connection commits
    /// to any of them.
    public func dataVersion() throws -> Int {
        try contexts.reduce(0) { $0 &+ (try $1.dataVersion()) }
    }

    func dropTempTable(_ name: String) {
        try? sortQueue.inDatabase { db in try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))") }
    }

    // MARK: Batch requests

    /// Runs a batch update in each affected store that has the entity (default: all), one
    /// transaction per store. All or nothing across stores: every store is checked writable before
    /// anything is written, and when a later store fails, the stores already changed are undone.
    /// - Returns: each store's result, by store name.
    public func execute(_ request: BatchUpdateRequest, affectedStores: [String]? = nil, undoable: Bool = false) throws -> [String: BatchResult] {
        try runAcrossStores(entityName: request.entityName, affectedStores: affectedStores, undoable: undoable) { context, undo in
            try context.execute(request, undoable: undo)
        }
    }

    /// Runs a batch update on the rows of `objectIDs` (and `request.predicate`), in the stores
    /// those IDs belong to; all or nothing across them, like the update above.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID], undoable: Bool = false) throws -> [String: BatchResult] {
        let byStore = Dictionary(grouping: objectIDs) { $0.entity.storeName }
        guard !byStore.isEmpty else { return [:] }
        return try runAcrossStores(entityName: request.entityName, affectedStores: byStore.keys.sorted(), undoable: undoable) { context, undo in
            var part = request
            let only = try FetchPredicate.matching(byStore[context.store.name] ?? [])
            part.predicate = part.predicate.map { $0 && only } ?? only
            return try context.execute(part, undoable: undo)
        }
    }

    /// Runs a batch delete in each affected store (default: all); see the update for atomicity.
    /// A delete by object IDs goes to the stores those IDs belong to.
    public func execute(_ request: BatchDeleteRequest, affectedStores: [String]? = nil, undoable: Bool = false) throws -> [String: BatchResult] {
        if let ids = request.objectIDs {
            let byStore = Dictionary(grouping: ids) { $0.entity.storeName }
            let stores = byStore.keys.sorted()
            guard let name = ids.first?.entity.name else { return [:] }
            return try runAcrossStores(entityName: name, affectedStores: stores, undoable: undoable) { context, undo in
                var part = request
                part.objectIDs = byStore[context.store.name] ?? []
                return try context.execute(part, undoable: undo)
            }
        }
        guard let name = request.fetchRequest?.entityName else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        return try runAcrossStores(entityName: name, affectedStores: affectedStores, undoable: undoable) { context, undo in
            try context.execute(request, undoable: undo)
        }
    }

    /// Inserts into one store (default: the first).
    public func execute(_ request: BatchInsertRequest, into storeName: String? = nil, undoable: Bool = false) throws -> BatchResult {
        try context(for: storeName ?? coordinator.stores[0].name).execute(request, undoable: undoable)
    }

    func runAcrossStores(entityName: String, affectedStores: [String]?, undoable: Bool,
                                 _ body: (ManagedObjectContext, Bool) throws -> BatchResult) throws -> [String: BatchResult] {
        let entities = try coordinator.entities(named: entityName, in: affectedStores)
        for entity in entities {
            let store = coordinator.stores[storeIndex(of: entity)]
            if store.isReadOnly { throw BatchStoreError(.readOnly, "store \(store.name) is read-only; nothing was changed (limit the stores with affectedStores)") }
            if entity.isReadOnly { throw BatchStoreError(.readOnly, "\(entity.name) in store \(store.name) is a view or has no row key; nothing was changed") }
        }
        var results: [String: BatchResult] = [:]
        var done: [ManagedObjectContext] = []
        // With several stores, each is journaled so a later failure can put the earlier ones back.
        let journal = undoable || entities.count > 1
        for entity in entities {
            let context = contexts[storeIndex(of: entity)]
            do {
                results[entity.storeName] = try body(context, journal)
                done.append(context)
            } catch {
                for earlier in done.reversed() { _ = try? earlier.undo() }
                throw BatchStoreError.wrap(error)
            }
        }
        if journal && !undoable { for context in done { context.discardLastUndo() } }
        return results
    }

    // MARK: Merging and undo

    /// Merges `changes` into every store's context (IDs carry their store, so each context takes
    /// its own) and drops stale batches of this context's open results.
    @discardableResult
    public func mergeChanges(_ changes: ChangeSet) -> [MergeReport] {
        let reports = ManagedObjectContext.mergeChanges(changes, into: contexts)
        for storage in collections.compactMap(\.storage) { storage.evictStale() }
        return reports
    }

    /// Undoes the last recorded batch operation of the store named `storeName`.
    @discardableResult
    public func undo(store storeName: String) throws -> ChangeSet {
        let changes = try context(for: storeName).undo()
        for storage in collections.compactMap(\.storage) { storage.evictStale() }
        return changes
    }
}

private struct WeakCoordinatedStorage {
    weak var storage: CoordinatedStorage?
}
