import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What goes wrong, against the real server: each failure is one line with a code to match, and
/// no line holds the password.
@Suite("PostgreSQL errors", .tags(.postgres), .timeLimit(slowTestLimit))
struct ErrorTests {
    @Test("server down: no socket file in the folder")
    func noSocket() throws {
        let server = try PostgresServer.require()
        let empty = TempDir(prefix: "pg-none")
        let url = "postgresql://\(server.superuser)@/postgres?host=\(empty.url.path)"
        let error = try #require(server.openingError(url))
        #expect(error.code == .serverUnavailable)
        #expect(error.message == "postgresql://\(server.superuser)@/postgres?host=\(empty.url.path): cannot connect to PostgreSQL at \(empty.url.path)/.s.PGSQL.5432: no server is running there (the socket file does not exist)")
    }

    @Test("server down: a socket file that no server accepts on")
    func refused() throws {
        let server = try PostgresServer.require()
        let dir = TempDir(prefix: "pg-dead")
        let path = dir.path(".s.PGSQL.5432")
        // Bound but never listening, as a socket left behind by a server that died.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        defer { close(fd) }
        let error = try #require(server.openingError("postgresql://u@/d?host=\(dir.url.path)"))
        #expect(error.code == .serverUnavailable)
        #expect(error.message.hasSuffix("cannot connect to PostgreSQL at \(path): connection refused (a socket file is there but no server accepts on it)"), "\(error.message)")
    }

    @Test("authentication failed: a wrong password, and none at all, never echoing the password")
    func authentication() throws {
        let server = try PostgresServer.require()
        let role = try server.makeRole("auth", password: "right-one")
        let wrong = "Wr0ng-Pa55"
        let error = try #require(server.openingError(server.url(database: "postgres", user: role, password: wrong)))
        #expect(error.code == .authenticationFailed)
        #expect(error.message == "postgresql://\(role):***@/postgres?host=\(server.folder): password authentication failed for user \"\(role)\" (the password came from the URL)")
        #expect(!error.message.contains(wrong))

        let fromEnvironment = try #require(server.openingError(server.url(database: "postgres", user: role),
                                                               environment: ["PGPASSWORD": wrong, "PGPASSFILE": "/nonexistent"]))
        #expect(fromEnvironment.code == .authenticationFailed)
        #expect(fromEnvironment.message.hasSuffix("password authentication failed for user \"\(role)\" (the password came from PGPASSWORD)"))
        #expect(!fromEnvironment.message.contains(wrong))

        let none = try #require(server.openingError(server.url(database: "postgres", user: role)))
        #expect(none.code == .authenticationFailed)
        #expect(none.message.hasSuffix(": the server asks for a password and none was given (in the URL, PGPASSWORD or ~/.pgpass)"), "\(none.message)")
    }

    @Test("database missing")
    func databaseMissing() throws {
        let server = try PostgresServer.require()
        let error = try #require(server.openingError(server.url(database: "no_such_db")))
        #expect(error.code == .noSuchDatabase)
        #expect(error.message == "postgresql://\(server.superuser)@/no_such_db?host=\(server.folder): database \"no_such_db\" does not exist")
        #expect(throws: BatchStoreError.self) { try PostgresStore(url: server.url(database: "no_such_db"), environment: noPasswordFile) }
    }

    @Test("permission denied: to connect to a database, and to read a table; the schema says what the role may do")
    func permissionDenied() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("perm", sql: """
            CREATE TABLE secret (id int PRIMARY KEY, code text);
            CREATE TABLE open (id int PRIMARY KEY);
            INSERT INTO secret VALUES (1, 'x');
            """)
        let role = try server.makeRole("perm", password: "pw-perm")
        try server.psql("GRANT SELECT ON open TO \(role)", database: database)
        let session = try server.session(database, user: role, password: "pw-perm")
        defer { session.close() }
        do {
            _ = try session.query("SELECT * FROM secret")
            Issue.record("read a table without the privilege")
        } catch let error as BatchStoreError {
            #expect(error.code == .permissionDenied)
            #expect(error.message == "permission denied for table secret")
        }
        #expect(try session.query("SELECT count(*)::int8 FROM open") == [[.integer(0)]])

        let store = try PostgresStore(url: server.url(database: database, user: role, password: "pw-perm"), environment: noPasswordFile)
        let secret = try store.table(named: "secret"), open = try store.table(named: "open")
        #expect(!secret.canSelect && !secret.canUpdate)
        #expect(open.canSelect && !open.canInsert && !open.canUpdate && !open.canDelete)
        #expect(open.readOnlyReason == "the role may not insert, update or delete in open")

        try server.psql("REVOKE CONNECT ON DATABASE \(database) FROM PUBLIC")
        let error = try #require(server.openingError(server.url(database: database, user: role, password: "pw-perm")))
        #expect(error.code == .permissionDenied)
        #expect(error.message == "postgresql://\(role):***@/\(database)?host=\(server.folder): permission denied for database \"\(database)\" (User does not have CONNECT privilege.)")
    }
}
