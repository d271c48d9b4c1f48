import GRDB

extension BatchFaultingCollection {
    /// The first position after (or, `backwards`, before) `position` whose row matches
    /// `predicate`, searched by SQLite in result order over the ID table; nil when none.
    ///
    /// Runs `SELECT ids.pos FROM temp.<ids> AS ids CROSS JOIN main.<entity> AS t … WHERE <key
    /// match> AND ids.pos > ? AND (<predicate>) ORDER BY ids.pos LIMIT 1`.
    /// - Complexity: O(rows between `position` and the match); no rows enter Swift memory.
    /// - Throws: `.invalidQuery` for a result without row keys (a view): its rows cannot be joined;
    ///   `.cancelled` when `progress` says `.cancel` (called about every 50 ms while SQLite scans).
    public func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool = false,
                              progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> Int? {
        try storage.firstPosition(matching: predicate, after: position, backwards: backwards, progress: progress)
    }
}

extension BatchStorage {
    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        let keys = entity.keyColumns
        guard !keys.isEmpty else { throw BatchStoreError(.invalidQuery, "\(entity.name) has no row key, so it cannot be searched in place") }
        let builder = QueryBuilder(entity: entity, schema: context.store.schema)
        let condition = try builder.compile(predicate.node)
        let on = keys.count == 1
            ? "t.\(quoteIdentifier(keys[0])) = ids.key"
            : keys.enumerated().map { "t.\(quoteIdentifier($1)) = ids.k\($0)" }.joined(separator: " AND ")
        let sql = "SELECT ids.pos FROM temp.\(quoteIdentifier(tableName)) AS ids CROSS JOIN \(builder.fromClause) WHERE \(on) AND ids.pos \(backwards ? "<" : ">") ? AND (\(condition)) ORDER BY ids.pos \(backwards ? "DESC" : "ASC") LIMIT 1"
        let arguments = [SQLValue.integer(Int64(position + 1))] + builder.arguments
        return try context.withDatabase { db in
            let statement = try db.makeStatement(sql: sql)
            guard let progress else { return try Int.fetchOne(statement, arguments: arguments.statementArguments).map { $0 - 1 } }
            var found: Int?
            try ProgressReporter.run(db: db, statement: statement, estimate: count, handler: progress) {
                found = try Int.fetchOne(statement, arguments: arguments.statementArguments).map { $0 - 1 }
            }
            return found
        }
    }
}

extension FetchPredicate {
    /// A predicate matching exactly the rows of `ids` (all of one entity, addressable):
    /// `rowid IN {…}` for rowid tables, `(k1 == … AND k2 == …) OR …` for composite keys.
    /// - Complexity: O(ids); meant for hand-picked sets (marked rows), not millions.
    public static func matching(_ ids: [ObjectID]) throws -> FetchPredicate {
        guard let entity = ids.first?.entity else { return .none }
        let keys = entity.keyColumns
        guard !keys.isEmpty, ids.allSatisfy({ $0.entity === entity && $0.isAddressable }) else {
            throw BatchStoreError(.invalidArgument, "a predicate for object IDs takes stored rows of one entity")
        }
        if keys.count == 1 {
            return try FetchPredicate(format: "%K IN %@", arguments: [.key(keys[0]), .list(ids.map { $0.keyValues[0] })])
        }
        var format: [String] = []
        var arguments: [PredicateArgument] = []
        for id in ids {
            format.append("(" + keys.map { _ in "%K == %@" }.joined(separator: " AND ") + ")")
            for (k, v) in zip(keys, id.keyValues) { arguments += [.key(k), .value(v)] }
        }
        return try FetchPredicate(format: format.joined(separator: " OR "), arguments: arguments)
    }

}
