import Foundation
import GRDB

/// The result of a fetch across several stores: like ``BatchFaultingCollection``, its `(store,
/// key)` pairs live in a SQLite temp table and its rows are faulted in batches, each batch with
/// one query per store it touches, into that store's context.
///
/// Reading a position whose row was deleted since the fetch gives nil.
public struct CoordinatedCollection: RandomAccessCollection {
    let storage: CoordinatedStorage

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.count }

    /// The object at `position`, faulting its batch if needed; nil for a row deleted since the
    /// fetch or on an error (see ``object(at:)`` to get the error).
    public subscript(position: Int) -> ManagedObject? {
        precondition(position >= 0 && position < storage.count, "position \(position) out of 0..<\(storage.count)")
        return try? storage.object(at: position)
    }

    /// The object at `position`; throws SQLite errors.
    public func object(at position: Int) throws -> ManagedObject? {
        precondition(position >= 0 && position < storage.count, "position \(position) out of 0..<\(storage.count)")
        return try storage.object(at: position)
    }

    /// The name of the store the row at `position` comes from.
    public func storeName(at position: Int) throws -> String? {
        try storage.storeIndex(at: position).map { storage.owner.coordinator.stores[$0].name }
    }

    public var batchSize: Int { storage.batchSize }
    public var statistics: BatchStatistics { storage.statistics }
    /// The fetch request the result was made from.
    public var request: FetchRequest { storage.request }

    /// Re-runs the ID fetch (rows inserted, deleted or re-sorted since are seen) and returns the
    /// new position of the first of `anchors` whose row still matches, or nil.
    /// - Note: the collection's `count` changes; indexes obtained before are stale.
    public func refresh(keeping anchors: [Int] = []) throws -> Int? {
        try storage.refresh(anchors: anchors)
    }

    /// The first position after (or, `backwards`, before) `position` whose row matches
    /// `predicate`: one query per store, each stopping at its first match, in result order.
    /// `progress` is called about every 50 ms while SQLite scans; `.cancel` stops the search with `.cancelled`.
    public func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool = false,
                              progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> Int? {
        try storage.firstPosition(matching: predicate, after: position, backwards: backwards, progress: progress)
    }

    /// The IDs among `ids` whose rows are in this result's ID table, in the order given; IDs of
    /// other entities or stores are left out.
    ///
    /// Runs `SELECT key FROM temp.<ids> WHERE store = ? AND key IN (?, …)`, per store, 500 IDs at a time.
    /// - Complexity: one scan of the ID table per store and 500 IDs; meant for hand-picked rows.
    public func members(of ids: [ObjectID]) throws -> [ObjectID] {
        try storage.members(of: ids)
    }
}

final class CoordinatedStorage {
    /// Strong, like a BatchStorage holds its context: a result keeps its connections alive.
    let owner: CoordinatedContext
    /// The entity in each store, by store index.
    let entities: [Int: Entity]
    let request: FetchRequest
    private(set) var table: String
    private(set) var count: Int
    let batchSize: Int
    let residentLimit: Int
    private var cache: [Int: (objects: [ManagedObject?], lastUse: UInt64)] = [:]
    private var clock: UInt64 = 0
    private var batchesFaulted = 0
    private let idFetchSeconds: Double
    private var lastFaultSeconds: Double?
    private var totalFaultSeconds = 0.0

    init(owner: CoordinatedContext, entities: [Entity], request: FetchRequest, table: String, count: Int, residentLimit: Int, idFetchSeconds: Double) {
        self.owner = owner
        var byIndex: [Int: Entity] = [:]
        for e in entities { byIndex[owner.storeIndex(of: e)] = e }
        self.entities = byIndex
        self.request = request
        self.table = table
        self.count = count
        self.batchSize = request.fetchBatchSize
        self.residentLimit = max(1, residentLimit)
        self.idFetchSeconds = idFetchSeconds
    }

    deinit { owner.dropTempTable(table) }

