import Foundation

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
