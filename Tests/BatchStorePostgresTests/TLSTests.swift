import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// TLS against a real server (``PostgresServer/requireTLS()``: TCP on 127.0.0.1, a self-signed
/// certificate, TLS required by its `pg_hba.conf`): each `sslmode` does what libpq's does.
@Suite("PostgreSQL over TLS", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresTLSTests {
    /// Whether the session's own connection is encrypted, as the server says.
    static func encrypted(_ url: String) throws -> Bool {
        let session = try PostgresSession.open(PostgresStoreURL(url, environment: noPasswordFile), environment: noPasswordFile)
        defer { session.close() }
        return try session.query("SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_backend_pid()").first?.first?.integerValue == 1
    }

    @Test("require and prefer (the default) encrypt; verify-full trusts the server's certificate given as sslrootcert; a batched result, an update and a save run over it")
    func encryptedSessions() throws {
        let server = try PostgresServer.requireTLS()
        let database = try server.makeDatabase("tls", sql: "CREATE TABLE t(id int PRIMARY KEY, v text); INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 500) AS i;")
        #expect(try Self.encrypted(server.tcpURL(database: database, sslmode: "require")))
        #expect(try Self.encrypted(server.tcpURL(database: database, sslmode: nil)))
        let verified = server.tcpURL(database: database, sslmode: "verify-full", parameters: "sslrootcert=\(server.certificatePath)")
        #expect(try Self.encrypted(verified))
        #expect(try Self.encrypted(server.tcpURL(database: database, sslmode: "verify-ca", parameters: "sslrootcert=\(server.certificatePath)")))

        let store = try PostgresStore(url: verified, environment: noPasswordFile)
        let context = PostgresContext(store: store)
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "t", sortDescriptors: [SortDescriptor(key: "id", ascending: false)], fetchBatchSize: 50),
                                              residentBatches: 2, firstBatch: nil, progress: nil)
        #expect(result.count == 500)
        #expect(try result.object(at: 499)?.value(forKey: "v") == .text("v1"))
        let update = BatchUpdateRequest(entityName: "t", predicate: try FetchPredicate("id <= 10"), propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'x'"), resultType: .count)
        #expect(try context.execute(update, undoable: false).count == 10)
        let object = try #require(try result.object(at: 0))
        try object.setValue(.text("saved"), forKey: "v")
        try context.save()
        #expect(try server.psql("SELECT count(*) FILTER (WHERE v = 'x'), max(v) FILTER (WHERE id = 500) FROM t", database: database) == "10|saved")
    }

    @Test("disable is refused by a server that requires TLS, and verify-full without the certificate is refused by the client: each in one line without a password")
    func refusals() throws {
        let server = try PostgresServer.requireTLS()
        let database = try server.makeDatabase("tlsno")
        let plain = server.openingError(server.tcpURL(database: database, sslmode: "disable"))
        #expect(plain != nil)
        #expect(plain?.message.contains("no encryption") == true || plain?.message.contains("pg_hba.conf") == true, "\(plain?.message ?? "")")
        let unverified = server.openingError(server.tcpURL(database: database, sslmode: "verify-full"))
        #expect(unverified?.message.hasSuffix("the server's TLS certificate is not trusted (give its CA certificate as sslrootcert, or sslmode=require to encrypt without checking it)") == true,
                "\(unverified?.message ?? "nil"): a self-signed certificate is not trusted without sslrootcert")
        let missing = server.openingError(server.tcpURL(database: database, sslmode: "verify-full", parameters: "sslrootcert=/nonexistent/root.crt"))
        #expect(missing?.message.contains("cannot read sslrootcert") == true, "\(missing?.message ?? "")")
        for error in [plain, unverified, missing].compactMap({ $0 }) {
            #expect(!error.message.contains("\n"), "\(error.message)")
        }
    }

    @Test("the command line exports over TLS, trusting the certificate named by PGSSLROOTCERT")
    func commandLine() throws {
        let server = try PostgresServer.requireTLS()
        let database = try server.makeDatabase("tlscli", sql: "CREATE TABLE t(id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b');")
        let environment = ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory(), "PGSSLROOTCERT": server.certificatePath]
        let export = try CLI.run(["export", server.tcpURL(database: database, sslmode: "verify-full"), "--table", "t", "--format", "csv"], environment: environment)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.split(whereSeparator: \.isNewline) == ["id,v", "1,a", "2,b"], "\(export.stdout.debugDescription)")
    }
}
