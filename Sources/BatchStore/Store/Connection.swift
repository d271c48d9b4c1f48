import Foundation
import GRDB
import GRDBSQLite

/// One SQLite connection and the temp tables on it: what a context (one store) or a coordinated
/// context (its connection that sees every store attached) runs its SQL on.
///
/// Every temp table BatchStore makes is named and created here (``createTempTable(_:prefix:_:arguments:)``)
/// and dropped here (``dropTempTable(_:)``), so names never collide and a table dropped while the
/// connection is busy (from a `deinit` during a fault) is dropped at the next access instead.
///
/// Not thread-safe: it lives on its owner's thread or actor.
final class Connection {
    let queue: DatabaseQueue
    /// Unique per process: part of every temp table name, so two connections' names never meet in logs.
    let serial: Int
    private var accessDepth = 0
    private var tempTablesToDrop: [String] = []
    private var tempTableCounter = 0
    /// The interruptible call running on this connection, if any: batch writes tell it when they
    /// enter their transaction.
    var interruption: Interruption?

    nonisolated(unsafe) private static var serialCounter = 0
    private static let serialLock = NSLock()

    init(_ queue: DatabaseQueue) {
        self.queue = queue
        Self.serialLock.lock()
        Self.serialCounter += 1
        self.serial = Self.serialCounter
        Self.serialLock.unlock()
    }

    /// Runs `body` on the connection, converting SQLite errors to ``BatchStoreError``.
    /// Not reentrant by design: the body must not call back into the same connection.
    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        precondition(accessDepth == 0, "BatchStore: database access is not reentrant (a progress handler or a fault called back into its context)")
        accessDepth += 1
        defer { accessDepth -= 1 }
        do {
            return try queue.inDatabase { db in
                if !tempTablesToDrop.isEmpty {
                    for name in tempTablesToDrop { try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))") }
                    tempTablesToDrop.removeAll()
                }
                return try body(db)
            }
        } catch let error as DatabaseError {
            throw BatchStoreError.wrap(error)
        }
        // BatchStoreError and errors thrown by callers' own closures (an insert handler) pass through.
    }

    // MARK: Temp tables

    /// A new temp table name for this connection: `<prefix>_<connection>_<n>`.
    func makeTempTableName(_ prefix: String) -> String {
        tempTableCounter += 1
        return "\(prefix)_\(serial)_\(tempTableCounter)"
    }

    /// Creates the temp table `name` with `definition` (`(columns…)`, optionally followed by
    /// `WITHOUT ROWID`, or `AS SELECT …`): runs `CREATE TEMP TABLE "<name>" <definition>`.
    func createTempTable(_ db: Database, named name: String, _ definition: String, arguments: StatementArguments = StatementArguments()) throws {
        try db.execute(sql: "CREATE TEMP TABLE \(quoteIdentifier(name)) \(definition)", arguments: arguments)
    }

    /// Creates a new temp table (see ``createTempTable(_:named:_:arguments:)``) and returns its name.
    func createTempTable(_ db: Database, prefix: String, _ definition: String, arguments: StatementArguments = StatementArguments()) throws -> String {
        let name = makeTempTableName(prefix)
        try createTempTable(db, named: name, definition, arguments: arguments)
        return name
    }

    /// Drops a temp table now, or at the next access when called during one (a `deinit` that runs
    /// inside a fault).
    func dropTempTable(_ name: String) {
        if accessDepth == 0 {
            _ = try? queue.inDatabase { db in try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))") }
        } else {
            tempTablesToDrop.append(name)
        }
    }

    /// Drops a temp table inside an access (the caller holds `db`).
    func dropTempTable(_ db: Database, named name: String) throws {
        try db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(name))")
    }

    /// Names of the connection's temp tables.
    func temporaryTableNames() throws -> [String] {
        try withDatabase { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_temp_master WHERE type = 'table' ORDER BY name") }
    }

    // MARK: Facts

    /// SQLite's `PRAGMA data_version`: it changes when another connection commits to the file.
    func dataVersion() throws -> Int {
        try withDatabase { db in try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }

    /// Calls `handler` with the SQL of every statement the connection runs, or stops when nil.
    func traceSQL(_ handler: ((String) -> Void)?) throws {
        try withDatabase { db in
            if let handler {
                db.trace(options: .statement) { event in
                    if case .statement(let s) = event { handler(s.sql) }
                }
            } else {
                db.trace(options: .statement, nil)
            }
        }
    }
}

extension Database {
    /// Steps `stmt` (prepared on this connection from `sql`) once with the C API: true for a row,
    /// false at the end; SQLite's error as a `DatabaseError` naming the statement.
    @inline(__always)
    func stepRow(_ stmt: OpaquePointer, sql: String) throws -> Bool {
        let code = sqlite3_step(stmt)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqliteConnection)), sql: sql)
    }
}
