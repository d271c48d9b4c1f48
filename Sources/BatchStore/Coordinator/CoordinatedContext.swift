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
    /// The connection that sorts across stores and holds results' ID tables: `main` is the first
    /// store; the others are attached as `bs_store1`, `bs_store2`, ….
    let connection: Connection
    /// Open results, held weakly (merges and undo drop their stale batches).
    let openResults = OpenResults()
    /// The stores each undoable edit changed, last on top: ``undo()`` undoes them together.
    private var undoGroups: [[String]] = []

    public init(coordinator: PersistentStoreCoordinator) throws {
        self.coordinator = coordinator
        contexts = try coordinator.stores.map { try ManagedObjectContext(store: $0) }
        let queue = try coordinator.stores[0].openConnection()
        connection = Connection(queue)
        do {
            try queue.inDatabase { db in
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
    ///   - request: what to fetch: the entity, predicate, sort, limit, offset and batch size.
    ///   - affectedStores: the names of the stores to fetch from; `nil` for every store.
    ///   - residentBatches: how many batches of rows stay in memory (least recently used go first).
    ///   - firstBatch: when given, called with the result's first `fetchBatchSize` objects before
    ///     the ID fetch runs (one `… ORDER BY … LIMIT` query, which needs no full sort).
    ///   - progress: called about every 50 ms during the ID fetch; `.cancel` stops it (the call
    ///     then throws `.cancelled` and leaves no temp table).
    public func fetchBatched(_ request: FetchRequest, affectedStores: [String]? = nil, residentBatches: Int = 8,
                             firstBatch: (([ManagedObject]) -> Void)? = nil,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> CoordinatedCollection {
        var request = request
        if request.fetchBatchSize <= 0 { request.fetchBatchSize = 100 }
        try request.checkBounds()
        let entities = try coordinator.entities(named: request.entityName, in: affectedStores)
        try IDQuery.requireOneRowKey(entities[0], entityName: request.entityName)
        if let firstBatch {
            var first = request
            first.fetchLimit = request.fetchLimit > 0 ? min(request.fetchLimit, request.fetchBatchSize) : request.fetchBatchSize
            let read = { try self.objects(ofIDQuery: try self.idQuery(first, entities: entities), entities: entities) }
            // The LIMIT query may scan far: the caller's handler stops it as it stops the ID fetch.
            if let progress, connection.interruption == nil {
                firstBatch(try interruptible({ progress(IDFetchProgress(rowsScanned: 0, estimatedRows: nil, elapsed: $0.elapsed)) }, read))
            } else {
                firstBatch(try read())
            }
        }
        let storage = try ResultStorage(source: CoordinatedResultSource(owner: self, entities: entities), request: request,
                                        residentBatches: residentBatches, progress: progress)
        openResults.add(storage)
        return BatchFaultingCollection(storage: storage)
    }

    /// The ID query over `entities` (one per store), from the one fetch compiler.
    func idQuery(_ request: FetchRequest, entities: [Entity]) throws -> IDQuery {
        try IDQuery(request, parts: entities.map { entity in
            let i = storeIndex(of: entity)
            return IDQuery.Part(entity: entity, schema: coordinator.stores[i].schema, databaseName: Self.databaseName(i), storeIndex: i)
        })
    }

    /// Runs an ID query directly (for a first batch) and faults its rows, in result order.
    private func objects(ofIDQuery query: IDQuery, entities: [Entity]) throws -> [ManagedObject] {
        let pairs: [(store: Int, key: SQLValue)] = try connection.withDatabase { db in
            let statement = try db.makeStatement(sql: query.select).bound(query.arguments)
            let cursor = try Row.fetchCursor(statement)
            var pairs: [(store: Int, key: SQLValue)] = []
            while try cursor.next() != nil {
                pairs.append((Int(sqlite3_column_int64(statement.sqliteStatement, 0)), SQLValue(statement: statement.sqliteStatement, column: 1)))
            }
            return pairs
        }
        var byStore: [Int: Entity] = [:]
        for entity in entities { byStore[storeIndex(of: entity)] = entity }
        return try objects(for: pairs, entities: byStore).compactMap { $0 }
    }

    /// The objects for `(store, key)` pairs, in their order: one query per store (500 keys at a
    /// time) into that store's context; nil for a row that is gone. A result's batch fault and
    /// its first batch both come here.
    func objects(for pairs: [(store: Int, key: SQLValue)], entities: [Int: Entity]) throws -> [ManagedObject?] {
        var slots = [ManagedObject?](repeating: nil, count: pairs.count)
        for (store, indexes) in Dictionary(grouping: pairs.indices, by: { pairs[$0].store }) {
            guard let entity = entities[store] else { continue }
            let found = try contexts[store].objects(of: entity, keys: indexes.map { pairs[$0].key })
            for i in indexes { slots[i] = found[pairs[i].key] }
        }
        return slots
    }

    /// Rows of every store's context, refreshed (after another writer changed the files).
    public func refreshAllObjects() {
        for context in contexts { context.refreshAllObjects() }
        openResults.evictStale()
    }

    /// True when an undoable edit made through this context can be undone (``undo()``).
    public var canUndo: Bool { !undoGroups.isEmpty }

    /// What ``undo()`` would take back now: the last edit's parts in every store it changed, as one.
    public func undoSummary() throws -> UndoSummary? {
        guard let stores = undoGroups.last else { return nil }
        let parts = try stores.compactMap { try context(for: $0).undoSummary() }
        guard let first = parts.first else { return nil }
        return parts.dropFirst().reduce(first, +)
    }

    /// Why an edit of `rows` rows of `entity` could not be undone in one of the stores that have
    /// it (each is checked as if it held them all), or nil.
    public func undoRefusal(_ entity: Entity, rows: Int, deleting: Bool, assigning: [String]) -> String? {
        let entities = (try? coordinator.entities(named: entity.name, in: nil)) ?? []
        for part in entities {
            if let why = contexts[storeIndex(of: part)].undoRefusal(part, rows: rows, deleting: deleting, assigning: assigning) { return why }
        }
        return nil
    }

    /// The sum of the stores' `PRAGMA data_version`: it changes when another connection commits
    /// to any of them.
    public func dataVersion() throws -> Int {
        try contexts.reduce(0) { $0 &+ (try $1.dataVersion()) }
    }

    // MARK: Batch requests

    /// Runs a batch update in each affected store that has the entity (default: all), one
    /// transaction per store. All or nothing across stores: every store is checked writable before
    /// anything is written, and when a later store fails, the stores already changed are undone.
    /// - Returns: the stores' results added up; each store's own in ``BatchResult/byStore``.
    public func execute(_ request: BatchUpdateRequest, affectedStores: [String]?, undoable: Bool = false) throws -> BatchResult {
        try runAcrossStores(entityName: request.entityName, affectedStores: affectedStores, undoable: undoable) { context, undo in
            try context.execute(request, undoable: undo)
        }
    }

    /// Runs a batch update on the rows of `objectIDs` (and `request.predicate`), in the stores
    /// those IDs belong to; all or nothing across them, like the update above.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID], undoable: Bool = false) throws -> BatchResult {
        let byStore = Dictionary(grouping: objectIDs) { $0.entity.storeName }
        guard !byStore.isEmpty else { return BatchResult(combining: [:]) }
        return try runAcrossStores(entityName: request.entityName, affectedStores: byStore.keys.sorted(), undoable: undoable) { context, undo in
            var part = request
            let only = try FetchPredicate.matching(byStore[context.store.name] ?? [])
            part.predicate = part.predicate.map { $0 && only } ?? only
            return try context.execute(part, undoable: undo)
        }
    }

    /// Runs a batch delete in each affected store (default: all); see the update for atomicity.
    /// A delete by object IDs goes to the stores those IDs belong to.
    public func execute(_ request: BatchDeleteRequest, affectedStores: [String]?, undoable: Bool = false) throws -> BatchResult {
        if let ids = request.objectIDs {
            let byStore = Dictionary(grouping: ids) { $0.entity.storeName }
            let stores = byStore.keys.sorted()
            guard let name = ids.first?.entity.name else { return BatchResult(combining: [:]) }
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

    /// Runs a batch update in every store that has the entity; see ``execute(_:affectedStores:undoable:)-(BatchUpdateRequest,_,_)``.
    public func execute(_ request: BatchUpdateRequest, undoable: Bool = false) throws -> BatchResult {
        try execute(request, affectedStores: nil, undoable: undoable)
    }

    /// Runs a batch delete in every store that has the entity; see ``execute(_:affectedStores:undoable:)-(BatchDeleteRequest,_,_)``.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> BatchResult {
        try execute(request, affectedStores: nil, undoable: undoable)
    }

    /// Checks a batch update against each store's constraints without writing anything: rows
    /// matched and failing added up, the first store's failing example.
    public func validate(_ request: BatchUpdateRequest) throws -> ValidationReport {
        var total = ValidationReport(rowsMatched: 0, rowsFailing: 0, example: nil)
        var previews: [UpdatePreview] = []
        for entity in try coordinator.entities(named: request.entityName) {
            let report = try context(for: entity.storeName).validate(request)
            total.rowsMatched += report.rowsMatched
            total.rowsFailing += report.rowsFailing
            total.example = total.example ?? report.example
            if var preview = report.preview {
                // Keys repeat across files: each sample row names its file.
                for i in preview.sample.indices { preview.sample[i].store = entity.storeName }
                previews.append(preview)
            }
        }
        total.preview = previews.isEmpty ? nil : UpdatePreview.combining(previews, sample: 3)
        return total
    }

    /// Inserts into one store (default: the first).
    /// Undoable, it joins the undo groups like any edit made through this context.
    public func execute(_ request: BatchInsertRequest, into storeName: String? = nil, undoable: Bool = false) throws -> BatchResult {
        let name = storeName ?? coordinator.stores[0].name
        let result = try context(for: name).execute(request, undoable: undoable)
        if undoable { undoGroups.append([name]) }
        return result
    }

    func runAcrossStores(entityName: String, affectedStores: [String]?, undoable: Bool,
                                 _ body: (ManagedObjectContext, Bool) throws -> BatchResult) throws -> BatchResult {
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
        if undoable && !done.isEmpty { undoGroups.append(done.map(\.store.name)) }
        return BatchResult(combining: results)
    }

    // MARK: Merging and undo

    /// Merges `changes` into every store's context (IDs carry their store, so each context takes
    /// its own) and drops stale batches of this context's open results.
    @discardableResult
    public func mergeChanges(_ changes: ChangeSet) -> [MergeReport] {
        let reports = ManagedObjectContext.mergeChanges(changes, into: contexts)
        openResults.evictStale()
        return reports
    }

    /// Undoes the last recorded batch operation of the store named `storeName`: the store's part
    /// of the last edit made through this context that changed it (which then leaves that edit's
    /// group). Edits run on ``contexts`` directly are not grouped; undo them there.
    @discardableResult
    public func undo(store storeName: String) throws -> ChangeSet {
        let changes = try context(for: storeName).undo()
        // The store's last edit is undone: it leaves the group it was part of.
        if let g = undoGroups.lastIndex(where: { $0.contains(storeName) }) {
            undoGroups[g].removeAll { $0 == storeName }
            if undoGroups[g].isEmpty { undoGroups.remove(at: g) }
        }
        openResults.evictStale()
        return changes
    }

    /// Undoes the last undoable edit made through this context, in every store it changed, last
    /// store first. When a store's undo fails (a lock, I/O), the stores already undone leave the
    /// group and the rest stay in it, so calling `undo()` again finishes the job, as one store's
    /// undo keeps its entry when it fails.
    /// - Throws: `.nothingToUndo` when there is none.
    @discardableResult
    public func undo() throws -> ChangeSet {
        guard var stores = undoGroups.last else { throw BatchStoreError(.nothingToUndo, "nothing to undo") }
        var all = ChangeSet()
        defer { openResults.evictStale() }
        while let name = stores.last {
            all = all + (try context(for: name).undo())
            stores.removeLast()
            undoGroups[undoGroups.count - 1] = stores
        }
        undoGroups.removeLast()
        return all
    }
}
