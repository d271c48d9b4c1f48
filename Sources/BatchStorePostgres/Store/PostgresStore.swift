import BatchStore
import Foundation
import PostgresNIO
import Synchronization

/// A PostgreSQL database opened by URL, with its schema read once from the catalogs.
///
/// The counterpart of `PersistentStore` for a server: the store connects once to read the
/// schema, then each user of it opens its own ``PostgresSession``. A store reads its schema, hands
/// out sessions, and fetches in batches (``fetchBatched(_:residentBatches:firstBatch:progress:)``); batch requests
/// over it are still to come.
public final class PostgresStore: Sendable {
    /// The URL (its description hides the password).
    public let url: PostgresStoreURL
    /// The store's name in descriptions: the database name unless one is given.
    public let name: String
    /// Tables and views, read when the store was opened.
    public let schema: PostgresSchema
    /// The server's version when the store was opened (`15.18 (Debian 15.18-0+deb12u1)`).
    public let serverVersion: String
    /// `server_version_num`: 150018 for 15.18.
    public let serverVersionNumber: Int
    /// The database's character type (`datctype`: `C`, `en_US.UTF-8`, …), which decides what
    /// regular expressions' character classes match.
    public let characterType: String
    private let environment: [String: String]
    /// One entity per table and view, made once, so object IDs of two results compare equal.
    private let entities: [String: Entity]

    /// Connects to `url`, reads the schema (four catalog queries) and closes that session.
    /// `environment` supplies libpq's variables (`PGPASSWORD`, `PGPASSFILE`, `HOME`, …).
    /// - Throws: `BatchStoreError`, one line: `.serverUnavailable`, `.authenticationFailed`,
    ///   `.noSuchDatabase`, `.permissionDenied`, …
    public init(url: PostgresStoreURL, name: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.url = url
        self.name = name ?? url.database
        self.environment = environment
        let session = try PostgresSession.open(url, environment: environment)
        defer { session.close() }
        self.serverVersion = try session.serverVersion()
        self.serverVersionNumber = Int(try session.query("SELECT current_setting('server_version_num')::int4").first?.first?.integerValue ?? 0)
        self.characterType = try session.query("SELECT datctype::text FROM pg_catalog.pg_database WHERE datname = current_database()").first?.first?.textValue ?? ""
        let schema = try PostgresSchema.read(from: session, storeName: self.name)
        self.schema = schema
        self.entities = Dictionary(schema.tables.map { ($0.name, $0.makeEntity()) }, uniquingKeysWith: { a, _ in a })
    }

    /// True when the database's character classes cover ASCII only (character type C or POSIX).
    var hasASCIICharacterClasses: Bool { ["C", "POSIX"].contains(characterType) }

    /// The entity of the table or view named `name` (as ``table(named:)`` finds it).
    public func entity(named name: String) throws -> Entity {
        let table = try table(named: name)
        guard let entity = entities[table.name] else { throw BatchStoreError(.noSuchEntity, "no table or view named \(name.debugDescription)") }
        return entity
    }

    /// Asks the server to cancel the statement the backend `pid` is running, from a session of
    /// its own (`pg_cancel_backend`, which signals the backend as libpq's cancel request does; a
    /// role may cancel its own sessions). The statement then fails with `57014`.
    /// - Returns: false when the server could not be asked (the statement then runs to its end).
    @discardableResult
    public func cancelStatement(of pid: Int) -> Bool {
        guard let session = try? openSession() else { return false }
        defer { session.close() }
        return (try? session.query("SELECT pg_cancel_backend($1::int4)", [.integer(Int64(pid))]).first?.first?.integerValue) == 1
    }

    /// Parses `url` (see ``PostgresStoreURL``) and opens it.
    public convenience init(url: String, name: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try self.init(url: PostgresStoreURL(url, environment: environment), name: name, environment: environment)
    }

    /// A new session on the store's database, with the store's URL and environment.
    public func openSession() throws -> PostgresSession {
        try PostgresSession.open(url, environment: environment)
    }

    /// True (the default) when an iteration over a batched result of this store that goes on for
    /// a while reads the rest of the result by one statement instead of batch faults (see
    /// `PostgresSweepStream`): the rows it reads are then as the server had them when that
    /// statement began, as with any one `SELECT`. False: every batch is faulted, and reads its
    /// rows as they are when faulted.
    public var streamsSweeps: Bool {
        get { streamsSweepsFlag.load(ordering: .relaxed) }
        set { streamsSweepsFlag.store(newValue, ordering: .relaxed) }
    }
    private let streamsSweepsFlag = Atomic<Bool>(true)

    /// True (the default) when a batch fault of a result opened from now on asks for its rows as
    /// one cell, an array of records (``PostgresRecordArray``), which this client reads in a
    /// third of the time it takes to receive them as rows; false: as rows. (For tests that
    /// compare the two; a result whose rows cannot come as records reads them as rows anyway.)
    package var faultsAsRecords: Bool {
        get { faultsAsRecordsFlag.load(ordering: .relaxed) }
        set { faultsAsRecordsFlag.store(newValue, ordering: .relaxed) }
    }
    private let faultsAsRecordsFlag = Atomic<Bool>(true)

    /// How long, in seconds, an iteration may pause between two batches and keep its stream (0.5
    /// by default, as long as a batch read ahead waits): after a longer pause the rest is faulted,
    /// as it is then, and a stream left waiting that long ends itself on the server.
    public var sweepStreamPause: Double {
        get { Double(sweepStreamPauseNanoseconds.load(ordering: .relaxed)) / 1e9 }
        set { sweepStreamPauseNanoseconds.store(UInt64(max(0, newValue) * 1e9), ordering: .relaxed) }
    }
    private let sweepStreamPauseNanoseconds = Atomic<UInt64>(500_000_000)

    /// Transactions run by the store's contexts (batch requests, undo): a sweep's stream, which
    /// would not show them, stops when this moves.
    var editsMade: Int { edits.load(ordering: .relaxed) }
    func countEdit() { edits.add(1, ordering: .relaxed) }
    private let edits = Atomic<Int>(0)

    /// ``openSession()`` on `eventLoop`.
    func openSession(on eventLoop: any EventLoop) throws -> PostgresSession {
        try PostgresSession.open(url, environment: environment, on: eventLoop)
    }

    /// The table or view named `name`, or a `.noSuchEntity` error that lists what exists.
    public func table(named name: String) throws -> PostgresTable {
        if let table = schema.table(named: name) { return table }
        let folded = schema.tables(foldingCaseOf: name)
        if folded.count > 1 {
            throw BatchStoreError(.noSuchEntity, "\(name.debugDescription) matches \(folded.map { $0.name.debugDescription }.joined(separator: " and ")) but none exactly: write the name as it is spelt")
        }
        let names = schema.tables.map(\.name)
        let known = names.isEmpty ? "the database has no tables" : "tables and views: " + names.prefix(12).joined(separator: ", ")
        throw BatchStoreError(.noSuchEntity, "no table or view named \(name.debugDescription) (\(known))")
    }
}

/// A row callback handed to the event loop for the length of one stream.
final class RowCallback: @unchecked Sendable {
    var body: (([SQLValue]) throws -> Void)?
    var error: (any Error)?
    init(_ body: @escaping ([SQLValue]) throws -> Void) { self.body = body }
}
