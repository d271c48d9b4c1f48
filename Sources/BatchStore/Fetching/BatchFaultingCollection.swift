import Foundation
import GRDB
import GRDBSQLite

/// The result of a fetch with a batch size: a random-access collection of managed objects whose row
/// IDs live in an SQLite temp table and whose rows are faulted in batches as they are touched.
///
/// - Opening runs one `INSERT INTO temp."bs_ids_…"(key) SELECT t.rowid FROM … WHERE … ORDER BY …`;
///   the IDs never enter Swift memory, and ``count`` is known afterwards.
/// - Touching element `i` faults its batch with one query,
///   `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS JOIN main."T" AS t
///   ON t.rowid = ids.key WHERE ids.pos BETWEEN ? AND ?`, and keeps it in a bounded LRU of
///   resident batches, so a sweep over millions of rows holds only ``residentBatchLimit`` batches.
/// - An element is `nil` when its row was deleted after the fetch: never a crash, never a tombstone.
/// - Slices, iteration, `map`, `prefix` keep batching; ``description`` never faults.
///
/// A value type over shared storage: copies and slices share one temp table and one batch cache.
/// The temp table is dropped when the last copy goes away.
public struct BatchFaultingCollection: RandomAccessCollection, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias Element = ManagedObject?
    public typealias Index = Int
    public typealias SubSequence = BatchFaultingCollection
    public typealias Indices = Range<Int>

    let storage: BatchStorage
    /// Fixed bounds for slices; nil follows the storage's count (which ``refresh(keeping:)`` changes).
    let bounds: Range<Int>?

    init(storage: BatchStorage, bounds: Range<Int>? = nil) {
        self.storage = storage
        self.bounds = bounds
    }

    public var startIndex: Int { bounds?.lowerBound ?? 0 }
    public var endIndex: Int { bounds?.upperBound ?? storage.count }

    /// The object at `position`, faulting its batch if needed; nil when the row is gone (or when the
    /// fault failed: see ``lastError``).
    /// - Complexity: O(1) when the batch is resident; one indexed query of `fetchBatchSize` rows when not.
    public subscript(position: Int) -> ManagedObject? {
        precondition(position >= startIndex && position < endIndex, "index \(position) out of range \(startIndex)..<\(endIndex)")
        return storage.object(at: position)
    }

    public subscript(bounds: Range<Int>) -> BatchFaultingCollection {
        precondition(bounds.lowerBound >= startIndex && bounds.upperBound <= endIndex, "slice \(bounds) out of range \(startIndex)..<\(endIndex)")
        return BatchFaultingCollection(storage: storage, bounds: bounds)
    }

    /// Like the subscript, but throws when faulting the batch failed (locked file, I/O error).
    public func object(at position: Int) throws -> ManagedObject? {
        precondition(position >= startIndex && position < endIndex, "index \(position) out of range")
        return try storage.objectThrowing(at: position)
    }

    /// The last error a fault hit through the non-throwing subscript, if any.
    public var lastError: BatchStoreError? { storage.lastError }

    /// The request the collection was fetched with.
    public var request: FetchRequest { storage.request }
    /// The entity fetched.
    public var entity: Entity { storage.entity }
    /// Rows per batch.
    public var batchSize: Int { storage.batchSize }
    /// How many batches stay resident at most (least recently used go first).
    public var residentBatchLimit: Int {
        get { storage.residentLimit }
        nonmutating set { storage.setResidentLimit(newValue) }
    }

    /// Live counters: batches faulted and resident, objects alive, IDs held and where.
    public var statistics: BatchStatistics { storage.statistics }

    /// Re-runs the ID fetch to pick up inserts and deletes; returns the new position of the first
    /// anchor whose row still exists (pass the current row, then its neighbours, to land on the
    /// nearest survivor). Resident batches are dropped; registered objects stay registered.
    /// - Complexity: the cost of the ID fetch, plus one scan of the new ID table per anchor looked up.
    @discardableResult
    public func refresh(keeping anchors: [Int] = []) throws -> Int? {
        try storage.refresh(anchors: anchors)
    }

    /// The key of the row at `position` as stored in the ID table (one indexed lookup, no fault).
    public func objectID(at position: Int) throws -> ObjectID? {
        try storage.objectID(at: position)
    }

    /// Drops every resident batch (objects held elsewhere stay alive).
    public func evictAllBatches() { storage.evictAll() }

    public var description: String {
        "<BatchFaultingCollection \(storage.entity.name) \(startIndex)..<\(endIndex) of \(storage.count), batch size \(storage.batchSize), \(storage.cache.count) batches resident>"
    }

    public var debugDescription: String {
        description + " ids in temp.\(quoteIdentifier(storage.tableName))"
    }
}

