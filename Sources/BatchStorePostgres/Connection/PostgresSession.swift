import BatchStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// One connection to a PostgreSQL server (one server session), through postgres-nio, usable from
/// synchronous code and from async code.
///
/// Every byte moves on a SwiftNIO event loop thread (postgres-nio's default group), never on
/// Swift's cooperative thread pool. A synchronous call blocks its own thread until the event loop
/// has the answer, so synchronous callers cannot starve the work they wait for, however many block
/// at once and on whatever thread, a cooperative one included; async code uses the `async`
/// overloads, which suspend instead. The one thing that would deadlock, a synchronous call made on
/// the connection's own event loop, is a precondition failure.
///
/// The session speaks UTF-8, writes dates in ISO 8601 and uses UTC (`client_encoding`, `DateStyle`
/// and `TimeZone` are set at startup), so values read the same whatever the server's settings.
/// Queries on one session run one after another, in the order they were sent.
public final class PostgresSession: Sendable {
    /// The URL the session was opened with (its description hides the password).
    public let url: PostgresStoreURL
    /// Where the password sent came from.
    public let passwordSource: PostgresPasswordSource
    let connection: PostgresConnection
    let logger: Logger
    /// Statements sent (see ``statementsSent``).
    private let sent = Atomic<Int>(0)

    fileprivate init(url: PostgresStoreURL, passwordSource: PostgresPasswordSource, connection: PostgresConnection, logger: Logger) {
        self.url = url
        self.passwordSource = passwordSource
        self.connection = connection
        self.logger = logger
    }

    deinit {
        if !connection.isClosed { connection.close().whenComplete { _ in } }
    }

    // MARK: - Opening

