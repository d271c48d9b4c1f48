import GRDB

/// Batch edits that touch only the rows of one open result.
///
/// A result is one entity under one predicate, fetched into an ID table; a screen that shows it, or
/// a set of rows picked from it, belongs to it and to nothing else. These calls run the request on
/// the collection's own connection with the membership test in the statement itself, so a row that
/// is not in the ID table (another table's row, a row of an older filter, a row inserted since the
/// fetch) is never counted or changed:
/// `… WHERE t.rowid IN (SELECT key FROM temp.<ids>) AND (<request's condition>)`.
extension BatchFaultingCollection {
    /// Updates the rows of this result that `request` matches, in one transaction.
    ///
    /// Runs `UPDATE main."T" AS t SET … WHERE <key> IN (SELECT key FROM temp.<ids>) AND (<predicate>)`.
    /// - Throws: `.invalidArgument` when `request` names another entity than the result's; nothing
    ///   is written then.
    /// - Complexity: one UPDATE; SQLite builds a transient index over the ID table's keys.
    public func execute(_ request: BatchUpdateRequest, undoable: Bool = false) throws -> BatchResult {
        try storage.context.execute(request, undoable: undoable, within: try storage.membership(of: request.entityName))
    }

    /// How many rows ``execute(_:undoable:)-(BatchUpdateRequest,_)`` would change: the same WHERE
    /// clause, counted with `SELECT count(*)`. Writes nothing.
    public func count(forUpdate request: BatchUpdateRequest) throws -> Int {
        let update = try storage.context.compileUpdate(request, within: try storage.membership(of: request.entityName))
        return try storage.context.countRows(update.entity, whereSQL: update.whereClause, arguments: update.whereArguments)
    }

    /// Deletes the rows of this result that `request` selects (its object IDs, or its fetch
    /// request's predicate), in one transaction.
    ///
    /// Runs `DELETE FROM main."T" AS t WHERE <key> IN (SELECT key FROM temp.<ids>) AND (<key> IN
    /// (SELECT k0 FROM temp.<marked>))` for object IDs.
    /// - Throws: `.invalidArgument` when the request or an object ID belongs to another entity than
    ///   the result's; nothing is written then.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> BatchResult {
        try storage.context.execute(request, undoable: undoable, within: try storage.membership(of: request))
    }

    /// How many rows ``execute(_:undoable:)-(BatchDeleteRequest,_)`` would delete: the same WHERE
    /// clause, counted with `SELECT count(*)`. Writes nothing.
    public func count(forDelete request: BatchDeleteRequest) throws -> Int {
        try storage.context.count(forDelete: request, within: try storage.membership(of: request))
    }

    /// The IDs among `ids` whose rows are in this result's ID table, in the order given; IDs of
    /// other entities are left out.
    ///
    /// Runs `SELECT key FROM temp.<ids> WHERE key IN (?, …)`, 500 IDs at a time.
    /// - Complexity: O(result × ids / 500): one scan of the ID table per 500 IDs; meant for
    ///   hand-picked rows.
    public func members(of ids: [ObjectID]) throws -> [ObjectID] {
        try storage.members(of: ids)
    }
}

extension BatchStorage {
    /// `<key> IN (SELECT key FROM temp.<ids>)` over alias `t`, after checking that `entityName`
    /// is the result's entity.
    func membership(of entityName: String) throws -> String {
        let named = try context.store.entity(named: entityName)
        guard named === entity else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(entity.name), not \(named.name); nothing was changed")
        }
        guard !entity.keyColumns.isEmpty else {
            throw BatchStoreError(.readOnly, "\(entity.name) is a view or has no row key; nothing was changed")
        }
        return "\(sqlTuple(qualified(entity.keyColumns))) IN (SELECT \(idColumns.joined(separator: ", ")) FROM temp.\(quoteIdentifier(tableName)))"
    }

    /// The membership condition for a delete, after checking its entity and every object ID's.
    func membership(of request: BatchDeleteRequest) throws -> String {
        if let ids = request.objectIDs {
            if let stranger = ids.first(where: { $0.entity !== entity }) {
                throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(entity.name), the table of this result; nothing was changed")
            }
            return try membership(of: entity.name)
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        return try membership(of: fetch.entityName)
    }

    func members(of ids: [ObjectID]) throws -> [ObjectID] {
        let mine = ids.filter { $0.entity === entity && $0.isAddressable }
        guard !mine.isEmpty, !entity.keyColumns.isEmpty else { return [] }
        let columns = idColumns
        let tuple = sqlTuple(columns)
        let placeholder = sqlTuple(columns.map { _ in "?" })
        var found = Set<[SQLValue]>()
        try context.withDatabase { db in
            var offset = 0
            while offset < mine.count {
                let chunk = mine[offset..<min(mine.count, offset + 500)]
                offset += chunk.count
                let list = columns.count == 1
                    ? chunk.map { _ in "?" }.joined(separator: ", ")
                    : "VALUES " + chunk.map { _ in placeholder }.joined(separator: ", ")
                let sql = "SELECT \(columns.joined(separator: ", ")) FROM temp.\(quoteIdentifier(tableName)) WHERE \(tuple) IN (\(list))"
                let rows = try Row.fetchAll(db, sql: sql, arguments: chunk.flatMap(\.keyValues).statementArguments)
                for row in rows { found.insert((0..<row.count).map { SQLValue(row[$0] as DatabaseValue) }) }
            }
        }
        return mine.filter { found.contains($0.keyValues) }
    }
}
