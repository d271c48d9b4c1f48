import Foundation

/// SQLite's ID queries: one store or several (each a ``Part``), built by ``QueryBuilder``.
extension IDQuery {
    /// One store's share of the query.
    struct Part {
        var entity: Entity
        var schema: Schema
        /// The name the store's file is known by on the connection: `main` or an attached name.
        var databaseName: String
        /// The value of the ID table's `store` column for this part; nil for a one-store result
        /// (no `store` column).
        var storeIndex: Int?
    }

    /// A search in result order over an ID table: the first `pos` after (or, `backwards`, before)
    /// `position` whose row matches `predicate`, in one store (`part`), joined on `match` (the
    /// ID table aliased `ids`, the row `t`):
    /// `SELECT ids.pos FROM <ids> AS ids CROSS JOIN <table> AS t WHERE <match> AND ids.pos > ?
    /// AND (<predicate>) ORDER BY ids.pos LIMIT 1`.
    static func search(_ predicate: FetchPredicate, in ids: String, part: Part, match: (QueryBuilder) -> String,
                       after position: Int, backwards: Bool) throws -> IDQuery {
        let builder = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
        let condition = try builder.compile(predicate.node)
        let sql = "SELECT ids.pos FROM \(ids) AS ids CROSS JOIN \(builder.fromClause) WHERE \(match(builder)) AND ids.pos \(backwards ? "<" : ">") ? AND (\(condition)) ORDER BY ids.pos \(backwards ? "DESC" : "ASC") LIMIT 1"
        return IDQuery(select: sql, arguments: [SQLValue.integer(Int64(position + 1))] + builder.arguments)
    }

