import Foundation

/// The statements a batched result runs, as SQLite is given them, with the values bound to them:
/// the one that fills its temp table and the one that reads a batch of it back. For a
/// ``BatchFaultingCollection`` the ID fetch and the batch fault; for ``ValueFrequencies`` the
/// GROUP BY and the read of a page of values.
public struct ResultStatements: Sendable, Equatable {
    /// The ID fetch: `INSERT INTO temp."bs_ids_…" (key) SELECT t.rowid FROM main."T" AS t WHERE …
    /// ORDER BY …` (with several stores, one `UNION ALL` per store); for frequencies, `INSERT INTO
    /// temp."bs_freq_…" (value, count) SELECT value, count(*) FROM (…) GROUP BY value ORDER BY …`.
    public var idFetch: String
    /// The values bound to ``idFetch``'s parameters, in order (the predicate's constants).
    public var idFetchArguments: [SQLValue]
    /// The batch fault: `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS
    /// JOIN main."T" AS t ON … WHERE ids.pos BETWEEN ? AND ?`, or for a batch that is one range of
    /// a table's rowids, `SELECT t.rowid, t.<columns> FROM main."T" AS t WHERE t.rowid BETWEEN ? AND ?`.
    public var batchFault: String
    /// The values bound to ``batchFault`` for the batch asked for: its first and last 1-based
    /// positions in the ID table (for a range read, its first and last rowid).
    public var batchFaultArguments: [SQLValue]

    package init(idFetch: String, idFetchArguments: [SQLValue], batchFault: String, batchFaultArguments: [SQLValue]) {
        self.idFetch = idFetch
        self.idFetchArguments = idFetchArguments
        self.batchFault = batchFault
        self.batchFaultArguments = batchFaultArguments
    }
}

extension BatchFaultingCollection {
    /// The SQL this result runs: the ID fetch that filled its ID table and the fault of the batch
    /// holding `position`, each with its bound values, exactly as they are prepared (the ID fetch
    /// is compiled again from ``request``, which the result keeps). A batch of a result in rowid
    /// order that is one unbroken range of keys is read as that range of the table (see
    /// `StoreResultSource`): its fault is that range read, bound to its end keys.
    /// - Complexity: compiling the request's predicate and sort, and one lookup of the batch's end
    ///   keys in the ID table; no row is read.
    /// - Throws: `.invalidQuery` if the request no longer compiles against the schema.
    public func statements(faultingBatchAt position: Int = 0) throws -> ResultStatements {
        let query = try storage.source.idQuery(storage.request)
        let size = Swift.max(1, storage.batchSize)
        let start = Swift.max(0, position) / size * size
        let end = Swift.max(start + 1, Swift.min(start + size, storage.count))
        let fault = try storage.source.faultStatement(start..<end)
        return ResultStatements(idFetch: storage.ids.fillSQL(query), idFetchArguments: query.arguments,
                                batchFault: fault.sql, batchFaultArguments: fault.arguments)
    }
}
