import Foundation
import GRDB
import GRDBSQLite

/// A result over several stores: its ID table, `(pos, store, key)`, is on the coordinated
/// context's connection that sees every store attached; each batch reads its `(store, key)` pairs,
/// then faults each store's share with one query on that store's own context, through its
/// identity map. Edits copy the result's keys in each store to that store's connection first
/// (see ``BatchFaultingCollection``'s edit calls).
final class CoordinatedResultSource: ResultEditing, SQLiteValuesSource {
    /// Strong, as a one-store result holds its context: a result keeps its connections alive.
    let owner: CoordinatedContext
    /// The entity in each store, by store index.
    let entities: [Int: Entity]
    let entity: Entity
    /// `(pos, store, key)` on the owner's connection.
    let table: IDTable

    init(owner: CoordinatedContext, entities: [Entity]) {
        self.owner = owner
        self.table = IDTable(connection: owner.connection, columns: ["store", "key"], keyed: true)
        var byIndex: [Int: Entity] = [:]
        for e in entities { byIndex[owner.storeIndex(of: e)] = e }
        self.entities = byIndex
        self.entity = entities[0]
    }

    var ids: any IDStore { table }
    var objectsAlive: Int { owner.contexts.reduce(0) { $0 + $1.registeredObjectCount } }
    var packsValues: Bool { true }

    func idQuery(_ request: FetchRequest) throws -> IDQuery {
        try owner.idQuery(request, entities: entities.keys.sorted().compactMap { entities[$0] })
    }

    /// The batch fault, one statement on the owner's connection (which sees every store): each
    /// store's share joined on its key, `SELECT ids.pos, ids.store, ids.key, t.<columns> FROM
    /// <ids> AS ids CROSS JOIN bs_storeN."T" AS t ON t.<key> = ids.key WHERE ids.pos BETWEEN ?1
    /// AND ?2 AND ids.store = N UNION ALL …`, read with the C API into one ``PackedRows`` per
    /// store and adopted by that store's context: the one-store fault's path, per store.
    private(set) lazy var faultSQL: String = {
        entities.keys.sorted().compactMap { i -> String? in
            guard let entity = entities[i], let key = entity.keyColumns.first else { return nil }
            let columns = owner.contexts[i].statements(for: entity).columnList
            return "SELECT ids.pos, ids.store, ids.key\(columns.isEmpty ? "" : ", " + columns) FROM \(table.qualifiedName) AS ids CROSS JOIN "
                + "\(CoordinatedContext.databaseName(i)).\(quoteIdentifier(entity.name)) AS t ON t.\(quoteIdentifier(key)) = ids.key "
                + "WHERE ids.pos BETWEEN ?1 AND ?2 AND ids.store = \(i)"
        }.joined(separator: " UNION ALL ")
    }()

