import Foundation

extension ValueSelection {
    /// `within` (a result's membership over alias `t`) narrowed to these values' rows of `entity`.
    static func narrowing(_ within: String, to selection: ValueSelection?, of entity: Entity) throws -> String {
        guard let selection else { return within }
        return "\(within) AND \(try selection.condition(for: entity))"
    }
}

/// One store: the ID table is on the context's connection, so each statement tests membership
/// itself, `… WHERE t.rowid IN (SELECT key FROM temp.<ids>) AND (…)`.
extension StoreResultSource: ResultEditing {

    /// The store's entity of that name is this result's own: the same object.
    func isResultEntity(_ other: Entity) -> Bool { other === entity }

    /// `<key> IN (SELECT <id columns> FROM temp.<ids>)` over alias `t`, after checking that
    /// `entityName` is the result's entity.
    private func membership(of entityName: String) throws -> String {
        try checkEdit(of: try context.store.entity(named: entityName))
        return "\(sqlTuple(qualified(entity.keyColumns))) IN (SELECT \(idColumns.joined(separator: ", ")) FROM \(table.qualifiedName))"
    }

    /// The membership condition for a delete, after checking its entity and every object ID's.
    private func membership(of request: BatchDeleteRequest) throws -> String {
        try membership(of: try editedEntityName(of: request))
    }

    /// The update narrowed to `objectIDs` when given.
    private func narrowed(_ request: BatchUpdateRequest, to objectIDs: [ObjectID]?) throws -> BatchUpdateRequest {
        guard let objectIDs else { return request }
        try checkOwnRows(objectIDs)
        var part = request
        let only = try FetchPredicate.matching(objectIDs)
        part.predicate = part.predicate.map { $0 && only } ?? only
        return part
    }

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let within = try ValueSelection.narrowing(try membership(of: request.entityName), to: values, of: entity)
        return try context.execute(try narrowed(request, to: objectIDs), undoable: undoable, within: within)
    }

    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int {
        let within = try ValueSelection.narrowing(try membership(of: request.entityName), to: values, of: entity)
        let update = try context.compileUpdate(try narrowed(request, to: objectIDs), within: within)
        return try context.countRows(update.entity, whereSQL: update.whereClause, arguments: update.whereArguments)
    }

    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview {
        let within = try ValueSelection.narrowing(try membership(of: request.entityName), to: values, of: entity)
        return try context.previewUpdate(try context.compileUpdate(try narrowed(request, to: objectIDs), within: within), sample: sample)
    }

    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        try context.execute(request, undoable: undoable, within: try ValueSelection.narrowing(try membership(of: request), to: values, of: entity))
    }

    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        try context.count(forDelete: request, within: try ValueSelection.narrowing(try membership(of: request), to: values, of: entity))
    }
}
