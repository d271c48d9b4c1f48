import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The test server itself, and sessions over its Unix socket: values, passwords from each
/// source, synchronous and async callers.
@Suite("PostgreSQL sessions", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct SessionTests {
    @Test("the harness's server is PostgreSQL on a Unix socket in its own folder only, run by a user other than root")
    func harness() throws {
        let server = try PostgresServer.require()
        let session = try server.session("postgres")
        defer { session.close() }
        #expect(try session.query("SHOW listen_addresses") == [[.text("")]])
        #expect(try session.query("SHOW unix_socket_directories") == [[.text(server.folder)]])
        #expect(FileManager.default.fileExists(atPath: server.socketPath))
        #expect(try session.serverVersion().hasPrefix(server.binDirectory.contains("/15/") ? "15." : ""))
        // The server's real uid: never root (postgres refuses it; as root the harness runs it as another user).
        let status = try String(contentsOfFile: "/proc/\(server.pid)/status", encoding: .utf8)
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(separator: "\t").dropFirst().first
        #expect(uid != nil && uid != "0", "\(String(describing: uid))")
        if geteuid() == 0 { #expect(server.osUser == "postgres" || server.osUser == "nobody") }
    }

    @Test("values: integers, reals, text, blobs, booleans and NULL, bound and read back")
    func values() throws {
        let server = try PostgresServer.require()
        let session = try server.session("postgres")
        defer { session.close() }
        let blob = Data([0, 1, 2, 255, 0])
        let rows = try session.query("SELECT $1::int8, $2::float8, $3::text, $4::bytea, $5::int8 IS NULL, 7::int2, 8::int4, 1.5::float4, true, 'x'::varchar, 'y'::name",
                                     [.integer(Int64.min), .real(-0.125), .text("naïve 日本"), .blob(blob), .null])
        #expect(rows == [[.integer(Int64.min), .real(-0.125), .text("naïve 日本"), .blob(blob), .integer(1),
                          .integer(7), .integer(8), .real(1.5), .integer(1), .text("x"), .text("y")]])
        #expect(try session.query("SELECT NULL::int4, NULL::text, NULL::bytea") == [[.null, .null, .null]])
        #expect(try session.query("SELECT n FROM generate_series(1, 3) n WHERE false").isEmpty)
        #expect(try session.execute("CREATE TEMP TABLE t AS SELECT generate_series(1, 5) n") == 5)
        #expect(try session.execute("DELETE FROM t WHERE n > $1", [.integer(2)]) == 3)
        // A type read only as text says so instead of guessing.
        #expect(throws: BatchStoreError.self) { try session.query("SELECT 1.5::numeric") }
        #expect(try session.query("SELECT 1.50::numeric::text") == [[.text("1.50")]])
    }

    @Test("a password from the URL, from PGPASSWORD and from a 0600 password file each log in; a 0644 file is ignored and the error says so")
    func passwords() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("pw")
        let password = "p@ss:w/rd?é"
        let role = try server.makeRole("pw", password: password)
        let fromURL = try server.session(database, user: role, password: password)
        #expect(fromURL.passwordSource == .url)
        #expect(try fromURL.query("SELECT current_user::text") == [[.text(role)]])
        fromURL.close()
        #expect(fromURL.isClosed)
        #expect(throws: BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed")) { try fromURL.execute("SELECT 1") }
        fromURL.close()

        let fromEnvironment = try server.session(database, user: role, environment: ["PGPASSWORD": password, "PGPASSFILE": "/nonexistent"])
        #expect(fromEnvironment.passwordSource == .environment)
        fromEnvironment.close()

        let dir = TempDir()
        let file = dir.path("pgpass")
        let escaped = password.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ":", with: "\\:")
        try Data("\(server.folder):\(server.port):\(database):\(role):\(escaped)\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(chmod(file, 0o600) == 0)
        let fromFile = try server.session(database, user: role, environment: ["PGPASSFILE": file])
        #expect(fromFile.passwordSource == .passFile(file))
        fromFile.close()

        #expect(chmod(file, 0o644) == 0)
        let error = server.openingError(server.url(database: database, user: role), environment: ["PGPASSFILE": file])
        #expect(error?.code == .authenticationFailed)
        #expect(error?.message.contains("ignored: it has group or world access; permissions should be u=rw (0600) or less") == true,
                "\(error?.message ?? "")")
        #expect(error?.message.contains(password) == false)
    }

    // A deadlock fails by the suite's time limit; how long the calls take is not asserted: the
    // other suites running at the same time hold the same cooperative threads.
    @Test("synchronous calls from more tasks than the cooperative pool has threads all finish")
    func synchronousCallersDoNotDeadlock() async throws {
        let server = try PostgresServer.require()
        let sessions = try (0..<8).map { _ in try server.session("postgres") }
        defer { for s in sessions { s.close() } }
        // Each task blocks its (cooperative) thread in a synchronous query that sleeps 0.3 s on the server.
        let answers = try await withThrowingTaskGroup(of: [[SQLValue]].self) { group in
            for (i, session) in sessions.enumerated() {
                group.addTask { try blockingQuery(session, "SELECT pg_sleep(0.3)::text, $1::int8", [.integer(Int64(i))]) }
            }
            var all: [[SQLValue]] = []
            for try await rows in group { all += rows }
            return all
        }
        #expect(Set(answers.map { $0[1] }) == Set((0..<8).map { SQLValue.integer(Int64($0)) }))
    }

    @Test("the async API suspends instead of blocking, on the same session")
    func asyncQueries() async throws {
        let server = try PostgresServer.require()
        let session = try await PostgresSession.open(PostgresStoreURL(server.url(database: "postgres"), environment: noPasswordFile),
                                                     environment: noPasswordFile)
        async let a = session.query("SELECT 1::int4")
        async let b = session.query("SELECT $1::text", [.text("two")])
        #expect(try await a == [[.integer(1)]])
        #expect(try await b == [[.text("two")]])
        await session.close()
        #expect(session.isClosed)
        // postgres-nio alone would never answer a statement sent on a closed connection.
        await #expect(throws: BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed")) { try await session.query("SELECT 1") }
    }
}

/// The synchronous overload, called from a task (as a synchronous caller on a cooperative thread would).
private func blockingQuery(_ session: PostgresSession, _ sql: String, _ arguments: [SQLValue]) throws -> [[SQLValue]] {
    try session.query(sql, arguments)
}
