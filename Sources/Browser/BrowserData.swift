import BatchStore
import Foundation
import TerminalCore

/// The result the browser scrolls: one fetch, over one store or several (see ``BatchedResult``).
typealias BrowserResult = BatchFaultingCollection

/// What the browser reads and edits: any ``FetchingContext`` (one store's context, or a context
/// over several stores), through calls that never ask how many stores there are. Edits act on the
/// rows of the result on screen only (its ID table tests membership in every statement).
final class BrowserData {
    let context: any FetchingContext

    init(context: any FetchingContext) {
        self.context = context
    }

    /// Tables and views to pick from.
    var entities: [Entity] { context.entities }
    /// Why nothing can be edited (nil: the files allow it).
    var readOnlyReason: String? { context.readOnlyReason }
    /// True with several stores: the grid shows which store each row comes from.
    var showsStores: Bool { context.storeNames.count > 1 }
    var registeredObjectCount: Int { context.registeredObjectCount }
    var canUndo: Bool { context.canUndo }
    func entity(named name: String) throws -> Entity { try context.entity(named: name) }
    /// The entity of a query typed at `:` (``FetchingContext/addQuery(_:)``).
    func addQuery(_ sql: String) throws -> Entity { try context.addQuery(sql) }

    /// Opens `request`; `firstRows` gets the first batch before the ID fetch, and `progress` is
    /// called during it.
    func open(_ request: FetchRequest, residentBatches: Int, firstRows: ([ManagedObject]) -> Void,
              progress: @escaping (IDFetchProgress) -> IDFetchDecision) throws -> BrowserResult {
        try withoutActuallyEscaping(firstRows) { first in
            try context.fetchBatched(request, residentBatches: residentBatches, firstBatch: first, progress: progress)
        }
    }

    func count(_ request: FetchRequest) throws -> Int { try context.count(for: request) }

    /// The rows of `request`, one statement, forward only: read in place (`inPlace`) where the
    /// engine allows it (SQLite), else as values (`values`: PostgreSQL).
    func streamRows(_ request: FetchRequest, inPlace: (StreamedRow) throws -> Void, values: ([SQLValue]) throws -> Void) throws {
        try context.streamRows(request, inPlace: inPlace, values: values)
    }

    /// The object `id` names, read from its store (one store's context, or the coordinated
    /// context's for the store the ID names, or the server's).
    /// - Throws: `.objectNotFound` when the row is gone.
    func existingObject(with id: ObjectID) throws -> ManagedObject { try context.existingObject(with: id) }
    /// The engine holding the IDs, for messages (`SQLite`, `PostgreSQL`).
    var engineName: String { context.engineName }
    /// What the engine can do (see ``EngineTraits``).
    var engineTraits: EngineTraits { context.engineTraits }

    // Edits act on the rows of `result` only: the `marked` ones that are still in it, or (nil)
    // every row of it; given `values` (an edit from a frequency sheet), only the rows whose
    // column holds one of them. Each count is what the matching edit would change now.

    /// Refuses a write (and the count that asks for one) when the file it would go to is no
    /// longer the one at its path: the change would be lost with the old file.
    func refuseIfFileGone() throws {
        if let problem = context.fileProblem {
            throw BatchStoreError(.readOnly, "\(problem): edits are refused, they would be lost with the old file; nothing was changed (q quits)")
        }
    }

    func countDelete(in result: BrowserResult, table: String, marked: [ObjectID]?, values: ValueSelection? = nil) throws -> Int {
        try refuseIfFileGone()
        return try result.count(forDelete: try deleteRequest(of: result, table: table, marked: marked), values: values)
    }

    /// Deletes, with undo when `undo` (what its question promised: undo refused now fails the
    /// delete, changing nothing), else without, and says which.
    func delete(in result: BrowserResult, table: String, marked: [ObjectID]?, values: ValueSelection? = nil, undo: Bool = true) throws -> (BatchResult, undoNote: String) {
        try refuseIfFileGone()
        let request = try deleteRequest(of: result, table: table, marked: marked, resultType: context.editResultType)
        return try undoable(undo) { try result.execute(request, values: values, undoable: $0) }
    }


    /// What the update would do (``UpdatePreview``), with `sample` rows old → new; writes nothing.
    func previewUpdate(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, table: String, marked: [ObjectID]?,
                       values: ValueSelection? = nil, sample: Int) throws -> UpdatePreview {
        try refuseIfFileGone()
        return try result.preview(forUpdate: updateRequest(assignments, of: result, table: table), objectIDs: try markedRows(marked, of: result, in: table),
                                  values: values, sample: sample)
    }

    /// Updates, with undo when `undo` (as ``delete(in:marked:values:undo:)``), else without.
    func update(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, table: String, marked: [ObjectID]?,
                values: ValueSelection? = nil, undo: Bool = true) throws -> (BatchResult, undoNote: String) {
        try refuseIfFileGone()
        let request = try updateRequest(assignments, of: result, table: table, resultType: context.editResultType)
        let ids = try markedRows(marked, of: result, in: table)
        return try undoable(undo) { try result.execute(request, objectIDs: ids, values: values, undoable: $0) }
    }

