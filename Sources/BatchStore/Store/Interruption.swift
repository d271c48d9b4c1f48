import Foundation
import GRDB
import GRDBSQLite

/// The progress handler of an interruptible call, installed as `sqlite3_progress_handler` on
/// every connection the call writes through (one store's, or each store's and the coordinating
/// one). It asks the caller's handler at most every 50 ms (at once when the phase changes), and
/// interrupts the running statement the first time the handler says cancel; SQLite then fails
/// that statement with `SQLITE_INTERRUPT` and the transaction around it rolls back.
///
/// It interrupts at most once, and never after a write transaction of the call has committed: a
/// cancel stops the call only while nothing it did is in the file, so a cancelled call changed
/// nothing, and a call that committed runs to its end (a multi-store edit's later stores, or its
/// putting the earlier stores back after a failure, are never cut short).
final class Interruption {
    private let handler: (EditProgress) -> Bool
    private let started = DispatchTime.now().uptimeNanoseconds
    private var lastReport: UInt64?
    /// Set by the edit as it enters and leaves its write transaction.
    var phase: EditProgress.Phase = .reading {
        didSet { if phase != oldValue { lastReport = nil } }
    }
    /// True once the handler said cancel and a statement was interrupted.
    private(set) var interrupted = false
    /// True once a write transaction of the call committed: from then on nothing is interrupted.
    private(set) var committed = false

    /// `handler` answers true to cancel.
    init(_ handler: @escaping (EditProgress) -> Bool) {
        self.handler = handler
    }

    /// Called by SQLite every 4,000 virtual-machine instructions; non-zero interrupts.
    /// - Complexity: O(1); the clock read is its whole cost when it does not report.
    func tick() -> Int32 {
        guard !interrupted else { return 0 }
        let now = DispatchTime.now().uptimeNanoseconds
        if let lastReport, now - lastReport < 50_000_000 { return 0 }
        lastReport = now
        // After a commit the handler still hears of progress, but its cancel changes nothing.
        guard handler(EditProgress(phase: phase, elapsed: Double(now - started) / 1e9)), !committed else { return 0 }
        interrupted = true
        return 1
    }

    /// Runs `body` with this interruption installed on `connections`, and takes it off again
    /// (also when `body` throws). When the handler interrupted a statement, the call throws
    /// `.cancelled` whatever error the statement gave.
    func run<T>(on connections: [Connection], _ body: () throws -> T) throws -> T {
        let pointer = Unmanaged.passRetained(self).toOpaque()
        defer { Unmanaged<Interruption>.fromOpaque(pointer).release() }
        var installed: [Connection] = []
        defer {
            for connection in installed {
                connection.interruption = nil
                _ = try? connection.withDatabase { db in sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil) }
            }
        }
        for connection in connections {
            precondition(connection.interruption == nil, "BatchStore: interruptible calls do not nest")
            try connection.withDatabase { db in
                sqlite3_progress_handler(db.sqliteConnection, 4000, { context in
                    guard let context else { return 0 }
                    return Unmanaged<Interruption>.fromOpaque(context).takeUnretainedValue().tick()
                }, pointer)
            }
            connection.interruption = self
            installed.append(connection)
        }
        do {
            return try body()
        } catch {
            if interrupted { throw BatchStoreError(.cancelled, "cancelled: nothing was changed") }
            throw error
        }
    }

    /// A write transaction of the call committed: it stands, and the call runs to its end.
    func didCommit() { committed = true }
}
