import Foundation
import GRDB
import GRDBSQLite

/// A result over one store: its ID table is on the context's own connection, so a batch is one
/// join, `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS JOIN main."T" AS t
/// ON t.rowid = ids.key WHERE ids.pos BETWEEN ? AND ?`, read with the C API into packed rows (its
/// edits, in Batch/, test membership in their own statements).
///
/// A result in rowid order (a rowid table fetched with no sort) has keys that ascend with `pos`:
/// a batch whose last key is as far from its first as its last position is from its first holds
/// exactly the rows between those keys. Such a batch is read as a range of the table,
/// `SELECT t.rowid, t.<columns> FROM main."T" AS t WHERE t.rowid BETWEEN ? AND ?`, the scan a raw
/// loop does, after one lookup of its two end keys in the ID table (which takes no lock on the
/// file). The join costs 1.2x–1.3x that scan (`bench-worker --mode sweep-floor`); a batch with
/// gaps (a predicate, rows deleted before the fetch) takes the join.
final class StoreResultSource: SQLiteValuesSource {
    /// Strong: a result keeps its context (and connection) alive.
    let context: ManagedObjectContext
    let entity: Entity
    let table: IDTable
    let isAddressable: Bool
    /// True when the ID table's keys ascend with `pos` (see above).
    let keysAscend: Bool
    /// For a result in rowid order whose keys have no gap at all (the whole table fetched, no
    /// row deleted before the fetch), the key at position 0, so every batch's end keys follow
    /// from its positions with no lookup; checked once per fill of the ID table (its first and
    /// last key), kept with the fill's generation.
    private var unbrokenFrom: (generation: Int, firstKey: Int64?) = (-1, nil)
    private(set) lazy var faultSQL = makeFaultSQL()
    /// The end keys of a batch: `SELECT (SELECT key FROM ids WHERE pos = ?1), (SELECT key … = ?2)`.
    private lazy var endKeysSQL = "SELECT (SELECT key FROM \(table.qualifiedName) WHERE pos = ?1), (SELECT key FROM \(table.qualifiedName) WHERE pos = ?2)"
    /// A batch read as a range of the table (see above).
    private lazy var rangeSQL: String = {
        let columns = context.statements(for: entity).columnList
        let key = "t.\(quoteIdentifier(entity.keyColumns.first ?? "rowid"))"
        return "SELECT \(key)\(columns.isEmpty ? "" : ", " + columns) FROM main.\(quoteIdentifier(entity.name)) AS t WHERE \(key) BETWEEN ? AND ?"
    }()

