import Foundation

extension ValueSelection {
    /// `within` (a result's membership over alias `t`) narrowed to these values' rows of `entity`.
    static func narrowing(_ within: String, to selection: ValueSelection?, of entity: Entity) throws -> String {
        guard let selection else { return within }
        return "\(within) AND \(try selection.condition(for: entity))"
    }
}

/// One store: the ID table is on the context's connection, so each statement tests membership
/// itself, `… WHERE t.rowid IN (SELECT key FROM temp.<ids>) AND (…)`. A query's result edits the
/// rows of a table its rows name by key (``Entity/editTables``): the test reads that table's key
/// from the ID table's columns that hold it, `… WHERE t.rowid IN (SELECT c0 FROM temp.<ids>)`.
extension StoreResultSource: ResultEditing {

    /// The store's entity of that name is this result's own (the same object), or a table this
    /// query's rows name by key.
    func isResultEntity(_ other: Entity) -> Bool { other === entity || editTable(other) != nil }

    /// The query's edit table that is `other`, with the ID table's columns that hold its key.
    private func editTable(_ other: Entity) -> (table: QueryEditTable, idKeys: [String])? {
        guard entity.query != nil, other.query == nil,
              let table = entity.editTables.first(where: { $0.table == other.name }),
              context.store.schema.entity(named: table.table) === other else { return nil }
        let idKeys = table.keyAttributes.compactMap { entity.indexOfAttribute(named: $0).map { idColumns[$0] } }
        guard idKeys.count == table.keyAttributes.count else { return nil }
        return (table, idKeys)
    }

    /// `<key> IN (SELECT <id columns> FROM temp.<ids>)` over alias `t`, after checking that
    /// `entityName` is the result's entity (or a table a query's rows name), narrowed to `values`.
    private func membership(of entityName: String, values: ValueSelection?) throws -> String {
        let named = try context.store.entity(named: entityName)
        guard named !== entity, let (_, idKeys) = editTable(named) else {
            try checkEdit(of: named)
            return try ValueSelection.narrowing(
                "\(sqlTuple(qualified(entity.keyColumns))) IN (SELECT \(idColumns.joined(separator: ", ")) FROM \(table.qualifiedName))",
                to: values, of: entity)
        }
        // The key read from the rows of this result (and only those whose column holds one of
        // `values`, tested on the result's own columns); a NULL key names no row.
        var rows = table.qualifiedName
        var condition = ""
        if let values {
            // The keys under names unlike every column's (`bs_key0`…, else `bs_key_2_0`…).
            let taken = Set(entity.attributes.map { $0.name.lowercased() })
            var prefix = "bs_key", n = 1
            while idKeys.indices.contains(where: { taken.contains("\(prefix)\($0)") }) { n += 1; prefix = "bs_key_\(n)_" }
            let keys = idKeys.indices.map { "\(prefix)\($0)" }
            let renamed = zip(idColumns, entity.attributes).map { "\($0) AS \(quoteIdentifier($1.name))" }
            rows = "(SELECT \(renamed.joined(separator: ", ")), \(zip(idKeys, keys).map { "\($0) AS \($1)" }.joined(separator: ", ")) FROM \(table.qualifiedName)) AS t"
            condition = " WHERE \(try values.condition(for: entity))"
            return "\(sqlTuple(qualified(named.keyColumns))) IN (SELECT \(keys.joined(separator: ", ")) FROM \(rows)\(condition))"
        }
        return "\(sqlTuple(qualified(named.keyColumns))) IN (SELECT \(idKeys.joined(separator: ", ")) FROM \(rows))"
    }

    /// The membership condition for a delete, after checking its entity and every object ID's.
    private func membership(of request: BatchDeleteRequest, values: ValueSelection?) throws -> String {
        // No object IDs name no table: through a query's first edit table, they delete nothing.
        if request.objectIDs?.isEmpty == true, let first = entity.editTables.first {
            return try membership(of: first.table, values: values)
        }
        return try membership(of: try editedEntityName(of: request), values: values)
    }

    /// The update narrowed to `objectIDs` when given.
    private func narrowed(_ request: BatchUpdateRequest, to objectIDs: [ObjectID]?) throws -> BatchUpdateRequest {
        guard let objectIDs else { return request }
        try checkOwnRows(objectIDs)
        if let stranger = objectIDs.first(where: { $0.entity.name != request.entityName }) {
            throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(request.entityName), the table the update sets; nothing was changed")
        }
        var part = request
        let only = try FetchPredicate.matching(objectIDs)
        part.predicate = part.predicate.map { $0 && only } ?? only
        return part
    }

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let within = try membership(of: request.entityName, values: values)
        return try context.execute(try narrowed(request, to: objectIDs), undoable: undoable, within: within)
    }

    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int {
        let within = try membership(of: request.entityName, values: values)
        let update = try context.compileUpdate(try narrowed(request, to: objectIDs), within: within)
        return try context.countRows(update.entity, whereSQL: update.whereClause, arguments: update.whereArguments)
    }

    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview {
        let within = try membership(of: request.entityName, values: values)
        return try context.previewUpdate(try context.compileUpdate(try narrowed(request, to: objectIDs), within: within), sample: sample)
    }

    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        try context.execute(request, undoable: undoable, within: try membership(of: request, values: values))
    }

    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        try context.count(forDelete: request, within: try membership(of: request, values: values))
    }

    /// The rows of the table named `table` that `rows` (rows of this query's result, by position)
    /// name by key, in their order, each once; a row whose key holds NULL names none.
    /// - Throws: `.invalidArgument` when this result's rows do not name rows of `table`.
    /// - Complexity: one indexed lookup in the ID table per row.
    func objectIDs(in table: String, for rows: [ObjectID]) throws -> [ObjectID] {
        let named = try context.store.entity(named: table)
        if named === entity { return rows }
        guard let (edit, _) = editTable(named) else {
            throw BatchStoreError(.invalidArgument, "the rows of \(entity.name) do not name rows of \(named.name) by key; nothing was changed")
        }
        let indexes = edit.keyAttributes.compactMap { entity.indexOfAttribute(named: $0) }
        var seen = Set<ObjectID>()
        var found: [ObjectID] = []
        for row in rows {
            guard row.entity === entity, case .position(let p) = row.key, let values = try self.table.row(at: p) else { continue }
            let key = indexes.map { values[$0] }
            guard !key.contains(where: \.isNull) else { continue }
            let id: ObjectID
            if named.isKeyedByRowid {
                guard key.count == 1, case .integer(let r) = key[0] else { continue }
                id = ObjectID(entity: named, key: .rowid(r))
            } else {
                id = ObjectID(entity: named, key: .primaryKey(key))
            }
            if seen.insert(id).inserted { found.append(id) }
        }
        return found
    }
}
