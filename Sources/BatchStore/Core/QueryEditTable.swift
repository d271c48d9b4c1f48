import Foundation

/// A table whose rows a query's result names by key, so that edits of the result's rows can act
/// on that table's rows (``Entity/editTables``).
///
/// A query's rows name a table's rows when its result columns hold the table's whole key, read
/// straight from the table (SQLite's column origin), and the query reads the table once, reads no
/// view, and neither groups, aggregates, removes duplicates, windows nor combines selects
/// (`UNION`, `INTERSECT`, `EXCEPT`): then the key in a row is the key of the one row of the
/// table it was read from. A delete of marked rows deletes the table's rows of those keys; an
/// update sets the table's columns that the query shows under their result names.
public struct QueryEditTable: Sendable, Equatable {
    /// The table, as the schema names it.
    public let table: String
    /// The result columns that hold the table's key, in key order.
    public let keyAttributes: [String]
    /// Each result column read straight from the table: its result name → the table's column.
    public let columns: [String: String]

    package init(table: String, keyAttributes: [String], columns: [String: String]) {
        self.table = table
        self.keyAttributes = keyAttributes
        self.columns = columns
    }

    /// The table's column that the result column named exactly `attribute` shows, for an
    /// update's assignment; nil when that result column is not read straight from the table.
    /// (Resolve a name as typed with ``Entity/attribute(named:)`` first: a result may have columns
    /// whose names differ only in case, from different tables.)
    public func column(for attribute: String) -> String? { columns[attribute] }
}

/// The words of a query's text that decide whether its rows can name a table's rows: what it
/// does that gives rows no single source row, and how often it names each table.
package struct QueryTextShape {
    /// The first construct found that makes rows not name one source row (`GROUP BY`, `DISTINCT`,
    /// `UNION`, an aggregate's name …), in words; nil when there is none.
    package private(set) var combining: String?
    /// How often each name (lowercased) appears as a name that is not followed by `.`: a table
    /// named in FROM or JOIN, or a column that happens to share a table's name.
    package private(set) var references: [String: Int] = [:]
    /// A common table expression the query names more than once after defining it (so that the
    /// tables it reads are read more than once under one name), lowercased; nil when there is none.
    package private(set) var reusedCommonTable: String?

    private static let combiningWords: [String: String] = [
        "union": "UNION", "intersect": "INTERSECT", "except": "EXCEPT", "group": "GROUP BY", "distinct": "DISTINCT",
        "over": "a window function", "window": "a window function", "values": "VALUES", "having": "HAVING",
    ]
    private static let aggregates: Set<String> = [
        "count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "json_group_array",
        "json_group_object", "jsonb_group_array", "jsonb_group_object", "median", "percentile",
    ]

    /// Reads `sql` word by word, skipping strings, comments and quoted names' contents (a quoted
    /// name counts as a name, never as a keyword).
    package init(_ sql: String) {
        let text = SQLText(sql)
        let tokens: [(text: String, quoted: Bool)] = text.lexemes.compactMap { lexeme in
            switch lexeme.kind {
            case .comment: nil
            case .string: ("'", false)
            case .quotedName: (text.name(of: lexeme), true)
            case .word, .parameter, .symbol: (text.text(of: lexeme), false)
            }
        }
        // Common table expressions: `name AS (`, `name AS [NOT] MATERIALIZED (`, `name (a, b) AS (`.
        var commonTables: [String] = []
        for (n, token) in tokens.enumerated() where token.quoted || token.text.first.map({ $0.isLetter || $0 == "_" }) == true {
            var after = n + 1
            if after < tokens.count, tokens[after].text == "(", !tokens[after].quoted {
                var depth = 0
                while after < tokens.count {
                    if !tokens[after].quoted { if tokens[after].text == "(" { depth += 1 } else if tokens[after].text == ")" { depth -= 1 } }
                    after += 1
                    if depth == 0 { break }
                }
            }
            guard after + 1 < tokens.count, !tokens[after].quoted, tokens[after].text.lowercased() == "as" else { continue }
            let next = tokens[after + 1]
            if !next.quoted, next.text == "(" || ["materialized", "not"].contains(next.text.lowercased()) { commonTables.append(token.text.lowercased()) }
        }
        for (n, token) in tokens.enumerated() {
            let lower = token.text.lowercased()
            let next = n + 1 < tokens.count ? tokens[n + 1] : nil
            if combining == nil {
                if !token.quoted, let what = Self.combiningWords[lower] {
                    combining = what
                } else if Self.aggregates.contains(lower), next?.text == "(", next?.quoted == false {
                    // Quoted too: SQLite calls `"count"(*)` as count(*).
                    combining = "the aggregate \(lower)()"
                }
            }
            let isName = token.quoted || token.text.first.map { $0.isLetter || $0 == "_" } == true
            if isName, next?.text != "." { references[lower, default: 0] += 1 }
        }
        // Its definition, and one use.
        reusedCommonTable = commonTables.first { references[$0, default: 0] > 2 }
    }
}