    func faultStatement(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue]) {
        (faultSQL, [.integer(Int64(positions.lowerBound + 1)), .integer(Int64(positions.upperBound))])
    }

    func fault(_ positions: Range<Int>) throws -> FaultedBatch {
        let start = positions.lowerBound
        let sql = faultSQL
        let contexts = owner.contexts
        // Per store, looked up by index in the row loop: entity, identity table, packed values.
        let storeCount = contexts.count
        var storeEntities = [Entity?](repeating: nil, count: storeCount)
        var registries = [RowidRegistry?](repeating: nil, count: storeCount)
        for (i, entity) in entities where i < storeCount {
            storeEntities[i] = entity
            if entity.isKeyedByRowid { registries[i] = contexts[i].identity.rowidTable(for: entity) }
        }
        var packs = [PackedRows?](repeating: nil, count: storeCount)
        let objects = try owner.connection.withDatabase { db -> [ManagedObject?] in
            var objects = [ManagedObject?](repeating: nil, count: positions.count)
            let statement = try db.cachedStatement(sql: sql)
            let stmt = statement.sqliteStatement
            sqlite3_reset(stmt)
            sqlite3_bind_int64(stmt, 1, Int64(start + 1))
            sqlite3_bind_int64(stmt, 2, Int64(positions.upperBound))
            defer { sqlite3_reset(stmt) }
            while try db.stepRow(stmt, sql: sql) {
                let slot = Int(sqlite3_column_int64(stmt, 0)) - 1 - start
                let store = Int(sqlite3_column_int64(stmt, 1))
                guard slot >= 0 && slot < objects.count, store >= 0 && store < storeCount, let entity = storeEntities[store] else { continue }
                let context = contexts[store]
                let packed: PackedRows
                if let p = packs[store] { packed = p } else {
                    packed = context.identity.packedRows(rows: positions.count, columns: entity.attributes.count)
                    packs[store] = packed
                }
                if let registry = registries[store], sqlite3_column_type(stmt, 2) == SQLITE_INTEGER {
                    objects[slot] = context.identity.adopt(rowid: sqlite3_column_int64(stmt, 2), entity: entity, table: registry, link: context.link) {
                        .packed(packed, packed.appendRow(stmt, from: 3))
                    }
                } else {
                    let id = ObjectID(entity: entity, key: .primaryKey([SQLValue(statement: stmt, column: 2)]))
                    objects[slot] = context.identity.adopt(id, link: context.link) { .packed(packed, packed.appendRow(stmt, from: 3)) }
                }
            }
            return objects
        }
        // Each store's packed values with its context, so a dropped batch gives both back to it.
        let stores = packs.indices.filter { packs[$0] != nil }
        return FaultedBatch(objects: objects, packed: stores.compactMap { packs[$0] },
                            recyclers: stores.map { (contexts[$0].identity, contexts[$0].link) })
    }

    func objectID(idRow: [SQLValue], position: Int) -> ObjectID? {
        guard idRow.count == 2, case .integer(let s) = idRow[0], let entity = entities[Int(s)] else { return nil }
        if entity.isKeyedByRowid, case .integer(let r) = idRow[1] { return ObjectID(entity: entity, key: .rowid(r)) }
        return ObjectID(entity: entity, key: .primaryKey([idRow[1]]))
    }

    func idRow(of id: ObjectID) -> [SQLValue]? {
        guard id.isAddressable, id.keyValues.count == 1,
              let store = entities.first(where: { $0.value === id.entity })?.key else { return nil }
        return [.integer(Int64(store)), id.keyValues[0]]
    }

    func storeName(idRow: [SQLValue]) -> String? {
        guard let first = idRow.first, case .integer(let s) = first, Int(s) < owner.coordinator.stores.count, s >= 0 else { return nil }
        return owner.coordinator.stores[Int(s)].name
    }

    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery] {
        try entities.keys.sorted().compactMap { i -> IDQuery? in
            guard let entity = entities[i] else { return nil }
            let part = IDQuery.Part(entity: entity, schema: owner.coordinator.stores[i].schema, databaseName: CoordinatedContext.databaseName(i), storeIndex: i)
            return try IDQuery.search(predicate, in: table.qualifiedName, part: part, match: { "ids.store = \(i) AND \($0.keyColumnsSQL[0]) = ids.key" },
                                      after: position, backwards: backwards)
        }
    }

    /// Per store `i`, `SELECT t."<attribute>" AS value FROM temp."bs_ids_…" AS ids CROSS JOIN
    /// <store i>."T" AS t ON ids.store = i AND t.<key> = ids.key` (rows matching now: each store's
    /// ``IDQuery/values(of:matching:part:)``), joined with `UNION ALL`.
    func columnValues(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ColumnValues {
        let first = entity.attributes[try entity.requireAttributeIndex(attribute)]
        let name = first.name
        if rows == .matchingNow {
            let queries = try entities.keys.sorted().compactMap { i -> IDQuery? in
                guard let entity = entities[i] else { return nil }
                let column = entity.attributes[try entity.requireAttributeIndex(name)].name
                let part = IDQuery.Part(entity: entity, schema: owner.coordinator.stores[i].schema, databaseName: CoordinatedContext.databaseName(i), storeIndex: i)
                return try IDQuery.values(of: column, matching: request.predicate, part: part)
            }
            return ColumnValues(attribute: name, declaredType: first.declaredType, select: queries.map(\.select).joined(separator: " UNION ALL "),
                                arguments: queries.flatMap(\.arguments), connection: table.connection)
        }
        let selects = try entities.keys.sorted().compactMap { i -> String? in
            guard let entity = entities[i] else { return nil }
            let column = entity.attributes[try entity.requireAttributeIndex(name)].name
            let builder = QueryBuilder(entity: entity, schema: owner.coordinator.stores[i].schema, databaseName: CoordinatedContext.databaseName(i))
            return "SELECT t.\(quoteIdentifier(column)) AS value FROM \(rows.idsSource(table.qualifiedName, count: table.count)) CROSS JOIN \(builder.fromClause) ON ids.store = \(i) AND \(builder.keyColumnsSQL[0]) = ids.key"
        }
        return ColumnValues(attribute: name, declaredType: first.declaredType, select: selects.joined(separator: " UNION ALL "), connection: table.connection)
    }

    // MARK: Edits

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        try checkEntity(request.entityName)
        let stores = try storeNames(for: objectIDs)
        if stores.isEmpty { return BatchResult(combining: [:]) }
        return try owner.runAcrossStores(entityName: request.entityName, affectedStores: stores, undoable: undoable) { context, undo in
            try withKeys(in: context, values: values) { within in
                try context.execute(try part(of: request, objectIDs: objectIDs, for: context), undoable: undo, within: within)
            }
        }
    }

    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int {
        try checkEntity(request.entityName)
        let stores = Set(try storeNames(for: objectIDs))
        return try eachStore { context in
            guard stores.contains(context.store.name) else { return 0 }
            return try withKeys(in: context, values: values) { within in
                let update = try context.compileUpdate(try part(of: request, objectIDs: objectIDs, for: context), within: within)
                return try context.countRows(update.entity, whereSQL: update.whereClause, arguments: update.whereArguments)
            }
        }
    }

    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview {
        try checkEntity(request.entityName)
        let stores = Set(try storeNames(for: objectIDs))
        var parts: [UpdatePreview] = []
        for i in entities.keys.sorted() {
            let context = owner.contexts[i]
            guard stores.contains(context.store.name) else { continue }
            let shown = parts.reduce(0) { $0 + $1.sample.count }
            var preview = try withKeys(in: context, values: values) { within in
                try context.previewUpdate(try context.compileUpdate(try part(of: request, objectIDs: objectIDs, for: context), within: within), sample: max(0, sample - shown))
            }
            // Keys repeat across files: each sample row names its file.
            for i in preview.sample.indices { preview.sample[i].store = context.store.name }
            parts.append(preview)
        }
        return UpdatePreview.combining(parts, sample: sample)
    }

    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let entityName = try checkEntity(of: request)
        let stores = try storeNames(for: request.objectIDs)
        if stores.isEmpty { return BatchResult(combining: [:]) }
        return try owner.runAcrossStores(entityName: entityName, affectedStores: stores, undoable: undoable) { context, undo in
            try withKeys(in: context, values: values) { within in try context.execute(part(of: request, for: context), undoable: undo, within: within) }
        }
    }

    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        _ = try checkEntity(of: request)
        let stores = Set(try storeNames(for: request.objectIDs))
        return try eachStore { context in
            guard stores.contains(context.store.name) else { return 0 }
            return try withKeys(in: context, values: values) { within in try context.count(forDelete: part(of: request, for: context), within: within) }
        }
    }

    /// Rows are named by their store and key (``idRow(of:)``).
    var isAddressable: Bool { true }

    /// `other` is the result's entity in one of its stores.
    func isResultEntity(_ other: Entity) -> Bool { entities.values.contains { $0 === other } }

    /// The names of the stores this result spans, in store order.
    private var storeNames: [String] { entities.keys.sorted().map { owner.coordinator.stores[$0].name } }

    private func checkEntity(_ name: String) throws {
        guard try owner.coordinator.entities(named: name).first?.name == entity.name else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(entity.name), not \(name); nothing was changed")
        }
    }

    /// The stores of the result that `ids` belong to (all of them for nil), after checking that
    /// every ID is a row of the result's entity in one of its stores.
    private func storeNames(for ids: [ObjectID]?) throws -> [String] {
        guard let ids else { return storeNames }
        if let stranger = ids.first(where: { !isResultEntity($0.entity) }) {
            throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(entity.name) in this result's stores; nothing was changed")
        }
        return storeNames.filter { name in ids.contains { $0.entity.storeName == name } }
    }

    /// The update as it applies to `context`'s store: narrowed to that store's `ids`, if given.
    private func part(of request: BatchUpdateRequest, objectIDs ids: [ObjectID]?, for context: ManagedObjectContext) throws -> BatchUpdateRequest {
        guard let ids else { return request }
        var part = request
        let only = try FetchPredicate.matching(ids.filter { $0.entity.storeName == context.store.name })
        part.predicate = part.predicate.map { $0 && only } ?? only
        return part
    }

    private func checkEntity(of request: BatchDeleteRequest) throws -> String {
        if let ids = request.objectIDs {
            _ = try storeNames(for: ids)
            return entity.name
        }
        guard let name = request.fetchRequest?.entityName else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        try checkEntity(name)
        return name
    }

    /// The delete as it applies to `context`'s store: its object IDs narrowed to that store.
    private func part(of request: BatchDeleteRequest, for context: ManagedObjectContext) -> BatchDeleteRequest {
        guard let ids = request.objectIDs else { return request }
        var part = request
        part.objectIDs = ids.filter { $0.entity.storeName == context.store.name }
        return part
    }

    /// The sum of `body` over the result's stores' contexts.
    private func eachStore(_ body: (ManagedObjectContext) throws -> Int) throws -> Int {
        try entities.keys.sorted().reduce(0) { total, i in total + (try body(owner.contexts[i])) }
    }

    /// Copies this result's keys in `context`'s store into a temp table on `context`'s connection,
    /// runs `body` with the membership condition over alias `t` (narrowed to `values`' rows,
    /// given them), and drops the table.
    /// - Complexity: O(result rows of the store), 10,000 keys per round trip.
    private func withKeys<T>(in context: ManagedObjectContext, values: ValueSelection? = nil, _ body: (String) throws -> T) throws -> T {
        guard let (store, entity) = entities.first(where: { owner.coordinator.stores[$0.key].name == context.store.name }),
              let keyColumn = entity.keyColumns.first, entity.keyColumns.count == 1 else {
            throw BatchStoreError(.readOnly, "\(self.entity.name) has no one-column row key in store \(context.store.name); nothing was changed")
        }
        let connection = context.connection
        let copy = try connection.withDatabase { db in try connection.createTempTable(db, prefix: "bs_within", "(k PRIMARY KEY) WITHOUT ROWID") }
        let quoted = quoteIdentifier(copy)
        defer { connection.dropTempTable(copy) }
        var after = 0
        let select = "SELECT pos, key FROM \(table.qualifiedName) WHERE pos > ? AND store = ? ORDER BY pos LIMIT 10000"
        while true {
            let chunk: [SQLValue] = try table.connection.withDatabase { db in
                let statement = try db.cachedStatement(sql: select)
                let cursor = try Row.fetchCursor(statement, arguments: [after, store])
                var keys: [SQLValue] = []
                while try cursor.next() != nil {
                    after = Int(sqlite3_column_int64(statement.sqliteStatement, 0))
                    keys.append(SQLValue(statement: statement.sqliteStatement, column: 1))
                }
                return keys
            }
            if chunk.isEmpty { break }
            try connection.withDatabase { db in
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.\(quoted) VALUES (?)")
                for key in chunk { try insert.bound([key]).execute() }
            }
        }
        return try body(try ValueSelection.narrowing("t.\(quoteIdentifier(keyColumn)) IN (SELECT k FROM temp.\(quoted))", to: values, of: entity))
    }
}

extension BatchResult {
    /// One result for an edit that ran in several stores: counts, IDs and changes added up
    /// (each nil unless every store gave it).
    init(combining results: [String: BatchResult]) {
        let counts = results.values.compactMap(\.count)
        let ids = results.values.compactMap(\.objectIDs)
        let changes = results.values.compactMap(\.changes)
        self.init(succeeded: results.values.allSatisfy(\.succeeded), count: counts.count == results.count ? counts.reduce(0, +) : nil,
                  objectIDs: ids.count == results.count ? ids.flatMap { $0 } : nil,
                  changes: changes.count == results.count ? changes.reduce(ChangeSet(), +) : nil)
        self.byStore = results
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
        result.reserveCapacity(keys.count)
        try withDatabase { db in
            for chunk in keys.chunks(of: 500) {
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
