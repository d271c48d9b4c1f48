import Foundation
import GRDB
import GRDBSQLite

/// Batch edits that touch only the rows of one result across several stores, as
/// ``BatchFaultingCollection``'s do for one store.
///
/// The result's `(store, key)` table lives on the connection that sorts across stores; each store's
/// edit runs on that store's own connection. So, store by store, the result's keys are copied into
/// a temp table on the store's connection and the edit runs with the membership test in its
/// statement: `… WHERE t.<key> IN (SELECT k FROM temp.<keys>) AND (<request's condition>)`. A row
/// inserted since the fetch, or one that no longer matches, is never counted or changed. All or
/// nothing across stores, as ``CoordinatedContext``'s batch requests are.
///
/// - Complexity: O(result) to copy the keys (10,000 per round trip, memory flat), then one
///   statement per store.
extension CoordinatedCollection {
    /// Updates the rows of this result that `request` matches (and, given `objectIDs`, only
    /// those rows), in every store of the result they belong to.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, undoable: Bool = false) throws -> [String: BatchResult] {
        try storage.checkEntity(request.entityName)
        let stores = try storage.storeNames(for: objectIDs)
        return try storage.owner.runAcrossStores(entityName: request.entityName, affectedStores: stores, undoable: undoable) { context, undo in
            try storage.withKeys(in: context) { within in
                try context.execute(try storage.part(of: request, objectIDs: objectIDs, for: context), undoable: undo, within: within)
            }
        }
    }

    /// How many rows ``execute(_:objectIDs:undoable:)`` would change: the same WHERE clause per
    /// store, counted. Writes nothing.
    public func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil) throws -> Int {
        try storage.checkEntity(request.entityName)
        let stores = Set(try storage.storeNames(for: objectIDs))
        return try storage.eachStore { context in
            guard stores.contains(context.store.name) else { return 0 }
            return try storage.withKeys(in: context) { within in
                let update = try context.compileUpdate(try storage.part(of: request, objectIDs: objectIDs, for: context), within: within)
                return try context.countRows(update.entity, whereSQL: update.whereClause, arguments: update.whereArguments)
            }
        }
    }

    /// Deletes the rows of this result that `request` selects (its object IDs, or its fetch
    /// request's predicate), in every store of the result that they belong to.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> [String: BatchResult] {
        let entityName = try storage.checkEntity(of: request)
        let stores = try storage.storeNames(for: request.objectIDs)
        return try storage.owner.runAcrossStores(entityName: entityName, affectedStores: stores, undoable: undoable) { context, undo in
            try storage.withKeys(in: context) { within in try context.execute(storage.part(of: request, for: context), undoable: undo, within: within) }
        }
    }

    /// How many rows ``execute(_:undoable:)-(BatchDeleteRequest,_)`` would delete. Writes nothing.
    public func count(forDelete request: BatchDeleteRequest) throws -> Int {
        _ = try storage.checkEntity(of: request)
        let stores = Set(try storage.storeNames(for: request.objectIDs))
        return try storage.eachStore { context in
            guard stores.contains(context.store.name) else { return 0 }
            return try storage.withKeys(in: context) { within in try context.count(forDelete: storage.part(of: request, for: context), within: within) }
        }
    }
}

extension CoordinatedStorage {
    /// The names of the stores this result spans, in store order.
    var storeNames: [String] { entities.keys.sorted().map { owner.coordinator.stores[$0].name } }

    func checkEntity(_ name: String) throws {
        let mine = entities.values.first?.name ?? request.entityName
        guard try owner.coordinator.entities(named: name).first?.name == mine else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(mine), not \(name); nothing was changed")
        }
    }

    /// The stores of the result that `ids` belong to (all of them for nil), after checking that
    /// every ID is a row of the result's entity in one of its stores.
    func storeNames(for ids: [ObjectID]?) throws -> [String] {
        guard let ids else { return storeNames }
        if let stranger = ids.first(where: { id in !entities.values.contains { $0 === id.entity } }) {
            throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(request.entityName) in this result's stores; nothing was changed")
        }
        return storeNames.filter { name in ids.contains { $0.entity.storeName == name } }
    }

    /// The update as it applies to `context`'s store: narrowed to that store's `ids`, if given.
    func part(of request: BatchUpdateRequest, objectIDs ids: [ObjectID]?, for context: ManagedObjectContext) throws -> BatchUpdateRequest {
        guard let ids else { return request }
        var part = request
        let only = try FetchPredicate.matching(ids.filter { $0.entity.storeName == context.store.name })
        part.predicate = part.predicate.map { $0 && only } ?? only
        return part
    }

    func checkEntity(of request: BatchDeleteRequest) throws -> String {
        if let ids = request.objectIDs {
            _ = try storeNames(for: ids)
            return entities.values.first?.name ?? self.request.entityName
        }
        guard let name = request.fetchRequest?.entityName else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        try checkEntity(name)
        return name
    }

    /// The delete as it applies to `context`'s store: its object IDs narrowed to that store.
    func part(of request: BatchDeleteRequest, for context: ManagedObjectContext) -> BatchDeleteRequest {
        guard let ids = request.objectIDs else { return request }
        var part = request
        part.objectIDs = ids.filter { $0.entity.storeName == context.store.name }
        return part
    }

    /// The sum of `body` over the result's stores' contexts.
    func eachStore(_ body: (ManagedObjectContext) throws -> Int) throws -> Int {
        try entities.keys.sorted().reduce(0) { total, i in total + (try body(owner.contexts[i])) }
    }

    /// Copies this result's keys in `context`'s store into a temp table on `context`'s connection,
    /// runs `body` with the membership condition over alias `t`, and drops the table.
    func withKeys<T>(in context: ManagedObjectContext, _ body: (String) throws -> T) throws -> T {
        guard let (store, entity) = entities.first(where: { owner.coordinator.stores[$0.key].name == context.store.name }),
              let keyColumn = entity.keyColumns.first, entity.keyColumns.count == 1 else {
            throw BatchStoreError(.readOnly, "\(request.entityName) has no one-column row key in store \(context.store.name); nothing was changed")
        }
        let copy = context.makeTempTableName("bs_within")
        let quoted = quoteIdentifier(copy)
        try context.withDatabase { db in try db.execute(sql: "CREATE TEMP TABLE \(quoted) (k PRIMARY KEY) WITHOUT ROWID") }
        defer { try? context.withDatabase { db in try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoted)") } }
        var after = 0
        while true {
            let chunk: [SQLValue] = try owner.sortQueue.inDatabase { db in
                let statement = try db.cachedStatement(sql: "SELECT pos, key FROM temp.\(quoteIdentifier(table)) WHERE pos > ? AND store = ? ORDER BY pos LIMIT 10000")
                let cursor = try Row.fetchCursor(statement, arguments: [after, store])
                var keys: [SQLValue] = []
                while try cursor.next() != nil {
                    after = Int(sqlite3_column_int64(statement.sqliteStatement, 0))
                    keys.append(SQLValue(statement: statement.sqliteStatement, column: 1))
                }
                return keys
            }
            if chunk.isEmpty { break }
            try context.withDatabase { db in
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.\(quoted) VALUES (?)")
                for key in chunk { try insert.bound([key]).execute() }
            }
        }
        return try body("t.\(quoteIdentifier(keyColumn)) IN (SELECT k FROM temp.\(quoted))")
    }
}