    /// Connects and authenticates, blocking the calling thread until the server is ready for
    /// queries. The password is the URL's, else `PGPASSWORD`, else `~/.pgpass`'s (libpq's order).
    /// - Throws: `BatchStoreError`: `.serverUnavailable` (nothing listens there, refused, timed
    ///   out), `.authenticationFailed`, `.noSuchDatabase`, `.permissionDenied`, each one line.
    public static func open(_ url: PostgresStoreURL, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresSession {
        try open(url, environment: environment, on: nil)
    }

    /// ``open(_:environment:)`` on `eventLoop` (nil: postgres-nio's default group), for a session
    /// that may block its own loop (`PostgresSweepStream` does, to hold the server back).
    static func open(_ url: PostgresStoreURL, environment: [String: String], on eventLoop: (any EventLoop)?) throws -> PostgresSession {
        let (future, password) = try start(url, environment: environment, on: eventLoop)
        let session: PostgresSession
        do {
            session = try waitOffLoop(future).makeSession(url, password.source)
        } catch {
            throw PostgresErrors.connecting(error, url: url, passwordSource: password.source, note: password.note)
        }
        try session.checkClientConnection()
        return session
    }

    /// Asks the server (PostgreSQL 14 and later) to check every 2 s, while a statement of this
    /// session runs, that the client is still there: a statement whose client was killed ends in
    /// seconds instead of running on, holding its locks (a killed delete ran on for 76 s). A
    /// no-op on older servers (the setting exists from 14 on, and is only set there).
    func checkClientConnection() throws {
        _ = try query("SELECT set_config('client_connection_check_interval', '2000', false) WHERE current_setting('server_version_num')::int >= 140000")
    }

    /// Connects and authenticates, suspending until the server is ready for queries.
    public static func open(_ url: PostgresStoreURL, environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> PostgresSession {
        let (future, password) = try start(url, environment: environment)
        do {
            let session = try await future.get().makeSession(url, password.source)
            _ = try await session.query("SELECT set_config('client_connection_check_interval', '2000', false) WHERE current_setting('server_version_num')::int >= 140000")
            return session
        } catch let error as BatchStoreError {
            throw error
        } catch {
            throw PostgresErrors.connecting(error, url: url, passwordSource: password.source, note: password.note)
        }
    }

    private static func start(_ url: PostgresStoreURL, environment: [String: String], on eventLoop: (any EventLoop)? = nil)
        throws -> (EventLoopFuture<PostgresConnection>, (source: PostgresPasswordSource, note: String?)) {
        let password = url.resolvePassword(environment: environment)
        var configuration: PostgresConnection.Configuration
        switch url.endpoint {
        case .unixSocket:
            configuration = .init(unixSocketPath: url.endpoint.socketPath ?? "", username: url.user,
                                  password: password.password?.text, database: url.database)
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: url.user, password: password.password?.text,
                                  database: url.database, tls: try tls(for: url.sslMode, rootCertificate: url.sslRootCertificate))
        }
        if let seconds = url.connectTimeout { configuration.options.connectTimeout = .seconds(Int64(seconds)) }
        // standard_conforming_strings: the pg_temp functions' literals (\uXXXX escapes) and every
        // quoted string built here read backslashes as PostgreSQL's default does, whatever the
        // database or role sets.
        var parameters = [("client_encoding", "UTF8"), ("DateStyle", "ISO, YMD"), ("TimeZone", "UTC"), ("standard_conforming_strings", "on"),
                          // Floats written as text read back as the same value (a frequency sheet's
                          // literals are its values' text): shortest-exact from PostgreSQL 12, all
                          // 17 digits before; a database or role may have set 0 or less.
                          ("extra_float_digits", "3")]
        parameters.append(("application_name", url.applicationName ?? "faultline"))
        configuration.options.additionalStartupParameters = parameters
        let logger = Logger(label: "faultline.postgres") { _ in SwiftLogNoOpLogHandler() }
        let future = PostgresConnection.connect(on: eventLoop ?? PostgresConnection.defaultEventLoopGroup.next(), configuration: configuration,
                                                id: nextID.add(), logger: logger)
        return (future, (password.source, password.note))
    }

    /// postgres-nio's TLS setting for libpq's `sslmode` (TCP only); the verifying modes trust
    /// `rootCertificate` (a PEM file) when given, else the system's certificates.
    static func tls(for mode: PostgresStoreURL.SSLMode, rootCertificate: String? = nil) throws -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case .disable: return .disable
        case .allow, .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        if let rootCertificate, mode == .verifyCA || mode == .verifyFull {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw BatchStoreError(.invalidArgument, "cannot read sslrootcert \(rootCertificate.debugDescription)")
            }
            tls.trustRoots = .file(rootCertificate)
        }
        do {
            let context = try NIOSSLContext(configuration: tls)
            return mode == .allow || mode == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw BatchStoreError(.invalidArgument, "cannot set up TLS for sslmode=\(mode.rawValue): \(error)")
        }
    }

    private static let nextID = IDCounter()

    // MARK: - Queries

    /// Runs one statement with `$1`, `$2`, … bound to `arguments` and returns its rows, blocking
    /// until the server has answered.
    ///
    /// Each cell becomes an `SQLValue`: `smallint`, `integer`, `bigint` as integers, `real` and
    /// `double precision` as reals, `boolean` as 1 or 0, `bytea` as a blob, text types, `uuid` and
    /// `json(b)` as text. Select other types as `::text` (``PostgresValueKind/selectExpression(_:typeOID:)``).
    /// - Complexity: every row is held in memory: for catalog queries and batches, not for sweeps.
    /// - Throws: `BatchStoreError`, one line (`.permissionDenied`, `.postgres(SQLSTATE)`, …).
    public func query(_ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try rows(of: sendCollecting(sql, arguments))
    }

    /// Sends one statement whose rows are decoded as they arrive (postgres-nio's row callback: no
    /// row objects are kept, a third of the client's time in a sweep before), to be waited for
    /// with ``rows(of:)``, or dropped. Statements on one session run in the order sent, so one
    /// can be sent before the rows of the one before are read (a sweep's next batch).
    ///
    /// `records`: the statement sends its rows as one cell, a binary `record[]`
    /// (``PostgresRecordArray``); ``rows(of:)`` gives them as rows, or throws
    /// ``PostgresRecordArray/Unreadable`` when it cannot read that cell.
    func sendCollecting(_ sql: String, _ arguments: [SQLValue], records: Bool = false) -> PendingRows {
        let serial = sent.add(1, ordering: .relaxed).newValue
        let sink = RowSink()
        if connection.isClosed {
            return PendingRows(future: connection.eventLoop.makeFailedFuture(BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed")),
                               sink: sink, serial: serial, records: records)
        }
        return PendingRows(future: Self.send(sql, arguments, records: records, on: connection, logger: logger, into: sink), sink: sink, serial: serial, records: records)
    }

    /// Sends `sql` unprepared; its rows are decoded into `sink` as they come.
    private static func send(_ sql: String, _ arguments: [SQLValue], records: Bool, on connection: PostgresConnection, logger: Logger,
                             into sink: RowSink) -> EventLoopFuture<Void> {
        connection.query(query(sql, arguments), logger: logger) { row in
            try collect(row, binary: false, records: records, into: sink)
        }.map { _ in () }
    }

    /// Decodes `row` into `sink`: its cells (`binary`: read in binary whatever the row's
    /// description says, as a prepared statement's must be), or with `records`, the records of
    /// its one cell (a NULL one, `array_agg` of no rows, holds none).
    @inline(__always)
    private static func collect(_ row: PostgresRow, binary: Bool, records: Bool, into sink: RowSink) throws {
        if records {
            guard let cell = row.first, let bytes = cell.bytes else { return }
            guard binary || cell.format == .binary else { throw PostgresRecordArray.Unreadable(description: "a record array came as text") }
            let rows = try PostgresRecordArray.rows(bytes)
            sink.recordBytes.add(bytes.readableBytes, ordering: .relaxed)
            sink.rows.withLock { $0.append(contentsOf: rows) }
            return
        }
        let values = try row.map(binary ? Self.binaryValue(of:) : Self.value(of:))
        sink.rows.withLock { $0.append(values) }
    }

    /// ``sendCollecting(_:_:)`` through a statement prepared on this connection the first time
    /// its SQL is sent: the server then parses and plans it once, not at every call (a batch
    /// fault at a random place of 10M rows took 1.2–1.4 ms prepared, 1.5–1.7 ms not, in pgbench
    /// against the same server). For the few statements sent again and again (a result's batch
    /// fault): its placeholders must say their types (`$1::text`, `$1::int8`), since the values are
    /// sent as text and 8-byte integers only. Blocks for the first call's prepare; at most
    /// ``preparedLimit`` statements are kept, the rest are sent unprepared.
    func sendPrepared(_ sql: String, _ arguments: [SQLValue], records: Bool = false) -> PendingRows {
        guard !connection.isClosed, arguments.allSatisfy({ $0.integerValue != nil || $0.textValue != nil }) else {
            return sendCollecting(sql, arguments, records: records)
        }
        let statement: PreparedQuery
        if let known = prepared.withLock({ $0[sql] }) {
            statement = known
        } else {
            guard prepared.withLock({ $0.count }) < Self.preparedLimit,
                  let made = try? Self.waitOffLoop(connection.prepare(query: sql)) else { return sendCollecting(sql, arguments, records: records) }
            prepared.withLock { $0[sql] = made }
            statement = made
        }
        let serial = sent.add(1, ordering: .relaxed).newValue
        let sink = RowSink()
        let binds = arguments.map { value -> PostgresData in
            if case .integer(let n) = value { return PostgresData(int64: n) }
            return PostgresData(string: value.textValue ?? "")
        }
        let prepared = self.prepared
        let (connection, logger) = (self.connection, self.logger)
        let future = statement.execute(binds) { row in
            try Self.collect(row, binary: true, records: records, into: sink)
        }.flatMapError { error -> EventLoopFuture<Void> in
            // A statement that failed is prepared again next time (and this one is closed on the
            // server). One whose table's columns changed type since it was prepared ("cached
            // plan must not change result type", before any row) is sent again unprepared at
            // once: the caller sees the rows.
            if let failed = prepared.withLock({ $0.removeValue(forKey: sql) }) { _ = failed.deallocate() }
            guard case .server(let answer) = error as? PostgresError, answer.fields[.sqlState] == "0A000",
                  answer.fields[.message]?.contains("cached plan") == true, sink.rows.withLock({ $0.isEmpty }) else {
                return connection.eventLoop.makeFailedFuture(error)
            }
            return Self.send(sql, arguments, records: records, on: connection, logger: logger, into: sink)
        }
        return PendingRows(future: future, sink: sink, serial: serial, records: records)
    }

    /// Statements ``sendPrepared(_:_:)`` prepared on this connection, by SQL.
    private let prepared = PreparedStatements()
    /// How many it keeps (a result's session prepares one or two).
    static let preparedLimit = 16

    /// The rows of a statement sent by ``sendCollecting(_:_:)``, blocking until the last has come.
    func rows(of pending: PendingRows) throws -> [[SQLValue]] {
        do {
            try Self.waitOffLoop(pending.future)
        } catch let unreadable as PostgresRecordArray.Unreadable {
            throw unreadable
        } catch {
            throw PostgresErrors.wrap(error)
        }
        return pending.sink.rows.withLock { rows in
            defer { rows = [] }
            return rows
        }
    }

    /// Statements sent on this session so far (what tells a statement sent ahead that another
    /// came after it, whose effects its rows would not show).
    var statementsSent: Int { sent.load(ordering: .relaxed) }

    /// ``query(_:_:)``, suspending instead of blocking.
    public func query(_ sql: String, _ arguments: [SQLValue] = []) async throws -> [[SQLValue]] {
        do {
            return try Self.values(of: await send(sql, arguments).get())
        } catch {
            throw PostgresErrors.wrap(error)
        }
    }

    /// Runs one statement (or, without arguments, several separated by `;` are refused by the
    /// server: send one at a time) and returns the number of rows it changed, if it says.
    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue] = []) throws -> Int? {
        do {
            return try Self.waitOffLoop(send(sql, arguments)).metadata.rows
        } catch {
            throw PostgresErrors.wrap(error)
        }
    }

    /// ``execute(_:_:)``, calling `watch` with the seconds so far about every `interval` seconds
    /// until the statement ends. When `watch` returns false, `cancel` runs once (it should ask the
    /// server to cancel the statement, see ``PostgresStore/cancelStatement(of:)``) and the call
    /// goes on waiting for the server's answer: the statement's error (`57014`, cancelled), or its
    /// result when it ended first.
    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue] = [], every interval: Double, watch: (Double) -> Bool, cancel: () -> Void) throws -> Int? {
        try waitWatching(send(sql, arguments), every: interval, watch: watch, cancel: cancel).metadata.rows
    }

    /// `query(_:_:)`, watched and cancelled as ``execute(_:_:every:watch:cancel:)`` is.
    public func query(_ sql: String, _ arguments: [SQLValue] = [], every interval: Double, watch: (Double) -> Bool, cancel: () -> Void) throws -> [[SQLValue]] {
        let result = try waitWatching(send(sql, arguments), every: interval, watch: watch, cancel: cancel)
        do {
            return try Self.values(of: result)
        } catch {
            throw PostgresErrors.wrap(error)
        }
    }

    private func waitWatching(_ future: EventLoopFuture<PostgresQueryResult>, every interval: Double, watch: (Double) -> Bool,
                              cancel: () -> Void) throws -> PostgresQueryResult {
        precondition(!future.eventLoop.inEventLoop, "PostgresSession: a synchronous call on the connection's event loop would wait for itself")
        let done = DispatchSemaphore(value: 0)
        future.whenComplete { _ in done.signal() }
        let started = DispatchTime.now().uptimeNanoseconds
        var cancelled = false
        while done.wait(timeout: .now() + interval) == .timedOut {
            guard !cancelled else { continue }
            if !watch(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9) {
                cancelled = true
                cancel()
            }
        }
        do {
            return try future.wait()
        } catch {
            throw PostgresErrors.wrap(error)
        }
    }

    /// The process ID of the server backend serving this session (`pg_backend_pid()`), which
    /// ``PostgresStore/cancelStatement(of:)`` names.
    public func backendPID() throws -> Int {
        guard let pid = try query("SELECT pg_backend_pid()").first?.first?.integerValue else {
            throw BatchStoreError(.postgres("XX000"), "the server did not say its backend process ID")
        }
        return Int(pid)
    }

    /// Streams the rows of one query to `onRow` as they arrive (postgres-nio's row callback: no
    /// result held in memory, nothing between the wire and the callback) and returns how many
    /// there were. `onRow` runs on the connection's event loop, one row at a time; the calling
    /// thread blocks until the last. An error `onRow` throws ends the stream (postgres-nio drops
    /// the rest) and is rethrown. The raw baseline `faultline bench` compares a sweep with.
    @discardableResult
    public func streamRows(_ sql: String, _ arguments: [SQLValue] = [], _ onRow: @escaping @Sendable ([SQLValue]) throws -> Void) throws -> Int {
        if connection.isClosed { throw BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed") }
        _ = sent.add(1, ordering: .relaxed)
        let counter = IDCounter()
        do {
            _ = try Self.waitOffLoop(connection.query(Self.query(sql, arguments), logger: logger) { row in
                try onRow(try row.map(Self.value(of:)))
                _ = counter.add()
            })
        } catch {
            throw PostgresErrors.wrap(error)
        }
        return counter.add() - 1
    }

    /// The server's version (`SHOW server_version`), e.g. `15.18 (Debian 15.18-0+deb12u1)`.
    public func serverVersion() throws -> String {
        try query("SHOW server_version").first?.first?.textValue ?? ""
    }

    /// Ends the session (a Terminate message), blocking until the socket is closed. Safe to call twice.
    public func close() {
        guard !connection.isClosed else { return }
        _ = try? Self.waitOffLoop(connection.close())
    }

    /// Ends the session, suspending until the socket is closed.
    public func close() async {
        guard !connection.isClosed else { return }
        try? await connection.close().get()
    }

    /// True once the connection is closed, by `close()` or by the server.
    public var isClosed: Bool { connection.isClosed }

    /// Sends `sql` and does not wait for it (what a deinit that drops a temp table uses: it may
    /// run on any thread, and nobody is there to hear an error).
    func executeDetached(_ sql: String) {
        guard !connection.isClosed else { return }
        send(sql, []).whenComplete { _ in }
    }

    /// Sends one statement. On a closed connection it fails at once: postgres-nio would queue the
    /// statement on the dead channel and never answer.
    private func send(_ sql: String, _ arguments: [SQLValue]) -> EventLoopFuture<PostgresQueryResult> {
        _ = sent.add(1, ordering: .relaxed)
        if connection.isClosed {
            return connection.eventLoop.makeFailedFuture(BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed"))
        }
        return connection.query(Self.query(sql, arguments), logger: logger)
    }
}


extension PostgresConnection {
    fileprivate func makeSession(_ url: PostgresStoreURL, _ source: PostgresPasswordSource) -> PostgresSession {
        PostgresSession(url: url, passwordSource: source, connection: self, logger: logger)
    }
}

/// A statement sent ahead (``PostgresSession/sendCollecting(_:_:)``): its end, its rows as they came,
/// and the session's statement count when it was sent.
final class PendingRows: Sendable {
    let future: EventLoopFuture<Void>
    fileprivate let sink: RowSink
    let serial: Int
    /// True when the statement sends its rows as one `record[]` cell (``PostgresRecordArray``).
    let records: Bool
    /// The size of that cell, once read.
    var recordBytes: Int { sink.recordBytes.load(ordering: .relaxed) }

    fileprivate init(future: EventLoopFuture<Void>, sink: RowSink, serial: Int, records: Bool) {
        self.future = future
        self.sink = sink
        self.serial = serial
        self.records = records
    }
}

/// A session's prepared statements, by SQL (shared with the callbacks that drop a failed one).
private final class PreparedStatements: Sendable {
    let bySQL = Mutex<[String: PreparedQuery]>([:])
    func withLock<R>(_ body: (inout [String: PreparedQuery]) -> R) -> R { bySQL.withLock { body(&$0) } }
}

/// Rows decoded on the event loop, read by the thread that waited for them.
private final class RowSink: Sendable {
    let rows = Mutex<[[SQLValue]]>([])
    /// The bytes of the record arrays read into it (``PostgresRecordArray``).
    let recordBytes = Atomic<Int>(0)
}

/// Connection ids for postgres-nio's logs, one per session.
private final class IDCounter: Sendable {
    private let value = Atomic<Int>(0)
    func add() -> Int { value.add(1, ordering: .relaxed).newValue }
}
