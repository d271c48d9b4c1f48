import GRDB

/// Batch edits that touch only the rows of one open result.
///
/// A result is one entity under one predicate, fetched into an ID table; a screen that shows it, or
/// a set of rows picked from it, belongs to it and to nothing else. These calls run the request
/// with the membership test in the statement itself, so a row that is not in the ID table
/// (another table's row, a row of an older filter, a row inserted since the fetch) is never
/// counted or changed:
/// - one store: `… WHERE t.rowid IN (SELECT key FROM temp.<ids>) AND (<request's condition>)`, on
///   the collection's own connection;
/// - several stores: store by store, the result's keys in that store are copied (10,000 per round
///   trip, memory flat) into a temp table on the store's connection and the same test runs there;
///   all or nothing across stores, as ``CoordinatedContext``'s batch requests are.
extension BatchFaultingCollection {
    /// Updates the rows of this result that `request` matches (and, given `objectIDs`, only those
    /// rows; given `values`, only the rows whose attribute holds one of them, as a frequency sheet
    /// groups them: ``ValueSelection``), in one transaction per store.
    ///
    /// Runs `UPDATE main."T" AS t SET … WHERE <key> IN (SELECT key FROM temp.<ids>) [AND <values>] AND (<predicate>)`.
    /// - Throws: `.invalidArgument` when `request` or an object ID belongs to another entity than
    ///   the result's; nothing is written then.
    /// - Complexity: one UPDATE per store; SQLite builds a transient index over the ID table's keys.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, values: ValueSelection?, undoable: Bool = false) throws -> BatchResult {
        try editor.execute(request, objectIDs: objectIDs, values: values, undoable: undoable)
    }

    /// ``execute(_:objectIDs:values:undoable:)`` on every value's rows.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, undoable: Bool = false) throws -> BatchResult {
        try editor.execute(request, objectIDs: objectIDs, values: nil, undoable: undoable)
    }

    /// How many rows ``execute(_:objectIDs:values:undoable:)`` would change: the same WHERE clause,
    /// counted with `SELECT count(*)`. Writes nothing.
    public func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, values: ValueSelection?) throws -> Int {
        try editor.count(forUpdate: request, objectIDs: objectIDs, values: values)
    }

    /// What ``execute(_:objectIDs:values:undoable:)`` would do (``UpdatePreview``): the rows it
    /// changes, the non-NULL values each assignment would turn into NULL, and the first `sample`
    /// rows by key, old value → new. Writes nothing.
    public func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, values: ValueSelection? = nil, sample: Int = 3) throws -> UpdatePreview {
        try editor.preview(forUpdate: request, objectIDs: objectIDs, values: values, sample: sample)
    }

    /// ``count(forUpdate:objectIDs:values:)`` on every value's rows.
    public func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil) throws -> Int {
        try editor.count(forUpdate: request, objectIDs: objectIDs, values: nil)
    }

    /// Deletes the rows of this result that `request` selects (its object IDs, or its fetch
    /// request's predicate; given `values`, only the rows whose attribute holds one of them, as a
    /// frequency sheet groups them: ``ValueSelection``), in one transaction per store.
    ///
    /// Runs `DELETE FROM main."T" AS t WHERE <key> IN (SELECT key FROM temp.<ids>) AND (<key> IN
    /// (SELECT k0 FROM temp.<marked>))` for object IDs; with values, `DELETE FROM main."T" AS t WHERE
    /// <key> IN (SELECT key FROM temp.<ids>) AND (+t."genre" IN ('Drama', 'Comedy') OR t."genre" IS NULL) AND (<predicate>)`.
    /// - Throws: `.invalidArgument` when the request or an object ID belongs to another entity than
    ///   the result's; nothing is written then.
    public func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool = false) throws -> BatchResult {
        try editor.execute(request, values: values, undoable: undoable)
    }

    /// ``execute(_:values:undoable:)`` on every value's rows.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> BatchResult {
        try editor.execute(request, values: nil, undoable: undoable)
    }

    /// How many rows ``execute(_:values:undoable:)`` would delete: the same WHERE clause, counted
    /// with `SELECT count(*)`. Writes nothing.
    public func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        try editor.count(forDelete: request, values: values)
    }

    /// ``count(forDelete:values:)`` on every value's rows.
    public func count(forDelete request: BatchDeleteRequest) throws -> Int {
        try editor.count(forDelete: request, values: nil)
    }

    /// The tables whose rows this result's rows name by key, which edits through it act on: for a
    /// query's result (``PersistentStore/Options/query``), its entity's ``Entity/editTables``'
    /// names, in order; empty for any other result (its edits act on its own table).
    public var editTables: [String] { storage.source.entity.editTables.map(\.table) }

    /// The table named `name` among ``editTables``, with the result columns that hold its key and
    /// the table's columns the result shows.
    /// - Throws: `.invalidArgument` when this result's rows do not name rows of that table.
    public func editTable(_ name: String) throws -> QueryEditTable {
        guard let table = storage.source.entity.editTables.first(where: { $0.table == name }) else {
            throw BatchStoreError(.invalidArgument, "the rows of \(storage.source.entity.name) do not name rows of \(name) by key; nothing was changed")
        }
        return table
    }

    /// The rows of `table` that `rows` (rows of this query's result) name by key, in order, each
    /// once: what a delete or update of those rows of the result acts on. A row whose key column
    /// holds NULL (the unmatched side of an outer join) names none. Given the result's own table,
    /// `rows` as they are.
    ///
    /// Pass them to ``execute(_:values:undoable:)`` as the delete's object IDs, or to
    /// ``execute(_:objectIDs:values:undoable:)`` with an update whose entity is `table` and whose
    /// assignments name `table`'s columns (``QueryEditTable/column(for:)``): the statement tests
    /// that each key is still among the result's, `DELETE FROM main."orders" AS t WHERE t.rowid IN
    /// (SELECT c0 FROM temp.<ids>) AND (t.rowid IN (…))`.
    /// - Throws: `.invalidArgument` when the result's rows do not name rows of `table`.
    /// - Complexity: one indexed lookup in the ID table per row; meant for hand-picked rows.
    public func objectIDs(in table: String, for rows: [ObjectID]) throws -> [ObjectID] {
        guard let source = storage.source as? StoreResultSource else {
            if table == storage.source.entity.name { return rows }
            throw BatchStoreError(.invalidArgument, "the rows of \(storage.source.entity.name) do not name rows of \(table) by key; nothing was changed")
        }
        return try source.objectIDs(in: table, for: rows)
    }

    /// The result's source, as the edits see it.
    private var editor: any ResultEditing {
        get throws {
            guard let editor = storage.source as? any ResultEditing else {
                throw BatchStoreError(.readOnly, "\(storage.source.entity.name) cannot be edited through this result: batch edits over its engine are not built yet")
            }
            return editor
        }
    }
}

extension BatchFaultingCollection: BatchedResult {}
