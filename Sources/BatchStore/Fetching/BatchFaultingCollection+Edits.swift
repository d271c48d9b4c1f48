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
    /// rows), in one transaction per store.
    ///
    /// Runs `UPDATE main."T" AS t SET … WHERE <key> IN (SELECT key FROM temp.<ids>) AND (<predicate>)`.
    /// - Throws: `.invalidArgument` when `request` or an object ID belongs to another entity than
    ///   the result's; nothing is written then.
    /// - Complexity: one UPDATE per store; SQLite builds a transient index over the ID table's keys.
    public func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil, undoable: Bool = false) throws -> BatchResult {
        try storage.source.execute(request, objectIDs: objectIDs, undoable: undoable, within: storage.ids)
    }

    /// How many rows ``execute(_:objectIDs:undoable:)`` would change: the same WHERE clause,
    /// counted with `SELECT count(*)`. Writes nothing.
    public func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]? = nil) throws -> Int {
        try storage.source.count(forUpdate: request, objectIDs: objectIDs, within: storage.ids)
    }

    /// Deletes the rows of this result that `request` selects (its object IDs, or its fetch
    /// request's predicate), in one transaction per store.
    ///
    /// Runs `DELETE FROM main."T" AS t WHERE <key> IN (SELECT key FROM temp.<ids>) AND (<key> IN
    /// (SELECT k0 FROM temp.<marked>))` for object IDs.
    /// - Throws: `.invalidArgument` when the request or an object ID belongs to another entity than
    ///   the result's; nothing is written then.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> BatchResult {
        try storage.source.execute(request, undoable: undoable, within: storage.ids)
    }

    /// How many rows ``execute(_:undoable:)-(BatchDeleteRequest,_)`` would delete: the same WHERE
    /// clause, counted with `SELECT count(*)`. Writes nothing.
    public func count(forDelete request: BatchDeleteRequest) throws -> Int {
        try storage.source.count(forDelete: request, within: storage.ids)
    }

    /// The IDs among `ids` whose rows are in this result's ID table, in the order given; IDs of
    /// other entities (or stores) are left out.
    ///
    /// Runs `SELECT <id columns> FROM temp.<ids> WHERE (<id columns>) IN (…)`, 500 IDs at a time.
    /// - Complexity: O(result × ids / 500): one scan of the ID table per 500 IDs; meant for
    ///   hand-picked rows.
    public func members(of ids: [ObjectID]) throws -> [ObjectID] {
        try storage.members(of: ids)
    }
}
