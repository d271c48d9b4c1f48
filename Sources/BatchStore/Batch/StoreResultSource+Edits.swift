import Foundation

/// The edits a result source runs on the result's own rows (see ``BatchFaultingCollection``'s
/// edit calls); every source conforms.
/// `values` narrows each to the rows whose attribute holds one of them (``ValueSelection``).
package protocol ResultEditing: ResultSource {
    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult
    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int
    /// What the update would do to these rows (``UpdatePreview``), with `sample` rows shown.
    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview
    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult
    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int
}

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

    /// `<key> IN (SELECT <id columns> FROM temp.<ids>)` over alias `t`, after checking that
    /// `entityName` is the result's entity.
    private func membership(of entityName: String) throws -> String {
        let named = try context.store.entity(named: entityName)
        guard named === entity else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(entity.name), not \(named.name); nothing was changed")
        }
        guard isAddressable else {
            throw BatchStoreError(.readOnly, "\(entity.name) is a view or has no row key; nothing was changed")
        }
        return "\(sqlTuple(qualified(entity.keyColumns))) IN (SELECT \(idColumns.joined(separator: ", ")) FROM \(table.qualifiedName))"
    }

    /// The membership condition for a delete, after checking its entity and every object ID's.
    private func membership(of request: BatchDeleteRequest) throws -> String {
        if let objectIDs = request.objectIDs {
            if let stranger = objectIDs.first(where: { $0.entity !== entity }) {
                throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(entity.name), the table of this result; nothing was changed")
            }
            return try membership(of: entity.name)
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        return try membership(of: fetch.entityName)
    }

    /// The update narrowed to `objectIDs` when given.
    private func narrowed(_ request: BatchUpdateRequest, to objectIDs: [ObjectID]?) throws -> BatchUpdateRequest {
        guard let objectIDs else { return request }
        if let stranger = objectIDs.first(where: { $0.entity !== entity }) {
            throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(entity.name), the table of this result; nothing was changed")
        }
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