    init(context: ManagedObjectContext, entity: Entity, request: FetchRequest) {
        self.context = context
        self.entity = entity
        self.isAddressable = !entity.keyColumns.isEmpty
        // No sort: the ID fetch orders by the row key alone (see CompiledFetch), and a rowid table's
        // one key is the rowid.
        self.keysAscend = entity.isKeyedByRowid && entity.keyColumns.count == 1 && request.sortDescriptors.isEmpty && !request.reversesOrder
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

    /// The end keys of the batch at `positions` when it is one unbroken range of keys (see the
    /// type's notes), else nil.
    private func keyRange(_ db: Database, _ positions: Range<Int>) throws -> ClosedRange<Int64>? {
        guard keysAscend, positions.count > 1 else { return nil }
        if unbrokenFrom.generation != table.generation {
            unbrokenFrom = (table.generation, try unbrokenKeys(db, from: 1, to: table.count)?.lowerBound)
        }
        if let first = unbrokenFrom.firstKey {
            return (first + Int64(positions.lowerBound))...(first + Int64(positions.upperBound - 1))
        }
        return try unbrokenKeys(db, from: positions.lowerBound + 1, to: positions.upperBound)
    }

    /// The keys at 1-based positions `from` and `to` of the ID table, when they are as far apart
    /// as the positions (keys ascend, so every key between is there); else nil.
    private func unbrokenKeys(_ db: Database, from: Int, to: Int) throws -> ClosedRange<Int64>? {
        let stmt = try db.cachedStatement(sql: endKeysSQL).sqliteStatement
        sqlite3_reset(stmt)
        defer { sqlite3_reset(stmt) }
        sqlite3_bind_int64(stmt, 1, Int64(from))
        sqlite3_bind_int64(stmt, 2, Int64(to))
        guard try db.stepRow(stmt, sql: endKeysSQL),
              sqlite3_column_type(stmt, 0) == SQLITE_INTEGER, sqlite3_column_type(stmt, 1) == SQLITE_INTEGER else { return nil }
        let first = sqlite3_column_int64(stmt, 0), last = sqlite3_column_int64(stmt, 1)
        guard last >= first, last &- first == Int64(to - from) else { return nil }
        return first...last
    }

    /// The statement that faults the batch at `positions`, with its bound values: the range read
    /// or the join (see the type's notes). Looks up the batch's end keys; reads no row.
    func faultStatement(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue]) {
        if let range = try context.withDatabase({ try keyRange($0, positions) }) {
            return (rangeSQL, [.integer(range.lowerBound), .integer(range.upperBound)])
        }
        return (faultSQL, [.integer(Int64(positions.lowerBound + 1)), .integer(Int64(positions.upperBound))])
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
            if let packed, let registry, let range = try keyRange(db, positions) {
                // The batch is one range of the table: read as a scan, each row's slot from its key.
                let rangeStatement = try db.cachedStatement(sql: rangeSQL).sqliteStatement
                sqlite3_reset(rangeStatement)
                sqlite3_bind_int64(rangeStatement, 1, range.lowerBound)
                sqlite3_bind_int64(rangeStatement, 2, range.upperBound)
                defer { sqlite3_reset(rangeStatement) }
                while try db.stepRow(rangeStatement, sql: rangeSQL) {
                    let rowid = sqlite3_column_int64(rangeStatement, 0)
                    let slot = Int(rowid &- range.lowerBound)
                    guard slot >= 0 && slot < batchCount else { continue }
                    objects[slot] = identity.adopt(rowid: rowid, entity: entity, table: registry, link: link) {
                        .packed(packed, packed.appendRow(rangeStatement, from: 1))
                    }
                }
                return objects
            }
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
        let ids = rows.idsSource(table.qualifiedName, count: table.count)
        if isAddressable {
            let on = zip(entity.keyColumns, idColumns).map { "t.\(quoteIdentifier($0)) = ids.\($1)" }.joined(separator: " AND ")
            values = "SELECT t.\(quoteIdentifier(name)) AS value FROM \(ids) CROSS JOIN main.\(quoteIdentifier(entity.name)) AS t ON \(on)"
        } else {
            values = "SELECT ids.\(idColumns[index]) AS value FROM \(ids)"
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

    /// Positions a search looks at one by one before it reads the whole table's matches instead:
    /// a 500th of the result (so the near look costs a few percent of the scan that follows it
    /// when it finds nothing), at least 1,000 and at most 20,000.
    static func nearSearchWindow(count: Int) -> Int { min(20_000, max(1_000, count / 500)) }

    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery] {
        let keys = entity.keyColumns
        guard !keys.isEmpty else { return [try IDQuery.searchOfValues(predicate, in: table.qualifiedName, part: Self.part(entity, context), idColumns: idColumns, after: position, backwards: backwards)] }
        let on = zip(keys, idColumns).map { "t.\(quoteIdentifier($0)) = ids.\($1)" }.joined(separator: " AND ")
        // A far match (or none) costs one scan of the table, not a lookup per position between.
        return [try IDQuery.searchByScan(predicate, in: table.qualifiedName, part: Self.part(entity, context), idColumns: idColumns, match: on,
                                         after: position, backwards: backwards, window: Self.nearSearchWindow(count: table.count))]
    }
}
