import Foundation

extension ManagedObjectContext {
    /// Runs `body` (batch edits, counts and undo through this context) so that it can be cancelled
    /// part way: `progress` is called about every 50 ms while SQLite works, and `.cancel` stops the
    /// running statement. An edit stopped in its transaction is rolled back whole: the file, the
    /// undo stack and the connection's temp tables are as they were, and the call throws
    /// `.cancelled`. An edit that committed before the cancel came stands, and the call returns.
    ///
    /// Installs `sqlite3_progress_handler` on the context's connection for the call; `progress`
    /// must not use this context. Calls do not nest, and an ID fetch with its own progress handler
    /// does not belong inside.
    /// - Complexity: a clock read every 4,000 SQLite instructions (no measurable cost on a
    ///   2.5M-row delete or update; see the bench's `update-ratio`).
    public func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T {
        try Interruption { progress($0) == .cancel }.run(on: [connection], body)
    }
}