    func undo() throws -> ChangeSet {
        try refuseIfFileGone()
        return try context.undo()
    }
    /// What ``undo()`` would take back now (nil: nothing).
    func undoSummary() throws -> UndoSummary? {
        try refuseIfFileGone()
        return try context.undoSummary()
    }
    /// Why the file is no longer the one at its path (deleted, replaced), or nil.
    var fileProblem: String? { context.fileProblem }
    func settleMovedFile() { context.settleMovedFile() }
    /// Why an edit of `rows` rows of `result`'s table could not be undone (nil: it could), said
    /// in its confirmation; an edit of no rows needs no undo.
    func undoRefusal(of result: BrowserResult, table: String, rows: Int, deleting: Bool, assigning: [String] = []) throws -> String? {
        guard rows > 0 else { return nil }
        // Through a query, its columns' names are the table's columns'.
        let through = table == result.request.entityName ? nil : try result.editTable(table)
        let columns = assigning.map { name in through.flatMap { t in result.entity.attribute(named: name).flatMap { t.column(for: $0.name) } } ?? name }
        return context.undoRefusal(try context.entity(named: table), rows: rows, deleting: deleting, assigning: columns)
    }
    /// Runs `body` so that `progress` can cancel it part way (see ``FetchingContext/interruptible(_:_:)``).
    func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T {
        try context.interruptible(progress, body)
    }
    func merge(_ changes: ChangeSet) { context.merge(changes) }
    func refreshAllObjects() { context.refreshAllObjects() }
    func dataVersion() -> Int? { try? context.dataVersion() }
    func estimatedRowCounts() -> [String: Int] { context.estimatedRowCounts() }
}

/// `marked` (rows of `result`) as rows of `table`: themselves for the result's own table; for a
/// query's result, the rows of `table` they name by key (``BatchFaultingCollection/objectIDs(in:for:)``).
private func markedRows(_ marked: [ObjectID]?, of result: BrowserResult, in table: String) throws -> [ObjectID]? {
    guard let marked, table != result.request.entityName else { return marked }
    return try result.objectIDs(in: table, for: marked)
}

/// The update of `result`'s rows (its entity and predicate); for a query's result, of the rows of
/// `table` its rows name, each assignment naming the table's column that the result's column shows.
private func updateRequest(_ assignments: [(name: String, value: UpdateExpression)], of result: BrowserResult, table: String,
                           resultType: BatchResultType = .changes) throws -> BatchUpdateRequest {
    guard table != result.request.entityName else {
        return BatchUpdateRequest(entityName: table, predicate: result.request.predicate, propertiesToUpdate: assignments, resultType: resultType)
    }
    let through = try result.editTable(table)
    // Each name, on either side, is the result's column as the query's entity resolves it
    // (exact, then any case), set or read as the table's column it shows.
    func column(_ name: String) throws -> String {
        guard let column = result.entity.attribute(named: name).flatMap({ through.column(for: $0.name) }) else {
            throw BatchStoreError(.invalidArgument, "\(TerminalText.escapingControlCharacters(name)) is not a column of \(table) in this query, so it cannot be set or read through it; nothing was changed")
        }
        return column
    }
    let named = try assignments.map { a in (name: try column(a.name), value: try a.value.renamingColumns(column)) }
    return BatchUpdateRequest(entityName: table, predicate: nil, propertiesToUpdate: named, resultType: resultType)
}

/// The delete of `result`'s rows (its entity and predicate, unsorted), or of `marked`; for a
/// query's result, of the rows of `table` they name.
private func deleteRequest(of result: BrowserResult, table: String, marked: [ObjectID]?, resultType: BatchResultType = .changes) throws -> BatchDeleteRequest {
    if let marked { return BatchDeleteRequest(objectIDs: try markedRows(marked, of: result, in: table) ?? [], resultType: resultType) }
    let own = table == result.request.entityName
    return BatchDeleteRequest(fetchRequest: FetchRequest(entityName: table, predicate: own ? result.request.predicate : nil), resultType: resultType)
}

/// Runs `body` with undo when the question promised it (`promised`), else without. Undo
/// refused now (the count passed the limit, a foreign-key action appeared since the question)
/// fails the edit, which changed nothing: it never runs without the undo its question promised.
private func undoable<R>(_ promised: Bool, _ body: (Bool) throws -> R) throws -> (R, String) {
    guard promised else { return (try body(false), "; cannot be undone, as its question said") }
    do {
        return (try body(true), "; u undoes")
    } catch let error as BatchStoreError where error.code == .undoRefused || error.code == .tooBigToUndo {
        throw BatchStoreError(error.code, "undo is no longer possible: \(error.undoRefusalReason); nothing was changed; asked again, the question says so")
    }
}
