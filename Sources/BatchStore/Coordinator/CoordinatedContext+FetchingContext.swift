import Foundation

extension CoordinatedContext: FetchingContext {
    public var engineName: String { "SQLite" }
    public var engineTraits: EngineTraits { .sqliteFile }
    public var storeNames: [String] { coordinator.stores.map(\.name) }
    public var fileProblem: String? { coordinator.stores.lazy.compactMap(\.fileProblem).first }
    public func settleMovedFile() { for context in contexts { context.settleMovedFile() } }
    public var readerMaker: (@Sendable () throws -> any FetchingContext)? {
        { [coordinator] in try CoordinatedContext(coordinator: coordinator) }
    }
    public var entities: [Entity] { coordinator.stores[0].schema.entities }
    public var readOnlyReason: String? { coordinator.stores.first(where: \.isReadOnly).map { "store \($0.name) is read-only" } }
    public func entity(named name: String) throws -> Entity { try coordinator.entities(named: name)[0] }

    public func fetchBatched(_ request: FetchRequest, residentBatches: Int = 8, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        try fetchBatched(request, affectedStores: nil, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress)
    }

    /// The rows of every store that has `request`'s entity, with the limit and offset applied
    /// once to the whole, as a result across the stores would hold them.
    /// How many rows `request` would delete in every store that has its entity, after the
    /// refusals the delete makes (a read-only store, a view); writes nothing.
    public func countDelete(_ request: BatchDeleteRequest) throws -> Int {
        guard let fetch = request.fetchRequest else {
            return try contexts.reduce(0) { $0 + (try $1.countDelete(request)) }
        }
        for entity in try coordinator.entities(named: fetch.entityName, in: nil) {
            let store = coordinator.stores[storeIndex(of: entity)]
            if store.isReadOnly { throw BatchStoreError(.readOnly, "store \(store.name) is read-only; nothing was changed (limit the stores with affectedStores)") }
            if entity.isReadOnly { throw BatchStoreError(.readOnly, "\(entity.name) in store \(store.name) is a view or has no row key; nothing was changed") }
        }
        return try count(for: fetch)
    }

    public func count(for request: FetchRequest) throws -> Int {
        try request.checkBounds()
        var each = request
        each.fetchLimit = 0
        each.fetchOffset = 0
        let total = try coordinator.entities(named: request.entityName).reduce(0) { try $0 + context(for: $1.storeName).count(for: each) }
        let afterOffset = max(0, total - request.fetchOffset)
        return request.fetchLimit > 0 ? min(request.fetchLimit, afterOffset) : afterOffset
    }

    /// The object `id` names, read by the context of the store the ID names.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        try context(for: id.entity.storeName).existingObject(with: id)
    }

    public var registeredObjectCount: Int { contexts.reduce(0) { $0 + $1.registeredObjectCount } }
    public func merge(_ changes: ChangeSet) { mergeChanges(changes) }
}

extension CoordinatedContext {
    /// Streams the rows of every store that has `request`'s entity as one statement across them,
    /// in the order the batched result would hold them (ties by store, then key); each row's
    /// ``StreamedRow/storeIndex`` says its store. Columns are the first store's, found by name in
    /// each store. See ``ManagedObjectContext/streamRows(_:_:)``.
    public func streamRows(_ request: FetchRequest, _ body: (StreamedRow) throws -> Void) throws {
        if contexts.contains(where: \.hasChanges) {
            throw BatchStoreError(.invalidArgument, "streamRows reads the saved rows: save or roll back the contexts' unsaved changes first")
        }
        let entities = try coordinator.entities(named: request.entityName)
        guard let first = entities.first else { return }
        let columns = first.attributes.map(\.name)
        let parts = entities.map { entity in
            let i = storeIndex(of: entity)
            return IDQuery.Part(entity: entity, schema: coordinator.stores[i].schema, databaseName: Self.databaseName(i), storeIndex: i)
        }
        guard request.sortDescriptors.isEmpty, parts.count > 1 else {
            let query = try IDQuery.rows(request, parts: parts, columns: columns)
            try connection.withDatabase { db in try query.stream(in: db, columns: columns.count, storeColumn: true) { try body($0); return true } }
            return
        }
        // Unsorted, the order is store, then key: each store's rows in key order, one store after
        // another, in one read transaction. No sort of the whole, which UNION ALL … ORDER BY s, k
        // would run; the limit and offset count across the stores.
        var each = request
        each.fetchLimit = 0
        each.fetchOffset = 0
        for part in parts { try IDQuery.requireOneRowKey(part.entity, entityName: request.entityName) }
        let queries = try parts.map { part -> (IDQuery, Int) in
            var one = part
            one.storeIndex = nil
            return (try IDQuery.rows(each, parts: [one], columns: columns), part.storeIndex ?? 0)
        }
        var toSkip = request.fetchOffset
        var left = request.fetchLimit > 0 ? request.fetchLimit : Int.max
        try connection.withDatabase { db in
            try db.inTransaction(.deferred) {
                // SQLite takes an attached file's snapshot when the transaction first reads it:
                // read every store now, so that all of them are read as of this one moment (as one
                // UNION ALL statement would), not each as of when its turn comes.
                for part in parts {
                    _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(part.databaseName).sqlite_master")
                }
                for (query, store) in queries where left > 0 {
                    try query.stream(in: db, columns: columns.count, storeColumn: false, store: store) { row in
                        if toSkip > 0 { toSkip -= 1; return true }
                        try body(row)
                        left -= 1
                        return left > 0
                    }
                }
                return .commit
            }
        }
    }
}
extension CoordinatedContext: InPlaceStreamingContext {}