/// Counters a ``BatchFaultingCollection`` keeps (all O(1) to read).
public struct BatchStatistics: Sendable, Equatable {
    /// Rows in the result.
    public var count: Int
    /// Rows per batch.
    public var batchSize: Int
    /// Batch faults run so far (one query each).
    public var batchesFaulted: Int
    /// Batches in memory now.
    public var batchesResident: Int
    /// The most batches kept in memory.
    public var residentBatchLimit: Int
    /// Objects referenced by resident batches.
    public var objectsResident: Int
    /// Objects alive in the whole context (identity map size).
    public var objectsAlive: Int
    /// Row IDs held for the result; they live in SQLite's temp store, not in Swift memory.
    public var idsHeld: Int
    /// Row IDs held in Swift memory (0 for a batched collection).
    public var idsInSwiftMemory: Int
    /// Where the IDs live.
    public var idStorage: String
    /// How long the ID fetch took, in seconds.
    public var idFetchSeconds: Double
    /// How long the last batch fault took, in seconds.
    public var lastFaultSeconds: Double?
    /// Time spent in batch faults so far, in seconds.
    public var totalFaultSeconds: Double
    /// Bytes of packed values held by resident batches (cells and text/blob arenas); nil where
    /// batches keep decoded values (a child context, several stores).
    public var valueBytesResident: Int? = nil
}

/// Progress of an ID fetch, handed to the progress handler of ``ProgressiveFetch/finish(progress:)``.
public struct IDFetchProgress: Sendable {
    /// Rows the ID fetch has scanned from the table so far (full-scan steps).
    public var rowsScanned: Int
    /// An estimate of the rows to scan (the table's largest rowid), when known.
    public var estimatedRows: Int?
    /// Seconds since the ID fetch began.
    public var elapsed: Double
    /// `rowsScanned / estimatedRows`, capped below 1 until done; nil when unknown.
    public var fractionCompleted: Double? {
        guard let estimatedRows, estimatedRows > 0 else { return nil }
        return min(0.99, Double(rowsScanned) / Double(estimatedRows))
    }
}

/// What a progress handler tells the ID fetch.
public enum IDFetchDecision: Sendable {
    case proceed
    case cancel
}

final class BatchStorage {
    let context: ManagedObjectContext
    let entity: Entity
    let request: FetchRequest
    let batchSize: Int
    private(set) var residentLimit: Int
    private(set) var tableName: String
    private(set) var count: Int = 0
    var cache: [Int: CachedBatch] = [:]
    private var clock: UInt64 = 0
    private var lastBatchIndex = -1
    private var lastBatch: [ManagedObject?] = []
    private let faultSQL: String
    private let keyColumnCount: Int
    private let isAddressable: Bool
    private(set) var lastError: BatchStoreError?
    private var batchesFaulted = 0
    private var idFetchSeconds = 0.0
    private var lastFaultSeconds: Double?
    private var totalFaultSeconds = 0.0

    struct CachedBatch {
        var objects: [ManagedObject?]
        /// The packed values the batch's objects point to (nil in a child context).
        var packed: PackedRows?
        var lastUse: UInt64
    }