    func object(at position: Int) throws -> ManagedObject? {
        let b = position / batchSize
        clock += 1
        let objects: [ManagedObject?]
        if let cached = cache[b] {
            objects = cached.objects
            cache[b]?.lastUse = clock
        } else {
            objects = try fault(b)
            if cache.count >= residentLimit, let victim = cache.min(by: { $0.value.lastUse < $1.value.lastUse })?.key { cache[victim] = nil }
            cache[b] = (objects, clock)
        }
        guard let object = objects[position - b * batchSize], !object.isDeleted else { return nil }
        return object
    }

    func storeIndex(at position: Int) throws -> Int? {
        let table = self.table
        return try owner.sortQueue.inDatabase { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT store FROM temp.\(quoteIdentifier(table)) WHERE pos = ?"), arguments: [position + 1])
        }
    }

    /// Reads the batch's `(store, key)` pairs, then faults each store's share with one query.
    private func fault(_ b: Int) throws -> [ManagedObject?] {
        let started = DispatchTime.now().uptimeNanoseconds
        let start = b * batchSize, end = min(count, start + batchSize)
        let table = self.table
        let pairs: [(slot: Int, store: Int, key: SQLValue)] = try owner.sortQueue.inDatabase { db in
            let statement = try db.cachedStatement(sql: "SELECT pos, store, key FROM temp.\(quoteIdentifier(table)) WHERE pos BETWEEN ? AND ?")
            let cursor = try Row.fetchCursor(statement, arguments: [start + 1, end])
            var pairs: [(slot: Int, store: Int, key: SQLValue)] = []
            while let row = try cursor.next() {
                pairs.append((Int(row[0] as Int64) - 1 - start, row[1], SQLValue(row[2] as DatabaseValue)))
            }
            return pairs
        }
        var objects = [ManagedObject?](repeating: nil, count: end - start)
        for (store, items) in Dictionary(grouping: pairs, by: \.store) {
            guard let entity = entities[store] else { continue }
            let found = try owner.contexts[store].objects(of: entity, keys: items.map(\.key))
            for item in items { objects[item.slot] = found[item.key] }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        lastFaultSeconds = seconds
        totalFaultSeconds += seconds
        batchesFaulted += 1
        return objects
    }

    func refresh(anchors: [Int]) throws -> Int? {
        let old = table
        let keys: [(store: Int, key: SQLValue)] = try owner.sortQueue.inDatabase { db in
            let statement = try db.cachedStatement(sql: "SELECT store, key FROM temp.\(quoteIdentifier(old)) WHERE pos = ?")
            return try anchors.compactMap { pos in
                try Row.fetchOne(statement, arguments: [pos + 1]).map { ($0[0], SQLValue($0[1] as DatabaseValue)) }
            }
        }
        let fetched = try owner.runIDFetch(request, entities: Array(entities.values))
        table = fetched.table
        count = fetched.count
        cache.removeAll()
        owner.dropTempTable(old)
        let new = table
        return try owner.sortQueue.inDatabase { db -> Int? in
            let statement = try db.cachedStatement(sql: "SELECT pos FROM temp.\(quoteIdentifier(new)) WHERE store = ? AND key IS ? LIMIT 1")
            for anchor in keys {
                if let pos = try Int.fetchOne(statement, arguments: [anchor.store, anchor.key.databaseValue]) { return pos - 1 }
            }
            return nil
        }
    }

    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        var best: Int?
        for (i, entity) in entities {
            let builder = QueryBuilder(entity: entity, schema: owner.coordinator.stores[i].schema, databaseName: CoordinatedContext.databaseName(i))
            let condition = try builder.compile(predicate.node)
            let sql = "SELECT ids.pos FROM temp.\(quoteIdentifier(table)) AS ids CROSS JOIN \(builder.fromClause) WHERE ids.store = \(i) AND \(builder.keyColumnsSQL[0]) = ids.key AND ids.pos \(backwards ? "<" : ">") ? AND (\(condition)) ORDER BY ids.pos \(backwards ? "DESC" : "ASC") LIMIT 1"
            let arguments = [SQLValue.integer(Int64(position + 1))] + builder.arguments
            let found = try owner.sortQueue.inDatabase { db -> Int? in
                let statement = try db.makeStatement(sql: sql)
                guard let progress else { return try Int.fetchOne(statement, arguments: arguments.statementArguments) }
                var pos: Int?
                try ProgressReporter.run(db: db, statement: statement, estimate: count, handler: progress) {
                    pos = try Int.fetchOne(statement, arguments: arguments.statementArguments)
                }
                return pos
            }
            if let pos = found {
                let p = pos - 1
                if best.map({ backwards ? p > $0 : p < $0 }) ?? true { best = p }
            }
        }
        return best
    }

