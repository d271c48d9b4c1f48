import BatchStore
import Foundation
import Testing
import TestSupport

/// `faultline export` with a PostgreSQL URL, as a user runs it, against the test server; the
/// verbs not built for PostgreSQL yet say so in one line and touch nothing.
@Suite("faultline with a PostgreSQL URL")
struct CLITests {
    @Test("export writes the rows psql selects, in the same order, as CSV; errors are one line")
    func export() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("cli", sql: """
            CREATE TABLE movie (id int PRIMARY KEY, title text, score int, note text);
            INSERT INTO movie SELECT g, 'title ' || g, (g * 37) % 101, CASE WHEN g % 3 = 0 THEN 'a "quoted", line' ELSE NULL END
            FROM generate_series(1, 3000) g;
            """)
        let url = server.url(database: database)
        let environment = ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()]
        let run = try CLI.run(["export", url, "--table", "movie", "--where", "score < 50 AND title CONTAINS '1'",
                               "--sort", "score desc", "--offset", "3", "--limit", "500", "--format", "csv"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let expected = try server.psql("""
            SELECT id FROM movie WHERE score < 50 AND strpos(title, '1') > 0 ORDER BY score DESC, id OFFSET 3 LIMIT 500
            """, database: database).split(separator: "\n").map(String.init)
        // CSV lines end in CRLF (RFC 4180), one Character each.
        let lines = run.stdout.split(whereSeparator: \.isNewline).map(String.init)
        #expect(lines.first == "id,title,score,note")
        let ids = lines.dropFirst().map { String($0.prefix { $0 != "," }) }
        #expect(ids == expected)
        #expect(ids.count == 500)
        #expect(run.stdout.contains("\"a \"\"quoted\"\", line\""))

        let missing = try CLI.run(["export", url, "--table", "nope"], environment: environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("faultline: no table or view named \"nope\""))
        #expect(missing.stderr.split(separator: "\n").count == 1)

        let down = try CLI.run(["export", "postgresql://x@/db?host=/nonexistent-dir", "--table", "t"], environment: environment)
        #expect(down.status == 1)
        #expect(down.stderr.contains("cannot connect to PostgreSQL"))
        #expect(!FileManager.default.fileExists(atPath: "postgresql:"))

        for verb in [["delete", url, "--table", "movie", "--all"], ["update", url, "--table", "movie", "--all", "--set", "score = 0"], [url]] {
            let refused = try CLI.run(verb, environment: environment)
            #expect(refused.status == 2, "\(verb)")
            #expect(refused.stderr.contains("not built yet"), "\(verb): \(refused.stderr)")
        }
        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == "3000|150021")
    }
}
