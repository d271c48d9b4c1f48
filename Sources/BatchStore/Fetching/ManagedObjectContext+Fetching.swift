import Foundation
import GRDB

extension ManagedObjectContext {
    /// Runs `request` and returns what its ``FetchRequest/resultType`` asks for; managed objects come
    /// as a ``BatchFaultingCollection`` when ``FetchRequest/fetchBatchSize`` > 0, else as an array.
    public func execute(_ request: FetchRequest) throws -> FetchResult {
        switch request.resultType {
        case .managedObject:
            return request.fetchBatchSize > 0 ? .batched(try fetchBatched(request)) : .objects(try fetchAll(request))
        case .managedObjectID: return .objectIDs(try fetchObjectIDs(request))
        case .dictionary: return .dictionaries(try fetchDictionaries(request))
        case .count: return .count(try count(for: request))
        }
    }

    /// Fetches every matching object, fulfilled, into a Swift array: the eager path. Memory grows
    /// with the result; use ``fetchBatched(_:residentBatches:progress:)`` for large results.
    ///
    /// Runs `SELECT <key>, <columns> FROM … WHERE … ORDER BY … LIMIT …` once.
    /// - Complexity: O(rows) time and memory.
    public func fetchAll(_ request: FetchRequest) throws -> [ManagedObject] {
        let compiled = try CompiledFetch(request: request, store: store)
        let entity = compiled.entity
        let keys = compiled.builder.keyColumnsSQL
        let columns = statements(for: entity).columnList
        let select = (keys + (columns.isEmpty ? [] : [columns])).joined(separator: ", ")
        let sql = "SELECT \(select.isEmpty ? "NULL" : select)\(compiled.fromWhereOrder)\(compiled.limitClause)"
        let keyCount = keys.count
        let n = entity.attributes.count
        var result: [ManagedObject] = []
        try withDatabase { db in
            let statement = try db.makeStatement(sql: sql)
            let cursor = try Row.fetchCursor(statement, arguments: compiled.allArguments.statementArguments)
            let stmt = statement.sqliteStatement
            var position = 0
            while let row = try cursor.next() {
                let id = keyCount == 0 ? ObjectID(entity: entity, key: .position(position)) : ObjectID(entity: entity, keyRow: row)
                position += 1
                let values = { self.rowValues(stmt, from: Int32(keyCount), count: n, id: id) }
                if keyCount == 0 {
                    result.append(ManagedObject(objectID: id, link: link, values: values()))
                } else if let object = adoptRow(id, values: values) {
                    result.append(object)
                }
            }
        }
        return result
    }

    /// Fetches with batching: runs the ID fetch into a temp table (see ``BatchFaultingCollection``)
    /// and returns the collection; rows are faulted `fetchBatchSize` at a time as they are touched.
    ///
    /// - Parameters:
    ///   - request: what to fetch: the entity, predicate, sort, limit, offset and batch size.
    ///   - residentBatches: how many batches stay in memory (LRU).
    ///   - progress: called about every 50 ms during the ID fetch; return `.cancel` to stop it
    ///     (the call then throws `.cancelled` and leaves no temp table). It must not use this context.
    /// - Complexity: the ID fetch is O(rows scanned) (plus the sort); memory stays O(batch size × resident batches).
    public func fetchBatched(_ request: FetchRequest, residentBatches: Int = 8, progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        var request = request
        if request.fetchBatchSize <= 0 { request.fetchBatchSize = 100 }
        let entity = try store.entity(named: request.entityName)
        let storage = try ResultStorage(source: StoreResultSource(context: self, entity: entity, request: request), request: request,
                                        residentBatches: residentBatches, progress: progress)
        openResults.add(storage)
        return BatchFaultingCollection(storage: storage)
    }

    /// Fetches the result of one read-only SQL query in batches, as a table's: the query becomes
    /// an entity of the store (``PersistentStore/addQuery(_:arguments:)``, which checks it and
    /// binds `arguments` to its `?` parameters), then ``fetchBatched(_:residentBatches:progress:)``
    /// fetches it: `INSERT INTO temp."bs_ids_…" (c0, c1, …) SELECT t.* FROM (<query>) AS t`, the
    /// rows kept by position in the ID table, faulted `batchSize` at a time with one range read
    /// of it. Where the query's rows name a table's rows (``Entity/editTables``), the result's
    /// batch edits act on them (see <doc:QueryResults>).
    /// - Complexity: the query's own cost once, for the ID table; each batch, one range read.
    public func fetch(sql: String, arguments: [SQLValue] = [], batchSize: Int = 100) throws -> BatchFaultingCollection {
        let entity = try store.addQuery(sql, arguments: arguments)
        return try fetchBatched(FetchRequest(entityName: entity.name, fetchBatchSize: batchSize))
    }

