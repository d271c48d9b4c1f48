import GRDB

extension BatchFaultingCollection {
    /// The first position after (or, `backwards`, before) `position` whose row matches
    /// `predicate`, searched by SQLite in result order over the ID table; nil when none.
    ///
    /// Runs `SELECT ids.pos FROM temp.<ids> AS ids CROSS JOIN main.<entity> AS t … WHERE <key
    /// match> AND ids.pos > ? AND (<predicate>) ORDER BY ids.pos LIMIT 1`; with several stores, one
    /// such query per store, each stopping at its first match, and the nearest wins.
    /// - Complexity: O(rows between `position` and the match); no rows enter Swift memory.
    /// A result without row keys (a view, a query's result) is searched in the values its ID
    /// table holds, the rows as they were fetched.
    /// - Throws: `.cancelled` when `progress` says `.cancel` (called about every 50 ms while SQLite scans).
    public func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool = false,
                              progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> Int? {
        try storage.firstPosition(matching: predicate, after: position, backwards: backwards, progress: progress)
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

extension BatchFaultingCollection {
    /// The record decoded from the object at `position` (faulting its batch as the subscript does),
    /// or nil when the row was deleted since the fetch.
    public func record<Record: FetchableRecord>(at position: Int, as type: Record.Type) throws -> Record? {
        try object(at: position)?.decode(type)
    }
}
