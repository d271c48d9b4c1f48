import BatchStore
import Foundation

/// A PostgreSQL database opened by URL, with its schema read once from the catalogs.
///
/// The counterpart of ``PersistentStore`` for a server: the store connects once to read the
/// schema, then each user of it opens its own ``PostgresSession``. So far a store reads its schema
/// and hands out sessions; fetching, faulting and batch requests over it are still to come.
public final class PostgresStore: Sendable {
    /// The URL (its description hides the password).
    public let url: PostgresStoreURL
    /// The store's name in descriptions: the database name unless one is given.
    public let name: String
    /// Tables and views, read when the store was opened.
    public let schema: PostgresSchema
    /// The server's version when the store was opened (`15.18 (Debian 15.18-0+deb12u1)`).
    public let serverVersion: String
    private let environment: [String: String]

    /// Connects to `url`, reads the schema (four catalog queries) and closes that session.
    /// `environment` supplies libpq's variables (`PGPASSWORD`, `PGPASSFILE`, `HOME`, …).
    /// - Throws: ``BatchStoreError``, one line: `.serverUnavailable`, `.authenticationFailed`,
    ///   `.noSuchDatabase`, `.permissionDenied`, …
    public init(url: PostgresStoreURL, name: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.url = url
        self.name = name ?? url.database
        self.environment = environment
        let session = try PostgresSession.open(url, environment: environment)
        defer { session.close() }
        self.serverVersion = try session.serverVersion()
        self.schema = try PostgresSchema.read(from: session, storeName: self.name)
    }

    /// Parses `url` (see ``PostgresStoreURL``) and opens it.
    public convenience init(url: String, name: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try self.init(url: PostgresStoreURL(url, environment: environment), name: name, environment: environment)
    }

    /// A new session on the store's database, with the store's URL and environment.
    public func openSession() throws -> PostgresSession {
        try PostgresSession.open(url, environment: environment)
    }

    /// The table or view named `name`, or a `.noSuchEntity` error that lists what exists.
    public func table(named name: String) throws -> PostgresTable {
        if let table = schema.table(named: name) { return table }
        let names = schema.tables.map(\.name)
        let known = names.isEmpty ? "the database has no tables" : "tables and views: " + names.prefix(12).joined(separator: ", ")
        throw BatchStoreError(.noSuchEntity, "no table or view named \(name.debugDescription) (\(known))")
    }
}