    /// A search in result order over the ID table of a result without a row key (a view, a
    /// query), which holds every row's values (`c0, c1, …`): the rows are read from it, renamed as
    /// the entity's columns, `SELECT t.bs_pos FROM (SELECT pos AS bs_pos, c0 AS "genre", … FROM
    /// <ids>) AS t WHERE t.bs_pos > ? AND (<predicate>) ORDER BY t.bs_pos LIMIT 1` (`bs_pos_2`… where
    /// a column is named so): at most one walk of the ID table, and the rows as they were fetched.
    static func searchOfValues(_ predicate: FetchPredicate, in ids: String, part: Part, idColumns: [String],
                               after position: Int, backwards: Bool) throws -> IDQuery {
        // The position's name, unlike every column's (`bs_pos`, else `bs_pos_2`…).
        let taken = Set(part.entity.attributes.map { $0.name.lowercased() })
        var pos = "bs_pos", n = 1
        while taken.contains(pos) { n += 1; pos = "bs_pos_\(n)" }
        let renamed = zip(idColumns, part.entity.attributes).map { "\($0) AS \(quoteIdentifier($1.name))" }
        let source = "(SELECT pos AS \(pos), \(renamed.joined(separator: ", ")) FROM \(ids))"
        let builder = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName, source: source)
        let condition = try builder.compile(predicate.node)
        let sql = "SELECT t.\(pos) FROM \(builder.fromClause) WHERE t.\(pos) \(backwards ? "<" : ">") ? AND (\(condition)) ORDER BY t.\(pos) \(backwards ? "DESC" : "ASC") LIMIT 1"
        return IDQuery(select: sql, arguments: [SQLValue.integer(Int64(position + 1))] + builder.arguments)
    }

    /// A search in result order over a one-store ID table that costs at most about one scan of
    /// the table, however far the match (or with none): first the rows of the next `window`
    /// positions, joined one by one as ``search(_:in:part:match:after:backwards:)`` does (a near
    /// match is found at once); past them, the keys of every matching row, read by one scan of the
    /// table, materialised once, looked up from the ID table in position order (and no walk of the
    /// ID table when nothing matches): `WITH bs_matches AS MATERIALIZED (SELECT <key> FROM <table>
    /// AS t WHERE <predicate>) SELECT pos FROM (<near> LIMIT 1) UNION ALL SELECT pos FROM (SELECT
    /// ids.pos FROM <ids> AS ids WHERE (SELECT 1 FROM bs_matches LIMIT 1) AND ids.pos > ? AND
    /// (<id columns>) IN (SELECT * FROM bs_matches) ORDER BY ids.pos LIMIT 1) LIMIT 1` (the second
    /// arm runs only when the first finds nothing).
    static func searchByScan(_ predicate: FetchPredicate, in ids: String, part: Part, idColumns: [String], match: String,
                             after position: Int, backwards: Bool, window: Int) throws -> IDQuery {
        let near = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
        let nearCondition = try near.compile(predicate.node)
        let far = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
        let farCondition = try far.compile(predicate.node)
        // Positions are 1-based in the ID table; `position` is 0-based.
        let from = Int64(position + 1)
        let edge = backwards ? max(0, from - Int64(window)) : from + Int64(window)
        let (beyond, within, direction) = backwards ? ("<", ">=", "DESC") : (">", "<=", "ASC")
        let nearSQL = "SELECT ids.pos AS pos FROM \(ids) AS ids CROSS JOIN \(near.fromClause) WHERE \(match) AND ids.pos \(beyond) ? AND ids.pos \(within) ? AND (\(nearCondition)) ORDER BY ids.pos \(direction) LIMIT 1"
        // `+`: the ID table is walked in position order and each key looked up in the
        // materialised matches, never the other way round (SQLite would build an index of the
        // whole ID table's keys to drive the lookup from the matches).
        // The matches are materialised once (first used by the far arm, so never when the near
        // one finds); when there are none, the constant test skips the walk of the ID table.
        let keys = sqlTuple(idColumns.map { "+ids.\($0)" })
        let matches = "WITH bs_matches AS MATERIALIZED (SELECT \(far.keyColumnsSQL.joined(separator: ", ")) FROM \(far.fromClause) WHERE \(farCondition)) "
        let farSQL = "SELECT ids.pos AS pos FROM \(ids) AS ids WHERE (SELECT 1 FROM bs_matches LIMIT 1) AND ids.pos \(beyond) ? AND \(keys) IN (SELECT * FROM bs_matches) ORDER BY ids.pos \(direction) LIMIT 1"
        return IDQuery(select: "\(matches)SELECT pos FROM (\(nearSQL)) UNION ALL SELECT pos FROM (\(farSQL)) LIMIT 1",
                       arguments: far.arguments + [.integer(from), .integer(edge)] + near.arguments + [.integer(edge)])
    }

    /// The values of `column` in the rows of `part` that `predicate` matches now:
    /// `SELECT t."<column>" AS value FROM <table> AS t [joins] WHERE <predicate>` (the fetch's own
    /// WHERE, so the table's indexes serve it).
    static func values(of column: String, matching predicate: FetchPredicate?, part: Part) throws -> IDQuery {
        let builder = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
        let condition = try predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
        return IDQuery(select: "SELECT t.\(quoteIdentifier(column)) AS value FROM \(builder.fromClause)\(condition)", arguments: builder.arguments)
    }

    /// The rule of every result across stores (batched or streamed, sorted or not): the table
    /// needs one row key, which the ID table's `key` column holds.
    /// - Throws: `.invalidQuery` naming the entity.
    static func requireOneRowKey(_ entity: Entity, entityName: String) throws {
        guard entity.keyColumns.count == 1 else {
            throw BatchStoreError(.invalidQuery, "\(entityName): results across stores need a table with one row key (a rowid or a one-column primary key)")
        }
    }

    /// The ID table columns the query fills, for `parts`.
    static func columns(for parts: [Part]) -> [String] {
        guard parts.count == 1, parts[0].storeIndex == nil else { return ["store", "key"] }
        let entity = parts[0].entity
        let keys = entity.keyColumns
        if keys.isEmpty { return (0..<entity.attributes.count).map { "c\($0)" } }
        return keys.count == 1 ? ["key"] : (0..<keys.count).map { "k\($0)" }
    }

    init(_ request: FetchRequest, parts: [Part]) throws {
        try request.checkBounds(batchSize: true)
        precondition(!parts.isEmpty, "an ID query needs at least one store")
        var limit = ""
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            limit = " LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset)"
        }
        if parts.count == 1, parts[0].storeIndex == nil {
            // One store: the fetch compiler's own query, so the sort runs on the table itself and
            // an index on the sort key serves it.
            let part = parts[0]
            let compiled = try CompiledFetch(request: request, entity: part.entity, schema: part.schema, databaseName: part.databaseName)
            let keys = compiled.builder.keyColumnsSQL
            let select = keys.isEmpty
                ? part.entity.attributes.map { "t.\(quoteIdentifier($0.name))" }.joined(separator: ", ")
                : keys.joined(separator: ", ")
            self.select = "SELECT \(select.isEmpty ? "NULL" : select)\(compiled.fromWhereOrder)\(compiled.limitClause)"
            self.arguments = compiled.allArguments
            if part.entity.isKeyedByRowid, let rowid = part.entity.rowidName {
                self.estimateSQL = "SELECT max(\(rowid)) FROM \(part.databaseName).\(quoteIdentifier(part.entity.name))"
            } else {
                self.estimateSQL = nil
            }
            return
        }
        var selects: [String] = []
        var arguments: [SQLValue] = []
        for part in parts {
            try Self.requireOneRowKey(part.entity, entityName: request.entityName)
            let builder = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
            // The SELECT list comes before WHERE in the text, so its arguments are bound first.
            let sortColumns = try request.effectiveSortDescriptors.enumerated().map { "\(try builder.column(for: $1.keyPath)) AS o\($0)" }
            let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
            selects.append("SELECT \(part.storeIndex ?? 0) AS s, \(builder.keyColumnsSQL[0]) AS k\(sortColumns.map { ", " + $0 }.joined()) FROM \(builder.fromClause)\(condition)")
            arguments += builder.arguments
        }
        let order = request.effectiveSortDescriptors.enumerated().map { "o\($0) \($1.ascending ? "ASC" : "DESC")" } + ["s \(request.keyDirection)", "k \(request.keyDirection)"]
        self.select = "SELECT s, k FROM (\(selects.joined(separator: " UNION ALL "))) ORDER BY \(order.joined(separator: ", "))\(limit)"
        self.arguments = arguments
        self.estimateSQL = nil
    }
}
