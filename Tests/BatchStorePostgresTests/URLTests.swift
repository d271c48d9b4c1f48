import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// Store URLs as libpq reads them, and the password never in a description or an error.
@Suite("PostgreSQL store URLs", .tags(.postgres), .timeLimit(slowTestLimit))
struct URLTests {
    /// No libpq variable from the machine running the tests.
    static let clean: [String: String] = [:]

    @Test("a TCP URL: user, password, host, port, database, sslmode=require means TLS")
    func tcp() throws {
        let url = try PostgresStoreURL("postgres://alice:s3cr%40t%3Ax@db.example.com:6543/shop?sslmode=require", environment: Self.clean)
        #expect(url.endpoint == .tcp(host: "db.example.com", port: 6543))
        #expect(url.user == "alice")
        #expect(url.password?.text == "s3cr@t:x")
        #expect(url.database == "shop")
        #expect(url.sslMode == .require)
        #expect(url.usesTLS)
        #expect(url.endpoint.socketPath == nil)
    }

    @Test("a Unix socket by the host parameter, or by a percent-encoded folder as the host")
    func unixSocket() throws {
        let byParameter = try PostgresStoreURL("postgresql://bob@/films?host=/run/pg%20x&port=5433", environment: Self.clean)
        #expect(byParameter.endpoint == .unixSocket(directory: "/run/pg x", port: 5433))
        #expect(byParameter.endpoint.socketPath == "/run/pg x/.s.PGSQL.5433")
        #expect(byParameter.database == "films")
        #expect(byParameter.password == nil)
        let byHost = try PostgresStoreURL("postgresql://%2Fvar%2Flib%2Fpg/films", environment: ["PGUSER": "carol"])
        #expect(byHost.endpoint == .unixSocket(directory: "/var/lib/pg", port: 5432))
        #expect(byHost.user == "carol")
        // libpq ignores sslmode on a Unix socket, and so does the store.
        let required = try PostgresStoreURL("postgresql://bob@/films?host=/tmp&sslmode=require", environment: Self.clean)
        #expect(required.sslMode == .require)
        #expect(!required.usesTLS)
    }

    @Test("IPv6 addresses in brackets; parameters override the URL's parts")
    func ipv6AndParameters() throws {
        let url = try PostgresStoreURL("postgres://u@[::1]:7000/a?dbname=b&user=v&port=7001&application_name=x%20y&connect_timeout=1",
                                       environment: Self.clean)
        #expect(url.endpoint == .tcp(host: "::1", port: 7001))
        #expect(url.user == "v")
        #expect(url.database == "b")
        #expect(url.applicationName == "x y")
        #expect(url.connectTimeout == 2, "libpq takes 1 second as 2")
        #expect(url.sslMode == .prefer, "libpq's default")
        #expect(url.usesTLS)
        #expect(url.description == "postgresql://v@[::1]:7001/b?application_name=x%20y&connect_timeout=2")
    }

    @Test("what the URL leaves out comes from PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, then libpq's defaults")
    func defaults() throws {
        let fromEnvironment = try PostgresStoreURL("postgres://", environment: [
            "PGHOST": "pg.local", "PGPORT": "6000", "PGUSER": "dora", "PGDATABASE": "stock", "PGSSLMODE": "verify-full"])
        #expect(fromEnvironment.endpoint == .tcp(host: "pg.local", port: 6000))
        #expect(fromEnvironment.user == "dora")
        #expect(fromEnvironment.database == "stock")
        #expect(fromEnvironment.sslMode == .verifyFull)
        let bare = try PostgresStoreURL("postgresql:///", environment: ["PGUSER": "erin"])
        #expect(bare.endpoint == .unixSocket(directory: "/var/run/postgresql", port: 5432))
        #expect(bare.database == "erin", "the database defaults to the user's name")
        let given = try PostgresStoreURL("postgresql://frank@h/d?sslmode=disable", environment: ["PGHOST": "other", "PGUSER": "x", "PGSSLMODE": "require"])
        #expect(given.endpoint == .tcp(host: "h", port: 5432))
        #expect(given.user == "frank")
        #expect(!given.usesTLS)
        #expect(PostgresStoreURL.isStoreURL("POSTGRES://x") && PostgresStoreURL.isStoreURL("postgresql://"))
        #expect(!PostgresStoreURL.isStoreURL("movies.sqlite") && !PostgresStoreURL.isStoreURL("postgres:/x"))
    }

    @Test("bad URLs are one line naming the part at fault, never the password")
    func errors() throws {
        let secret = "Tr0ub4dor"
        let cases: [(String, String)] = [
            ("mysql://u:\(secret)@h/d", "starts with postgres://"),
            ("postgres://u:\(secret)@h:99999/d", "invalid port \"99999\""),
            ("postgres://u:\(secret)@h:12ab/d", "invalid port \"12ab\""),
            ("postgres://u:\(secret)@h/d?colour=red", "unknown store URL parameter \"colour\""),
            ("postgres://u:\(secret)@h/d?sslmode=maybe", "invalid sslmode \"maybe\""),
            ("postgres://u:\(secret)@h1,h2/d", "several hosts"),
            ("postgres://u:\(secret)@x@h/d", "second @"),
            ("postgres://u:\(secret)%zz@h/d", "the password in the store URL has an invalid %-escape"),
            ("postgres://u@h/d?password=\(secret)%", "the password in the store URL has an invalid %-escape"),
            ("postgres://u@[::1/d", "no closing ]"),
        ]
        for (text, expected) in cases {
            do {
                _ = try PostgresStoreURL(text, environment: Self.clean)
                Issue.record("\(expected): accepted")
            } catch let error as BatchStoreError {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(!error.message.contains(secret), "\(error.message)")
                #expect(!error.message.contains("\n"))
            }
        }
    }

    @Test("the password is *** in description, debugDescription, interpolation and dump")
    func redaction() throws {
        let url = try PostgresStoreURL("postgres://alice:Tr0ub4dor@h:5432/shop?sslmode=require", environment: Self.clean)
        #expect(url.description == "postgresql://alice:***@h:5432/shop?sslmode=require")
        var dumped = ""
        dump(url, to: &dumped)
        for text in [url.description, url.debugDescription, "\(url)", String(reflecting: url), dumped,
                     "\(url.password as Any)", String(reflecting: url.password)] {
            #expect(!text.contains("Tr0ub4dor"), "\(text)")
        }
        #expect(dumped.contains("alice"), "dump still shows what is not secret")
        let socket = try PostgresStoreURL("postgresql://bob@/films?host=/run/pg&port=5433", environment: Self.clean)
        #expect(socket.description == "postgresql://bob@/films?host=/run/pg&port=5433")
        #expect(try PostgresStoreURL(socket.description, environment: Self.clean) == socket, "a description parses back")
    }
}
