import Foundation
import GRDB
import GRDBSQLite

/// A result over one store: its ID table is on the context's own connection, so a batch is one
/// join, `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS JOIN main."T" AS t
/// ON t.rowid = ids.key WHERE ids.pos BETWEEN ? AND ?`, read with the C API into packed rows (its
/// edits, in Batch/, test membership in their own statements).
final class StoreResultSource: ResultSource {
    /// Strong: a result keeps its context (and connection) alive.
    let context: ManagedObjectContext
    let entity: Entity
    let table: IDTable
    let isAddressable: Bool
    private(set) lazy var faultSQL = makeFaultSQL()

    init(context: ManagedObjectContext, entity: Entity) {
        self.context = context
        self.entity = entity
        self.isAddressable = !entity.keyColumns.isEmpty
        self.table = IDTable(connection: context.connection, columns: IDQuery.columns(for: [Self.part(entity, context)]),
                             keyed: !entity.keyColumns.isEmpty)
    }

    var ids: any IDStore { table }
    /// The ID table's columns after `pos`: `key`, `k0, k1, …`, or `c0, c1, …` for a view without a key.
    var idColumns: [String] { table.columns }

    private static func part(_ entity: Entity, _ context: ManagedObjectContext) -> IDQuery.Part {
        IDQuery.Part(entity: entity, schema: context.store.schema, databaseName: "main", storeIndex: nil)
    }

    var objectsAlive: Int { context.registeredObjectCount }
    var packsValues: Bool { context.parent == nil }

    func idQuery(_ request: FetchRequest) throws -> IDQuery {
        try IDQuery(request, parts: [Self.part(entity, context)])
    }

    /// The batch fault's SQL (the ID table's name is stable for its life).
    private func makeFaultSQL() -> String {
        let ids = table
        let keys = entity.keyColumns
        let sql: String
        if isAddressable {
            let columns = context.statements(for: entity).columnList
            let on = zip(keys, idColumns).map { "t.\(quoteIdentifier($0)) = ids.\($1)" }.joined(separator: " AND ")
            let keySelect = idColumns.map { "ids.\($0)" }.joined(separator: ", ")
            sql = "SELECT ids.pos, \(keySelect)\(columns.isEmpty ? "" : ", " + columns) FROM \(ids.qualifiedName) AS ids CROSS JOIN main.\(quoteIdentifier(entity.name)) AS t ON \(on) WHERE ids.pos BETWEEN ? AND ?"
        } else {
            let cols = idColumns.joined(separator: ", ")
            sql = "SELECT pos\(cols.isEmpty ? "" : ", " + cols) FROM \(ids.qualifiedName) WHERE pos BETWEEN ? AND ?"
        }
        return sql
    }

