import Foundation
import GRDB
import GRDBSQLite

/// Runs one statement with `sqlite3_progress_handler` installed, reporting full-scan steps to a
/// Swift handler at most every 50 ms and interrupting the statement when the handler says cancel.
enum ProgressReporter {
    final class Box {
        let statement: OpaquePointer?
        let estimate: Int?
        let handler: (IDFetchProgress) -> IDFetchDecision
        let started = DispatchTime.now().uptimeNanoseconds
        var lastReport: UInt64 = 0
        var cancelled = false

        init(statement: OpaquePointer?, estimate: Int?, handler: @escaping (IDFetchProgress) -> IDFetchDecision) {
            self.statement = statement
            self.estimate = estimate
            self.handler = handler
        }

        func tick() -> Int32 {
            let now = DispatchTime.now().uptimeNanoseconds
            if now - lastReport < 50_000_000 { return 0 }
            lastReport = now
            let scanned = ProgressReporter.rowsScanned(statement)
            let p = IDFetchProgress(rowsScanned: scanned, estimatedRows: estimate, elapsed: Double(now - started) / 1e9)
            if handler(p) == .cancel { cancelled = true; return 1 }
            return 0
        }
    }

    /// Rows a full scan has visited: SQLite counts steps forward, which is one less than the rows
    /// once the scan has started.
    static func rowsScanned(_ statement: OpaquePointer?) -> Int {
        let steps = Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0))
        return steps > 0 ? steps + 1 : 0
    }

    /// Runs `body` (which runs `statement`) with `handler` told of progress, or as it is without one.
    static func run(db: Database, statement: Statement, estimate: Int?, handler: ((IDFetchProgress) -> IDFetchDecision)?, body: () throws -> Void) throws {
        guard let handler else { return try body() }
        try run(db: db, statement: statement, estimate: estimate, handler: handler, body: body)
    }

    static func run(db: Database, statement: Statement, estimate: Int?, handler: @escaping (IDFetchProgress) -> IDFetchDecision, body: () throws -> Void) throws {
        let box = Box(statement: statement.sqliteStatement, estimate: estimate, handler: handler)
        let pointer = Unmanaged.passRetained(box).toOpaque()
        sqlite3_progress_handler(db.sqliteConnection, 4000, { ctx in
            guard let ctx else { return 0 }
            return Unmanaged<Box>.fromOpaque(ctx).takeUnretainedValue().tick()
        }, pointer)
        defer {
            sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil)
            Unmanaged<Box>.fromOpaque(pointer).release()
        }
        do {
            try body()
        } catch {
            if box.cancelled { throw BatchStoreError(.cancelled, "the fetch was cancelled") }
            throw error
        }
        let total = rowsScanned(statement.sqliteStatement)
        _ = handler(IDFetchProgress(rowsScanned: total, estimatedRows: total, elapsed: Double(DispatchTime.now().uptimeNanoseconds - box.started) / 1e9))
    }
}