    init(context: ManagedObjectContext, entity: Entity, request: FetchRequest, residentLimit: Int) {
        self.context = context
        self.entity = entity
        self.request = request
        self.batchSize = request.fetchBatchSize
        self.residentLimit = max(1, residentLimit)
        self.tableName = context.makeTempTableName("bs_ids")
        let keys = entity.keyColumns
        self.isAddressable = !keys.isEmpty
        if isAddressable {
            self.keyColumnCount = keys.count
            let stmts = context.statements(for: entity)
            let on: String
            if keys.count == 1 {
                on = "t.\(quoteIdentifier(keys[0])) = ids.key"
            } else {
                on = keys.enumerated().map { "t.\(quoteIdentifier($1)) = ids.k\($0)" }.joined(separator: " AND ")
            }
            let keySelect = keys.count == 1 ? "ids.key" : (0..<keys.count).map { "ids.k\($0)" }.joined(separator: ", ")
            self.faultSQL = "SELECT ids.pos, \(keySelect)\(stmts.columnList.isEmpty ? "" : ", " + stmts.columnList) FROM temp.\(quoteIdentifier(tableName)) AS ids CROSS JOIN main.\(quoteIdentifier(entity.name)) AS t ON \(on) WHERE ids.pos BETWEEN ? AND ?"
        } else {
            self.keyColumnCount = 0
            let cols = (0..<entity.attributes.count).map { "c\($0)" }.joined(separator: ", ")
            self.faultSQL = "SELECT pos\(cols.isEmpty ? "" : ", " + cols) FROM temp.\(quoteIdentifier(tableName)) WHERE pos BETWEEN ? AND ?"
        }
    }

    deinit {
        evictAll()
        context.dropTempTable(tableName)
    }

    // MARK: ID fetch

    /// Columns of the ID table after `pos`.
    var idColumns: [String] {
        if !isAddressable { return (0..<entity.attributes.count).map { "c\($0)" } }
        return keyColumnCount == 1 ? ["key"] : (0..<keyColumnCount).map { "k\($0)" }
    }

