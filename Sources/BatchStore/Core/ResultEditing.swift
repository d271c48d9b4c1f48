import Foundation

/// The edits a result source runs on the result's own rows (see ``BatchFaultingCollection``'s
/// edit calls); every source conforms.
/// `values` narrows each to the rows whose attribute holds one of them (``ValueSelection``).
package protocol ResultEditing: ResultSource {
    /// True when the result's rows are named by key, so that an edit can reach them (not a view's
    /// or a key-less table's).
    var isAddressable: Bool { get }
    /// True when `entity` (as the engine's schema names it) is the result's own table.
    func isResultEntity(_ entity: Entity) -> Bool
    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult
    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int
    /// What the update would do to these rows (``UpdatePreview``), with `sample` rows shown.
    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview
    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult
    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int
}

extension ResultEditing {
    /// Refuses an edit of another table than the result's (`named`, as the schema resolved the
    /// edit's entity name) or of rows that cannot be named.
    package func checkEdit(of named: Entity) throws {
        guard isResultEntity(named) else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(entity.name), not \(named.name); nothing was changed")
        }
        guard isAddressable else {
            throw BatchStoreError(.readOnly, "\(entity.name) is a view or has no row key; nothing was changed")
        }
    }

    /// Refuses object IDs of another table than the result's.
    package func checkOwnRows(_ ids: [ObjectID]) throws {
        if let stranger = ids.first(where: { !isResultEntity($0.entity) }) {
            throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(entity.name), the table of this result; nothing was changed")
        }
    }

    /// The entity a delete names: its object IDs' (checked to be the result's rows, or rows of one
    /// table a query's rows name) or its fetch request's.
    package func editedEntityName(of request: BatchDeleteRequest) throws -> String {
        if let ids = request.objectIDs {
            try checkOwnRows(ids)
            guard let first = ids.first?.entity else { return entity.name }
            if let stranger = ids.first(where: { $0.entity.name != first.name }) {
                throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(first.name), as the delete's first row is; nothing was changed")
            }
            return first.name
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        return fetch.entityName
    }
}
