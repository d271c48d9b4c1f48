import BatchStore
import Browser
import Foundation
import Testing
import TestSupport

/// `faultline export`, `import`, `update` and `delete` with a PostgreSQL URL, as a user runs them,
/// against the test server.
@Suite("faultline with a PostgreSQL URL", .tags(.postgres, .tmux, .slow), .timeLimit(slowTestLimit))
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

        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == "3000|150021")
    }

    @Test("update and delete take a URL: counts, IDs after the commit, dry runs, one-line errors that write nothing")
    func updateAndDelete() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("clied", sql: """
            CREATE TABLE movie (id int PRIMARY KEY, title text, score int CHECK (score >= 0), born date);
            INSERT INTO movie SELECT g, 'title ' || g, g % 100, DATE '2000-01-01' + g FROM generate_series(1, 5000) g;
            """)
        let url = server.url(database: database)
        let environment = ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()]
        func state() throws -> String { try server.psql("SELECT count(*), sum(score), max(born) FROM movie", database: database) }

        let update = try CLI.run(["update", url, "--table", "movie", "--where", "score >= 90", "--set", "score = score - 90, title = uppercase(title)"], environment: environment)
        #expect(update.status == 0 && update.stdout == "500\n", "\(update.stderr)")
        #expect(update.stderr.hasPrefix("updated 500 rows in "))
        #expect(try server.psql("SELECT count(*) FROM movie WHERE title LIKE 'TITLE %' AND score < 10", database: database) == "500")
        let after = try state()

        // A dry run of an update that would break the CHECK: one line, exit 1, nothing written.
        let dry = try CLI.run(["update", url, "--table", "movie", "--all", "--set", "score = score - 50", "--dry-run"], environment: environment)
        #expect(dry.status == 1 && dry.stdout.isEmpty)
        #expect(dry.stderr.hasPrefix("faultline: the update would fail: constraint failed: new row for relation \"movie\" violates check constraint"), "\(dry.stderr)")
        #expect(dry.stderr.split(separator: "\n").count == 1)
        let passing = try CLI.run(["update", url, "--table", "movie", "--where", "score >= 50", "--set", "score = score - 50", "--dry-run"], environment: environment)
        let fifty = try server.psql("SELECT count(*) FROM movie WHERE score >= 50", database: database)
        #expect(passing.status == 0 && passing.stdout == "\(fifty)\n" && fifty == "2000", "\(passing.stderr)")
        for bad in [["--all", "--set", "born = 'someday'"], ["--all", "--set", "score = score / 3"], ["--all", "--set", "nope = 1"]] {
            let run = try CLI.run(["update", url, "--table", "movie"] + bad, environment: environment)
            #expect(run.status != 0, "\(bad)")
            #expect(run.stderr.hasPrefix("faultline: ") && run.stderr.split(separator: "\n").count == 1, "\(bad): \(run.stderr)")
        }
        #expect(try state() == after)

        let ids = try CLI.run(["delete", url, "--table", "movie", "--where", "id > 4990 OR id == 7", "--result", "ids"], environment: environment)
        #expect(ids.status == 0, "\(ids.stderr)")
        let expected = ([7] + Array(4991...5000)).map { "x-batchstore://\(database)/movie/ki\($0)" }
        #expect(ids.stdout.split(separator: "\n").map(String.init) == expected)
        #expect(ids.stderr.hasPrefix("deleted 11 rows in "))
        let rules = try CLI.run(["delete", url, "--table", "movie", "--where", "id == 8", "--apply-delete-rules"], environment: environment)
        #expect(rules.status == 0 && rules.stdout == "1\n" && rules.stderr.hasPrefix("note: PostgreSQL applies its foreign keys' ON DELETE rules itself"), "\(rules.stderr)")
        let dryDelete = try CLI.run(["delete", url, "--table", "movie", "--where", "score == 0", "--dry-run"], environment: environment)
        #expect(dryDelete.stdout == "\(try server.psql("SELECT count(*) FROM movie WHERE score = 0", database: database))\n")
        #expect(try server.psql("SELECT count(*) FROM movie", database: database) == "4988")

    }

    @Test("import takes a URL: an export of a SQLite table goes in whole; conflicts fail, ignore or upsert; a dry run and a bad row write nothing")
    func importing() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER, score REAL);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO movie SELECT i, 'title ' || i, CASE WHEN i % 7 = 0 THEN NULL ELSE 1900 + i % 120 END, i / 8.0 FROM n;
            """)
        let database = try server.makeDatabase("cliimport", sql: "CREATE TABLE movie(id bigint PRIMARY KEY, title text NOT NULL, year int, score float8)")
        let url = server.url(database: database)
        let environment = ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()]
        let file = dir.url.path + "/movies.ndjson"
        let export = try CLI.run(["export", path, "--table", "movie", "--format", "ndjson"], environment: environment)
        #expect(export.status == 0, "\(export.stderr)")
        try Data(export.stdout.utf8).write(to: URL(fileURLWithPath: file))
        func state() throws -> String { try server.psql("SELECT count(*), sum(id), sum(year), sum(score), count(*) FILTER (WHERE year IS NULL) FROM movie", database: database) }

        let dry = try CLI.run(["import", url, file, "--table", "movie", "--dry-run"], environment: environment)
        #expect(dry.status == 0 && dry.stdout == "3000\n", "\(dry.stderr)")
        #expect(try state() == "0||||0")
        let run = try CLI.run(["import", url, file, "--table", "movie"], environment: environment)
        #expect(run.status == 0 && run.stdout == "3000\n", "\(run.stderr)")
        #expect(run.stderr.hasPrefix("inserted 3,000 rows from \(file) in "))
        let expected = try direct(path) { db in try String.fetchOne(db, sql: "SELECT count(*) || '|' || sum(id) || '|' || sum(year) || '|' || sum(score) || '|' || count(*) FILTER (WHERE year IS NULL) FROM movie") }
        #expect(try state() == expected)

        // The same rows again: a conflict fails and writes nothing, ignore skips them all.
        let again = try CLI.run(["import", url, file, "--table", "movie"], environment: environment)
        #expect(again.status == 1 && again.stderr.contains("duplicate key value") && again.stderr.contains("nothing was written"), "\(again.stderr)")
        #expect(again.stderr.split(separator: "\n").count == 1)
        let ignored = try CLI.run(["import", url, file, "--table", "movie", "--on-conflict", "ignore"], environment: environment)
        #expect(ignored.status == 0 && ignored.stdout == "0\n", "\(ignored.stderr)")
        let changes = dir.url.path + "/changes.ndjson"
        try Data([#"{"id": 1, "title": "first"}"#, #"{"id": 5000, "title": "new"}"#, #"{"id": 2, "year": null}"#, ""].joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: changes))
        let upsert = try CLI.run(["import", url, changes, "--table", "movie", "--on-conflict", "upsert"], environment: environment)
        #expect(upsert.status == 0 && upsert.stderr.contains("upserted 3 rows from \(changes): 1 inserted, 2 updated"), "\(upsert.stderr)")
        #expect(try server.psql("SELECT id, title, year FROM movie WHERE id IN (1, 2, 5000) ORDER BY id", database: database) == "1|first|1901\n2|title 2|\n5000|new|")
        let after = try state()

        let bad = dir.url.path + "/bad.ndjson"
        try Data([#"{"id": 6000, "title": "ok"}"#, #"{"id": 6001, "title": "bad", "year": "someday"}"#, ""].joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: bad))
        let refused = try CLI.run(["import", url, bad, "--table", "movie"], environment: environment)
        // A value the column's type cannot read is bad input: exit 2, as for a predicate.
        #expect(refused.status == 2 && refused.stderr.contains("invalid input syntax for type integer") && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        let dryBad = try CLI.run(["import", url, bad, "--table", "movie", "--dry-run"], environment: environment)
        #expect(dryBad.status == 2 && dryBad.stderr.contains("invalid input syntax"), "\(dryBad.stderr)")
        #expect(try state() == after)
        // --foreign-keys off is SQLite's: one line, exit 2, nothing written.
        let off = try CLI.run(["import", url, bad, "--table", "movie", "--foreign-keys", "off"], environment: environment)
        #expect(off.status == 2 && off.stderr == "faultline: --foreign-keys off is for SQLite files: PostgreSQL checks every foreign key (nothing was written)\n", "\(off.stderr)")
        // An identity column GENERATED ALWAYS takes the values the file gives (as COPY and undo
        // do): what export wrote from the same table goes back in.
        try server.psql("CREATE TABLE ident(id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text); INSERT INTO ident (note) VALUES ('a'), ('b'), ('c'); DELETE FROM ident WHERE id = 2", database: database)
        let identExport = try CLI.run(["export", url, "--table", "ident", "--format", "ndjson"], environment: environment)
        #expect(identExport.status == 0, "\(identExport.stderr)")
        try server.psql("TRUNCATE ident", database: database)
        let identFile = dir.url.path + "/ident.ndjson"
        try Data(identExport.stdout.utf8).write(to: URL(fileURLWithPath: identFile))
        let identImport = try CLI.run(["import", url, identFile, "--table", "ident"], environment: environment)
        #expect(identImport.status == 0, "\(identImport.stderr)")
        #expect(try server.psql("SELECT string_agg(id || ':' || note, ' ' ORDER BY id) FROM ident", database: database) == "1:a 3:c")
    }

    @Test("faultline <url> browses in a real terminal: the table list with counts, open, the end, a filter, a sort; U and D on the result, u undoing each; the table as it was")
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
        let sums = "200000|\((1...200_000).reduce(0) { $0 + ($1 * 37) % 101 })"
        // U on the filtered result: the count first, the rows of the result only, then u puts them back.
        try t.type("U")
        try t.type("score = score + 1000")
        try t.send("Enter")
        try t.waitForWrapped("Update all \(group(n)) rows of this result (nothing is marked) in movie: score = score + 1000 — e.g. id ")
        try t.waitFor("? y/n")
        try t.type("y")
        try t.waitFor("updated \(group(n)) rows of movie; u undoes")
        #expect(try server.psql("SELECT count(*) FROM movie WHERE score >= 1000", database: database) == "\(n)")
        #expect(try server.psql("SELECT count(*) FROM movie WHERE score >= 1000 AND NOT (score = 1100 AND title LIKE '%7')", database: database) == "0")
        try t.type("u")
        try t.waitFor("Undo the update of \(group(n)) rows of movie: give score their old values? y/n")
        try t.type("y")
        try t.waitFor("undo: restored the old values of \(group(n)) rows of movie")
        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == sums)
        // Two marked rows deleted, then brought back.
        try t.type("g")
        try t.type("vv")
        try t.waitFor("2 marked")
        try t.type("D")
        try t.waitFor("Delete the 2 marked rows from movie? y/n")
        try t.type("y")
        try t.waitFor("deleted 2 rows from movie; u undoes")
        try t.waitFor("row 1 of \(group(n - 2))")
        #expect(try server.psql("SELECT count(*) FROM movie", database: database) == "199998")
        try t.type("u")
        try t.waitFor("Undo the delete of 2 rows from movie: put them back? y/n")
        try t.type("y")
        try t.waitFor("undo: restored 2 deleted rows of movie")
        try t.waitFor("of \(group(n)) │")
        #expect(!(try t.screen().contains { $0.contains("data changed") }), "our own edits were taken for another session's")
        try t.type("q")
        let exit = try t.waitForExit()
        #expect(exit.status == 0)
        #expect(try server.psql("SELECT count(*), sum(score) FROM movie", database: database) == sums)

        // --read-only forbids edits over a URL as on a file.
        let readOnly = try Tmux(command: "\(shellQuote(CLI.binary)) --read-only \(shellQuote(url)) --table tiny", width: 100, height: 12,
                                environment: ["HOME": home.url.path, "PGPASSFILE": "/nonexistent"])
        try readOnly.waitFor("row 1 of 2")
        try readOnly.type("D")
        try readOnly.waitFor("D does nothing: opened with --read-only")
        try readOnly.type("q")
        #expect(try readOnly.waitForExit().status == 0)
        #expect(try server.psql("SELECT count(*) FROM tiny", database: database) == "2")

        // An ID fetch that takes long shows its time so far; Esc cancels it on the server at once.
        try server.psql("CREATE VIEW slow AS SELECT x AS id FROM slow_rows() AS x", database: database)
        let slow = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(url)) --table slow", width: 100, height: 12,
                            environment: ["HOME": home.url.path, "PGPASSFILE": "/nonexistent"])
        try slow.waitFor("the time so far") { $0.contains("loading IDs, ") && $0.contains(" s (Esc cancels)") }
        let pressed = Date()
        try slow.send("Escape")
        try slow.waitFor("loading cancelled")
        #expect(Date().timeIntervalSince(pressed) < 20, "the cancel did not wait out the 30 s statement")
        let running = try server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%slow_rows%' AND state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()", database: database)
        #expect(running == "0")
        try slow.type("q")
        #expect(try slow.waitForExit().status == 0)
    }

    @Test("dry runs make every refusal the real run makes (a view, a key-less table where a key is needed, a SELECT-only role), then count; a predicate delete or update of a key-less table runs; --dry-run --result ids prints the IDs")
    func dryRunsRefuseAsTheRunDoes() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("dryrun", sql: """
            CREATE TABLE keyed(id int PRIMARY KEY, v int); INSERT INTO keyed SELECT g, g % 7 FROM generate_series(1, 50) g;
            CREATE TABLE loose(v int, note text); INSERT INTO loose SELECT g % 7, 'n' || g FROM generate_series(1, 50) g;
            CREATE VIEW seven AS SELECT * FROM keyed WHERE v = 0;
            """)
        let role = try server.makeRole("dryreader", password: "pw")
        try server.psql("GRANT SELECT ON keyed, loose, seven TO \(role)", database: database)
        let environment = ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()]
        let url = server.url(database: database)
        let reader = server.url(database: database, user: role, password: "pw")
        func run(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let r = try CLI.run(args, environment: environment)
            return (r.status, r.stdout, r.stderr)
        }
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        // Refused in the dry run exactly as in the run, in one line, nothing counted or written.
        for (db, table, why) in [(url, "seven", "seven is a view"), (reader, "keyed", "may not insert, update or delete"), (reader, "loose", "may not")] {
            let dry = try run(["delete", db, "--table", table, "--where", "v == 0", "--dry-run"])
            let real = try run(["delete", db, "--table", table, "--where", "v == 0"])
            #expect(dry.status != 0 && dry.stdout.isEmpty && dry.stderr.contains(why) && dry.stderr.split(separator: "\n").count == 1, "\(table): \(dry.stderr)")
            #expect(real.status == dry.status && real.stderr == dry.stderr, "\(table): the run said \(real.stderr)")
        }
        let dryUpdate = try run(["update", reader, "--table", "keyed", "--where", "v == 0", "--set", "v = 1", "--dry-run"])
        #expect(dryUpdate.status != 0 && dryUpdate.stderr.contains("may not insert, update or delete"), "\(dryUpdate.stderr)")
        #expect(try psql("SELECT count(*) FROM keyed") == "50" && (try psql("SELECT count(*) FROM keyed WHERE v = 0")) == "7")
        // A key-less table: a predicate's update and delete need no key, and run.
        let looseDry = try run(["delete", url, "--table", "loose", "--where", "v == 3", "--dry-run"])
        #expect(looseDry.status == 0 && looseDry.stdout == "7\n", "\(looseDry.stderr)")
        let looseUpdate = try run(["update", url, "--table", "loose", "--where", "v == 2", "--set", "note = 'two'"])
        #expect(looseUpdate.status == 0 && looseUpdate.stdout == "7\n", "\(looseUpdate.stderr)")
        let looseDelete = try run(["delete", url, "--table", "loose", "--where", "v == 3"])
        #expect(looseDelete.status == 0 && looseDelete.stdout == "7\n", "\(looseDelete.stderr)")
        #expect(try psql("SELECT count(*), count(*) FILTER (WHERE note = 'two'), count(*) FILTER (WHERE v = 3) FROM loose") == "43|7|0")
        // IDs need a key: asked of a key-less table, refused, in the dry run as in the run.
        let looseIDs = try run(["delete", url, "--table", "loose", "--where", "v == 4", "--result", "ids", "--dry-run"])
        #expect(looseIDs.status != 0 && looseIDs.stderr.contains("no primary key"), "\(looseIDs.stderr)")
        // --dry-run --result ids prints the IDs the run would print.
        let dryIDs = try run(["delete", url, "--table", "keyed", "--where", "v == 0", "--result", "ids", "--dry-run"])
        #expect(dryIDs.status == 0, "\(dryIDs.stderr)")
        #expect(try psql("SELECT count(*) FROM keyed") == "50")
        let realIDs = try run(["delete", url, "--table", "keyed", "--where", "v == 0", "--result", "ids"])
        #expect(dryIDs.stdout.split(separator: "\n").sorted() == realIDs.stdout.split(separator: "\n").sorted() && realIDs.stdout.split(separator: "\n").count == 7,
                "dry \(dryIDs.stdout) real \(realIDs.stdout)")
    }
}