    /// Creates the ID table `name` and fills it with the IDs of every matching row, in order.
    func runIDFetch(into name: String, compiled: CompiledFetch, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int {
        let select: String
        if isAddressable {
            select = compiled.builder.keyColumnsSQL.joined(separator: ", ")
        } else {
            select = entity.attributes.map { "t.\(quoteIdentifier($0.name))" }.joined(separator: ", ")
        }
        let started = Date()
        let columns = idColumns
        return try context.withDatabase { db -> Int in
            try db.execute(sql: "CREATE TEMP TABLE \(quoteIdentifier(name)) (pos INTEGER PRIMARY KEY, \(columns.joined(separator: ", ")))")
            let sql = "INSERT INTO temp.\(quoteIdentifier(name)) (\(columns.joined(separator: ", "))) SELECT \(select.isEmpty ? "NULL" : select)\(compiled.fromWhereOrder)\(compiled.limitClause)"
            let statement = try db.makeStatement(sql: sql)
            do {
                if let progress {
                    var estimate: Int? = nil
                    if entity.isKeyedByRowid, let rowid = entity.rowidName {
                        estimate = try Int.fetchOne(db, sql: "SELECT max(\(rowid)) FROM main.\(quoteIdentifier(entity.name))")
                    }
                    try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                        try statement.execute(arguments: compiled.allArguments.statementArguments)
                    }
                } else {
                    try statement.execute(arguments: compiled.allArguments.statementArguments)
                }
            } catch {
                try? db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))")
                throw error
            }
            idFetchSeconds = Date().timeIntervalSince(started)
            return db.changesCount
        }
    }

    func open(compiled: CompiledFetch, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        count = try runIDFetch(into: tableName, compiled: compiled, progress: progress)
    }

    func refresh(anchors: [Int]) throws -> Int? {
        let compiled = try CompiledFetch(request: request, store: context.store)
        var anchorKeys: [[SQLValue]] = []
        if isAddressable {
            let cols = idColumns.joined(separator: ", ")
            try context.withDatabase { db in
                let stmt = try db.cachedStatement(sql: "SELECT \(cols) FROM temp.\(quoteIdentifier(tableName)) WHERE pos = ?")
                for a in anchors where a >= 0 && a < count {
                    // The cursor stays alive while the row is read: a row reads its statement.
                    let cursor = try Row.fetchCursor(stmt, arguments: [a + 1])
                    if let row = try cursor.next() {
                        anchorKeys.append((0..<row.count).map { SQLValue(row: row, at: $0) })
                    }
                }
            }
        }
        let newName = context.makeTempTableName("bs_ids")
        let newCount = try runIDFetch(into: newName, compiled: compiled, progress: nil)
        let oldName = tableName
        // The fault SQL names the table: swap contents by renaming instead of rebuilding SQL.
        try context.withDatabase { db in
            try db.execute(sql: "DROP TABLE temp.\(quoteIdentifier(oldName))")
            try db.execute(sql: "ALTER TABLE temp.\(quoteIdentifier(newName)) RENAME TO \(quoteIdentifier(oldName))")
        }
        count = newCount
        evictAll()
        guard !anchorKeys.isEmpty else { return nil }
        let match = idColumns.map { "\($0) IS ?" }.joined(separator: " AND ")
        return try context.withDatabase { db -> Int? in
            let stmt = try db.cachedStatement(sql: "SELECT pos FROM temp.\(quoteIdentifier(oldName)) WHERE \(match) LIMIT 1")
            for key in anchorKeys {
                if let pos = try Int.fetchOne(try stmt.bound(key)) { return pos - 1 }
            }
            return nil
        }
    }

    // MARK: Faulting

    @inline(__always)
    func object(at position: Int) -> ManagedObject? {
        let b = position / batchSize
        if b == lastBatchIndex {
            guard let object = lastBatch[position - b * batchSize], !object.isDeleted else { return nil }
            return object
        }
        do {
            return try objectThrowing(at: position)
        } catch {
            lastError = BatchStoreError.wrap(error)
            return nil
        }
    }

    func objectThrowing(at position: Int) throws -> ManagedObject? {
        let b = position / batchSize
        if b != lastBatchIndex {
            clock += 1
            if var cached = cache[b] {
                cached.lastUse = clock
                cache[b] = cached
                lastBatch = cached.objects
            } else {
                let (objects, packed) = try faultBatch(b)
                if cache.count >= residentLimit { evictLeastRecentlyUsed() }
                cache[b] = CachedBatch(objects: objects, packed: packed, lastUse: clock)
                lastBatch = objects
            }
            lastBatchIndex = b
        }
        guard let object = lastBatch[position - b * batchSize] else { return nil }
        return object.isDeleted ? nil : object
    }

    private func evictLeastRecentlyUsed() {
        guard let victim = cache.min(by: { $0.value.lastUse < $1.value.lastUse })?.key else { return }
        dropBatch(victim)
    }

    /// Drops batch `b`. Its objects that something else still holds (the app, another collection)
    /// get their own decoded values, so they do not keep the batch's packed buffers alive.
    private func dropBatch(_ b: Int) {
        if b == lastBatchIndex { lastBatchIndex = -1; lastBatch = [] }
        guard var batch = cache.removeValue(forKey: b) else { return }
        guard let packed = batch.packed else { return }
        batch.packed = nil
        // The array is uniquely ours now (lastBatch was cleared), so this checks each object's own
        // reference count, without copying the array.
        for i in batch.objects.indices where batch.objects[i] != nil {
            if !isKnownUniquelyReferenced(&batch.objects[i]), let object = batch.objects[i], object.isPacked(in: packed) {
                object.detachFromPackedRows()
            }
        }
    }

    func evictAll() {
        lastBatchIndex = -1
        lastBatch = []
        for b in Array(cache.keys) { dropBatch(b) }
    }

    /// Drops resident batches holding an object that `isStale` flags; returns how many.
    func evictBatches(where isStale: (ManagedObject) -> Bool) -> Int {
        let stale = cache.filter { $0.value.objects.contains { $0.map(isStale) ?? false } }.map(\.key)
        for b in stale { dropBatch(b) }
        return stale.count
    }

    func setResidentLimit(_ limit: Int) {
        residentLimit = max(1, limit)
        while cache.count > residentLimit { evictLeastRecentlyUsed() }
    }

    private func faultBatch(_ b: Int) throws -> ([ManagedObject?], PackedRows?) {
        let start = b * batchSize
        let end = min(start + batchSize, count)
        let started = DispatchTime.now().uptimeNanoseconds
        let batchCount = max(0, end - start)
        let context = self.context
        let entity = self.entity
        let attributeCount = entity.attributes.count
        let keyCount = keyColumnCount
        let addressable = isAddressable
        let sql = faultSQL
        let rowidKeyed = entity.isKeyedByRowid
        let link = context.link
        // Values are packed per batch and decoded when read, except in a child context, which
        // lays its parent's unsaved changes over each row as it reads it.
        let packed = context.parent == nil ? PackedRows(rows: batchCount, columns: attributeCount) : nil
        let table = rowidKeyed && addressable ? context.rowidTable(for: entity) : nil
        let objects = try context.withDatabase { db -> [ManagedObject?] in
            var objects = [ManagedObject?](repeating: nil, count: batchCount)
            let statement = try db.cachedStatement(sql: sql)
            // Bound, stepped and read with the C API: this loop runs once per row of every sweep.
            let stmt = statement.sqliteStatement
            sqlite3_reset(stmt)
            sqlite3_bind_int64(stmt, 1, Int64(start + 1))
            sqlite3_bind_int64(stmt, 2, Int64(end))
            defer { sqlite3_reset(stmt) }   // ends the statement's read, as a finished cursor would
            while true {
                let code = sqlite3_step(stmt)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else {
                    throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
                }
                let pos = Int(sqlite3_column_int64(stmt, 0))
                let slot = pos - 1 - start
                guard slot >= 0 && slot < objects.count else { continue }
                if let packed, let table {
                    // The sweep's path: rowid key, packed values, identity table looked up once.
                    objects[slot] = context.adoptPackedRow(rowid: sqlite3_column_int64(stmt, 1), entity: entity, table: table,
                                                           rows: packed, stmt: stmt, from: 2)
                    continue
                }
                let id: ObjectID
                var firstValue: Int32 = 1
                if addressable {
                    if rowidKeyed {
                        id = ObjectID(entity: entity, key: .rowid(sqlite3_column_int64(stmt, 1)))
                    } else {
                        id = ObjectID(entity: entity, key: .primaryKey((0..<keyCount).map { SQLValue(statement: stmt, column: Int32(1 + $0)) }))
                    }
                    firstValue = Int32(1 + keyCount)
                } else {
                    id = ObjectID(entity: entity, key: .position(pos - 1))
                }
                if let packed {
                    if addressable {
                        objects[slot] = context.adoptPackedRow(id, rows: packed, stmt: stmt, from: firstValue)
                    } else {
                        objects[slot] = ManagedObject(objectID: id, link: link, packed: packed, row: packed.appendRow(stmt, from: firstValue))
                    }
                } else if addressable {
                    objects[slot] = context.adoptRow(id) { context.rowValues(stmt, from: firstValue, count: attributeCount, id: id) }
                } else {
                    objects[slot] = ManagedObject(objectID: id, link: link, values: context.rowValues(stmt, from: firstValue, count: attributeCount, id: id))
                }
            }
            return objects
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        lastFaultSeconds = seconds
        totalFaultSeconds += seconds
        batchesFaulted += 1
        return (objects, packed)
    }

    func objectID(at position: Int) throws -> ObjectID? {
        guard position >= 0 && position < count else { return nil }
        guard isAddressable else { return ObjectID(entity: entity, key: .position(position)) }
        let cols = idColumns.joined(separator: ", ")
        let name = tableName
        let entity = self.entity
        return try context.withDatabase { db -> ObjectID? in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(cols) FROM temp.\(quoteIdentifier(name)) WHERE pos = ?"), arguments: [position + 1]) else { return nil }
            return ObjectID(entity: entity, keyRow: row)
        }
    }

    var statistics: BatchStatistics {
        BatchStatistics(
            count: count, batchSize: batchSize, batchesFaulted: batchesFaulted, batchesResident: cache.count,
            residentBatchLimit: residentLimit,
            objectsResident: cache.values.reduce(0) { $0 + $1.objects.count },
            objectsAlive: context.registeredObjectCount, idsHeld: count, idsInSwiftMemory: 0,
            idStorage: "SQLite temp table \(tableName)", idFetchSeconds: idFetchSeconds,
            lastFaultSeconds: lastFaultSeconds, totalFaultSeconds: totalFaultSeconds,
            valueBytesResident: context.parent == nil ? cache.values.reduce(0) { $0 + ($1.packed?.byteCount ?? 0) } : nil)
    }
}