    /// Starts a batched fetch in two steps for huge sorted results: the first batch now (one
    /// `… ORDER BY … LIMIT batchSize` query, which needs no full sort), the ID fetch later with
    /// ``ProgressiveFetch/finish(progress:)``.
    public func beginFetch(_ request: FetchRequest, residentBatches: Int = 8) throws -> ProgressiveFetch {
        var request = request
        if request.fetchBatchSize <= 0 { request.fetchBatchSize = 100 }
        var first = request
        let remaining = request.fetchLimit > 0 ? request.fetchLimit : Int.max
        first.fetchLimit = min(request.fetchBatchSize, remaining)
        let objects = try fetchAll(first)
        return ProgressiveFetch(context: self, request: request, firstBatch: objects, residentBatches: residentBatches)
    }

    /// Fetches the IDs of matching rows into a Swift array.
    /// - Complexity: O(rows) time and memory (IDs only).
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        let compiled = try CompiledFetch(request: request, store: store)
        let entity = compiled.entity
        let keys = compiled.builder.keyColumnsSQL
        guard !keys.isEmpty else { throw BatchStoreError(.invalidQuery, "\(entity.name) has no row key, so its rows have no object IDs") }
        let sql = "SELECT \(keys.joined(separator: ", "))\(compiled.fromWhereOrder)\(compiled.limitClause)"
        return try withDatabase { db in
            var ids: [ObjectID] = []
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: compiled.allArguments.statementArguments)
            while let row = try cursor.next() { ids.append(ObjectID(entity: entity, keyRow: row)) }
            return ids
        }
    }

    /// Fetches dictionaries of `propertiesToFetch` (key paths may cross to-one relationships), or of
    /// every column. Objects are not registered.
    /// - Complexity: O(rows) time and memory.
    public func fetchDictionaries(_ request: FetchRequest) throws -> [[String: SQLValue]] {
        let entity = try store.entity(named: request.entityName)
        let names = request.propertiesToFetch ?? entity.attributes.map(\.name)
        let compiled = try CompiledFetch(request: request, store: store, properties: names)
        let columns = compiled.propertyColumns
        let sql = "SELECT \(columns.isEmpty ? "NULL" : columns.joined(separator: ", "))\(compiled.fromWhereOrder)\(compiled.limitClause)"
        return try withDatabase { db in
            var result: [[String: SQLValue]] = []
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: compiled.allArguments.statementArguments)
            while let row = try cursor.next() {
                var d: [String: SQLValue] = [:]
                for (i, n) in names.enumerated() { d[n] = SQLValue(row[i] as DatabaseValue) }
                result.append(d)
            }
            return result
        }
    }

    /// Counts matching rows (honouring limit and offset) without fetching them.
    ///
    /// Runs `SELECT count(*) FROM … WHERE …`.
    public func count(for request: FetchRequest) throws -> Int {
        let compiled = try CompiledFetch(request: request, store: store)
        let sql = compiled.limitClause.isEmpty
            ? "SELECT count(*)\(compiled.fromWhere)"
            : "SELECT count(*) FROM (SELECT 1\(compiled.fromWhere)\(compiled.limitClause))"
        return try withDatabase { db in try Int.fetchOne(db, sql: sql, arguments: compiled.arguments.statementArguments) ?? 0 }
    }
}

/// A batched fetch whose first batch is ready before its ID fetch runs.
public final class ProgressiveFetch {
    /// The first `fetchBatchSize` objects of the result, fulfilled.
    public let firstBatch: [ManagedObject]
    let context: ManagedObjectContext
    let request: FetchRequest
    let residentBatches: Int

    init(context: ManagedObjectContext, request: FetchRequest, firstBatch: [ManagedObject], residentBatches: Int) {
        self.context = context
        self.request = request
        self.firstBatch = firstBatch
        self.residentBatches = residentBatches
    }

    /// Runs the ID fetch, reporting progress; `.cancel` from the handler throws `.cancelled`.
    public func finish(progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        try context.fetchBatched(request, residentBatches: residentBatches, progress: progress)
    }
}