    func fault(_ positions: Range<Int>) throws -> FaultedBatch {
        let start = positions.lowerBound
        let batchCount = positions.count
        let context = self.context
        let entity = self.entity
        let attributeCount = entity.attributes.count
        let keyCount = isAddressable ? idColumns.count : 0
        let addressable = isAddressable
        let sql = faultSQL
        let rowidKeyed = entity.isKeyedByRowid
        let link = context.link
        let identity = context.identity
        // Values are packed per batch and decoded when read, except in a child context, which
        // lays its parent's unsaved changes over each row as it reads it.
        let packed = context.parent == nil ? identity.packedRows(rows: batchCount, columns: attributeCount) : nil
        let registry = rowidKeyed && addressable ? identity.rowidTable(for: entity) : nil
        let objects = try context.withDatabase { db -> [ManagedObject?] in
            var objects = [ManagedObject?](repeating: nil, count: batchCount)
            let statement = try db.cachedStatement(sql: sql)
            // Bound, stepped and read with the C API: this loop runs once per row of every sweep.
            let stmt = statement.sqliteStatement
            sqlite3_reset(stmt)
            sqlite3_bind_int64(stmt, 1, Int64(start + 1))
            sqlite3_bind_int64(stmt, 2, Int64(positions.upperBound))
            defer { sqlite3_reset(stmt) }   // ends the statement's read, as a finished cursor would
            let firstValue = Int32(1 + keyCount)
            if let packed, let registry {
                // The sweep's path: rowid key, packed values, identity table looked up once per batch.
                while try db.stepRow(stmt, sql: sql) {
                    let slot = Int(sqlite3_column_int64(stmt, 0)) - 1 - start
                    guard slot >= 0 && slot < batchCount else { continue }
                    objects[slot] = identity.adopt(rowid: sqlite3_column_int64(stmt, 1), entity: entity, table: registry, link: link) {
                        .packed(packed, packed.appendRow(stmt, from: firstValue))
                    }
                }
                return objects
            }
            while try db.stepRow(stmt, sql: sql) {
                let pos = Int(sqlite3_column_int64(stmt, 0))
                let slot = pos - 1 - start
                guard slot >= 0 && slot < objects.count else { continue }
                guard addressable else {
                    // A view without a row key: the ID table holds the values; objects are not registered.
                    let id = ObjectID(entity: entity, key: .position(pos - 1))
                    objects[slot] = packed.map { ManagedObject(objectID: id, link: link, packed: $0, row: $0.appendRow(stmt, from: 1)) }
                        ?? ManagedObject(objectID: id, link: link, values: context.rowValues(stmt, from: 1, count: attributeCount, id: id))
                    continue
                }
                let id = rowidKeyed
                    ? ObjectID(entity: entity, key: .rowid(sqlite3_column_int64(stmt, 1)))
                    : ObjectID(entity: entity, key: .primaryKey((0..<keyCount).map { SQLValue(statement: stmt, column: Int32(1 + $0)) }))
                objects[slot] = identity.adopt(id, link: link) {
                    if let packed { return .packed(packed, packed.appendRow(stmt, from: firstValue)) }
                    return .decoded(context.rowValues(stmt, from: firstValue, count: attributeCount, id: id))
                }
            }
            return objects
        }
        return FaultedBatch(objects: objects, packed: packed.map { [$0] } ?? [], recyclers: packed == nil ? [] : [(identity, link)])
    }

    /// Fetched rows: `SELECT t."<attribute>" AS value FROM temp."bs_ids_…" AS ids CROSS JOIN main."T" AS t
    /// ON t.rowid = ids.key` (a view without a row key: `SELECT ids.c<i> AS value FROM temp."bs_ids_…" AS ids`);
    /// rows matching now: see ``IDQuery/values(of:matching:part:)``.
    func columnValues(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ColumnValues {
        let index = try entity.requireAttributeIndex(attribute)
        let name = entity.attributes[index].name
        if rows == .matchingNow {
            let query = try IDQuery.values(of: name, matching: request.predicate, part: Self.part(entity, context))
            return ColumnValues(attribute: name, declaredType: entity.attributes[index].declaredType, select: query.select,
                                arguments: query.arguments, connection: table.connection)
        }
        let values: String
        if isAddressable {
            let on = zip(entity.keyColumns, idColumns).map { "t.\(quoteIdentifier($0)) = ids.\($1)" }.joined(separator: " AND ")
            values = "SELECT t.\(quoteIdentifier(name)) AS value FROM \(table.qualifiedName) AS ids CROSS JOIN main.\(quoteIdentifier(entity.name)) AS t ON \(on)"
        } else {
            values = "SELECT ids.\(idColumns[index]) AS value FROM \(table.qualifiedName) AS ids"
        }
        return ColumnValues(attribute: name, declaredType: entity.attributes[index].declaredType, select: values, connection: table.connection)
    }

    func objectID(idRow: [SQLValue], position: Int) -> ObjectID? {
        guard isAddressable else { return ObjectID(entity: entity, key: .position(position)) }
        if entity.isKeyedByRowid, idRow.count == 1, case .integer(let r) = idRow[0] { return ObjectID(entity: entity, key: .rowid(r)) }
        return ObjectID(entity: entity, key: .primaryKey(idRow))
    }

    func idRow(of id: ObjectID) -> [SQLValue]? {
        guard isAddressable, id.entity === entity, id.isAddressable else { return nil }
        return id.keyValues
    }

    func storeName(idRow: [SQLValue]) -> String? { context.store.name }

    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery] {
        let keys = entity.keyColumns
        guard !keys.isEmpty else { throw BatchStoreError(.invalidQuery, "\(entity.name) has no row key, so it cannot be searched in place") }
        let on = zip(keys, idColumns).map { "t.\(quoteIdentifier($0)) = ids.\($1)" }.joined(separator: " AND ")
        return [try IDQuery.search(predicate, in: table.qualifiedName, part: Self.part(entity, context), match: { _ in on },
                                   after: position, backwards: backwards)]
    }
}