    func members(of ids: [ObjectID]) throws -> [ObjectID] {
        var found = Set<ObjectID>()
        let table = self.table
        for (store, entity) in entities {
            let mine = ids.filter { $0.entity === entity && $0.isAddressable && $0.keyValues.count == 1 }
            var offset = 0
            while offset < mine.count {
                let chunk = mine[offset..<min(mine.count, offset + 500)]
                offset += chunk.count
                let sql = "SELECT key FROM temp.\(quoteIdentifier(table)) WHERE store = \(store) AND key IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))"
                let keys = try owner.sortQueue.inDatabase { db -> [SQLValue] in
                    let statement = try db.makeStatement(sql: sql).bound(chunk.map { $0.keyValues[0] })
                    let cursor = try Row.fetchCursor(statement)
                    var keys: [SQLValue] = []
                    while try cursor.next() != nil { keys.append(SQLValue(statement: statement.sqliteStatement, column: 0)) }
                    return keys
                }
                let present = Set(keys)
                for id in chunk where present.contains(id.keyValues[0]) { found.insert(id) }
            }
        }
        return ids.filter { found.contains($0) }
    }

    /// Drops resident batches holding deleted or refaulted objects (after a merge or undo).
    func evictStale() {
        for (b, batch) in cache where batch.objects.contains(where: { $0.map { $0.isDeleted || $0.isFault } ?? false }) { cache[b] = nil }
    }

    var statistics: BatchStatistics {
        BatchStatistics(
            count: count, batchSize: batchSize, batchesFaulted: batchesFaulted, batchesResident: cache.count,
            residentBatchLimit: residentLimit, objectsResident: cache.values.reduce(0) { $0 + $1.objects.count },
            objectsAlive: owner.contexts.reduce(0) { $0 + $1.registeredObjectCount }, idsHeld: count, idsInSwiftMemory: 0,
            idStorage: "SQLite temp table \(table) (store, key)", idFetchSeconds: idFetchSeconds,
            lastFaultSeconds: lastFaultSeconds, totalFaultSeconds: totalFaultSeconds)
    }
}

extension ManagedObjectContext {
    /// Faults the rows of `entity` (one key column) whose keys are `keys`, in one query per 500
    /// keys, through the identity map; returns them by key. Missing rows are absent.
    ///
    /// Runs `SELECT t.<key>, <columns> FROM main."T" AS t WHERE t.<key> IN (?, …)`.
    func objects(of entity: Entity, keys: [SQLValue]) throws -> [SQLValue: ManagedObject] {
        guard let keyColumn = entity.keyColumns.first, entity.keyColumns.count == 1 else { return [:] }
        let columns = statements(for: entity).columnList
        let attributeCount = entity.attributes.count
        let rowid = entity.isKeyedByRowid
        var result: [SQLValue: ManagedObject] = [:]
        try withDatabase { db in
            var offset = 0
            while offset < keys.count {
                let chunk = keys[offset..<min(keys.count, offset + 500)]
                offset += chunk.count
                let sql = "SELECT t.\(quoteIdentifier(keyColumn))\(columns.isEmpty ? "" : ", " + columns) FROM main.\(quoteIdentifier(entity.name)) AS t WHERE t.\(quoteIdentifier(keyColumn)) IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))"
                let statement = try db.cachedStatement(sql: sql)
                let cursor = try Row.fetchCursor(try statement.bound(Array(chunk)))
                let stmt = statement.sqliteStatement
                while try cursor.next() != nil {
                    let key = SQLValue(statement: stmt, column: 0)
                    let id: ObjectID
                    if rowid, case .integer(let r) = key { id = ObjectID(entity: entity, key: .rowid(r)) } else { id = ObjectID(entity: entity, key: .primaryKey([key])) }
                    if let object = adoptRow(id, values: { rowValues(stmt, from: 1, count: attributeCount, id: id) }) { result[key] = object }
                }
            }
        }
        return result
    }
}
