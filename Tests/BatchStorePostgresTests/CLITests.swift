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

        for verb in [["delete", url, "--table", "movie", "--all"], ["update", url, "--table", "movie", "--all", "--set", "score = 0"]] {
            let refused = try CLI.run(verb, environment: environment)
            #expect(refused.status == 2, "\(verb)")
            #expect(refused.stderr.contains("not built yet"), "\(verb): \(refused.stderr)")
        }
        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == "3000|150021")
    }

    @Test("faultline <url> browses in a real terminal: the table list with counts, open, the end, a filter, a sort; edit keys refused; the table unchanged")
    func browseInTmux() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("tmux", sql: """
            CREATE TABLE movie (id int PRIMARY KEY, title text, score int);
            INSERT INTO movie SELECT g, 'title ' || g, (g * 37) % 101 FROM generate_series(1, 200000) g;
            CREATE TABLE tiny (k text PRIMARY KEY);
            INSERT INTO tiny VALUES ('a'), ('b');
            CREATE FUNCTION slow_rows() RETURNS SETOF int LANGUAGE sql AS $$ SELECT pg_sleep(30); SELECT g FROM generate_series(1, 10) g $$;
            """)
        let url = server.url(database: database)
        let home = TempDir()
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(url))", width: 100, height: 20,
                         environment: ["HOME": home.url.path, "PGPASSFILE": "/nonexistent"])
        try t.waitFor("movie's exact count") { $0.contains("movie") && $0.contains("200,000 rows") }
        try t.waitFor("tiny's exact count") { $0.contains("tiny") && $0.contains("2 rows") }
        #expect(try t.screen().contains { $0.contains("(PostgreSQL)") })
        try t.send("Enter")
        try t.waitFor("row 1 of 200,000")
        try t.type("G")
        let end = try t.waitFor("row 200,000 of 200,000")
        #expect(end.contains { $0.hasPrefix("200,000") && $0.contains("title 200000") })
        try t.type("f")
        try t.type("score == 100 AND title ENDSWITH '7'")
        try t.send("Enter")
        let matching = try server.psql("SELECT count(*) FROM movie WHERE score = 100 AND title LIKE '%7'", database: database)
        let n = try #require(Int(matching))
        #expect(n > 100 && n < 1_000)
        try t.waitFor("row 1 of \(n)")
        try t.type("S")   // the id column, descending
        let sorted = try t.waitFor("sort: id desc")
        let top = try server.psql("SELECT id FROM movie WHERE score = 100 AND title LIKE '%7' ORDER BY id DESC LIMIT 1", database: database)
        #expect(sorted.contains { $0.split(separator: " ").dropFirst().first.map(String.init) == top }, "\(sorted)")
        #expect(sorted.contains { $0.contains("IDs in PostgreSQL") })
        try t.type("D")
        try t.waitFor("D does nothing: edits over PostgreSQL are not built yet")
        try t.type("q")
        let exit = try t.waitForExit()
        #expect(exit.status == 0)
        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == "200000|\((1...200_000).reduce(0) { $0 + ($1 * 37) % 101 })")

        // An ID fetch that takes long shows its time so far; Esc cancels it on the server at once.
        try server.psql("CREATE VIEW slow AS SELECT x AS id FROM slow_rows() AS x", database: database)
        let slow = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(url)) --table slow", width: 100, height: 12,
                            environment: ["HOME": home.url.path, "PGPASSFILE": "/nonexistent"])
        try slow.waitFor("the time so far") { $0.contains("loading IDs, ") && $0.contains(" s (Esc cancels)") }
        let pressed = Date()
        try slow.send("Escape")
        try slow.waitFor("loading cancelled")
        #expect(Date().timeIntervalSince(pressed) < 20, "the cancel did not wait out the 30 s statement")
        let running = try server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%slow_rows%' AND state = 'active' AND pid <> pg_backend_pid()", database: database)
        #expect(running == "0")
        try slow.type("q")
        #expect(try slow.waitForExit().status == 0)
    }
}
