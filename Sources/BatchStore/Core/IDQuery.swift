import Foundation

/// The SELECT that fills a result's ``IDTable``: the one fetch compiler for a result over one
/// store or several.
///
/// - One store: `SELECT <key columns> FROM main."T" AS t … WHERE … ORDER BY <sort keys>, <key>
///   LIMIT …` (for a view without a row key, its column values instead of the key).
/// - Several stores, each a ``Part`` attached under its own database name:
///   `SELECT s, k FROM (SELECT 0 AS s, t.rowid AS k, <sort keys> AS o0… FROM main."T" AS t WHERE …
///   UNION ALL SELECT 1, … FROM bs_store1."T" AS t WHERE …) ORDER BY o0…, s, k LIMIT …`: ties
///   sort by store, then key.
package struct IDQuery {
    /// The SELECT (the INSERT in front of it is the ID table's).
    package let select: String
    package let arguments: [SQLValue]
    /// A query for an estimate of the rows the fetch scans (for progress), or nil.
    package let estimateSQL: String?
    /// Set when the SELECT is ordered by one integer ID column alone, ascending, with no limit
    /// or offset: a fill may then read it in chunks, each
    /// `SELECT * FROM (<select>) AS s WHERE s.<column> > <the last one read> LIMIT <n>`, and count
    /// its rows as it goes (if the engine finds the column unique: see the fill). `whole`: no
    /// predicate, so the table's estimate of its rows is the result's.
    package var chunking: (column: String, whole: Bool)? = nil

    /// A query given as SQL text (a search over an ID table).
    package init(select: String, arguments: [SQLValue], estimateSQL: String? = nil) {
        self.select = select
        self.arguments = arguments
        self.estimateSQL = estimateSQL
    }
}
