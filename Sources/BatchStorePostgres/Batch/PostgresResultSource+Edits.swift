import BatchStore
import Foundation

/// Edits of the result's own rows, in its session: each statement adds the membership test
/// `(t."id") IN (SELECT ids.key FROM pg_temp.bs_ids_N AS ids)`, so a row outside the ID table
/// (inserted since, or outside the filter the result was fetched with) is never counted or changed.
extension PostgresResultSource: ResultEditing {
    /// The context the edit runs through: the result's, else one made for the edit (which keeps
    /// no undo: an undoable edit is refused before anything runs).
    func editingContext(undoable: Bool) throws -> PostgresContext {
        if let context { return context }
        guard !undoable else {
            let why = openedThroughContext ? "the PostgresContext that opened this result is gone, and its undo stack with it"
                : "this result was opened from a PostgresStore, not through a PostgresContext, so nothing keeps an undo journal for it"
            throw BatchStoreError(.undoRefused, "\(why); nothing was changed")
        }
        return PostgresContext(store: store)
    }

    /// The edit's site: this session, and membership in the ID table (and, for an edit of a
    /// frequency sheet's values, the rows holding them, as its GROUP BY grouped them).
    func site(for entityName: String, values: ValueSelection?, context: PostgresContext) throws -> PostgresContext.EditSite {
        try checkEdit(of: try store.entity(named: entityName))
        // A result's membership names rows by key: ambiguous under inheritance.
        try PostgresContext.refuseKeyAddressing(table, session)
        try idTable.analyzeOnce()
        let keys = idTable.columns
        var within = "(\(keys.sourceList)) IN (SELECT \(keys.map { "ids.\($0.name)" }.joined(separator: ", ")) FROM \(idTable.qualifiedName) AS ids)"
        if let values { within += " AND " + (try condition(for: values)) }
        return PostgresContext.EditSite(lease: lease, prepare: { [unowned self] sql in try self.prepare(sql) }, within: within)
    }

    /// A table of the same name: object IDs may come from another `PostgresStore` of the same
    /// database (another context's, another result's), whose entities are other objects.
    func isResultEntity(_ other: Entity) -> Bool { other.name == table.name }

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let context = try editingContext(undoable: undoable)
        return try context.execute(request, objectIDs: objectIDs, undoable: undoable, at: try site(for: request.entityName, values: values, context: context))
    }

    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int {
        let context = try editingContext(undoable: false)
        let site = try site(for: request.entityName, values: values, context: context)
        return try context.count(try context.compileUpdate(request, objectIDs: objectIDs, at: site), at: site)
    }

    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview {
        let context = try editingContext(undoable: false)
        let site = try site(for: request.entityName, values: values, context: context)
        return try context.preview(try context.compileUpdate(request, objectIDs: objectIDs, at: site), at: site, sample: sample)
    }

    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let context = try editingContext(undoable: undoable)
        return try context.execute(request, undoable: undoable, at: try site(for: try editedEntityName(of: request), values: values, context: context))
    }

    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        let context = try editingContext(undoable: false)
        let site = try site(for: try editedEntityName(of: request), values: values, context: context)
        return try context.count(try context.compileDelete(request, at: site), at: site)
    }
}
