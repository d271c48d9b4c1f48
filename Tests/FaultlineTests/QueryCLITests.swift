import BatchStore
import Foundation
import Testing
import TestSupport

/// `--query`: the result of a read-only SQL query exported and browsed in place of a table, with
/// the sqlite3 shell's answer as the oracle, and everything else refused with nothing touched.
@Suite(.serialized, .tags(.slow), .timeLimit(slowTestLimit)) struct QueryCLITests {
    /// The shell's TSV of `sql` on `path`: a header, tab-separated fields, `\N` for NULL.
    static func shellTSV(_ path: String, _ sql: String) throws -> String {
        let result = try runProcess(["sqlite3", "-readonly", "-tabs", "-header", "-nullvalue", "\\N", path, sql])
        guard result.status == 0 else { throw BatchStoreError(.invalidArgument, "sqlite3: \(result.stderr)") }
        return result.stdout
    }

    @Test func exportOfAQueryEqualsTheShellsTSV() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 20_000, at: scratch.path("demo.sqlite"))
        let queries = [
            // A join, filtered and sorted (the id last: ties have one order).
            "SELECT m.title, m.year, m.rating, d.name FROM movie m JOIN director d ON d.id = m.director_id WHERE m.year >= 1990 ORDER BY m.year DESC, m.id",
            // Aggregates, with a NULL group.
            "SELECT genre, count(*) AS n, sum(votes) AS votes, min(year), max(rating) FROM movie GROUP BY genre ORDER BY genre",
            // An outer join along keys that may dangle, a CTE and a window.
            "WITH top AS (SELECT director_id, count(*) AS films FROM movie GROUP BY director_id) SELECT d.id, d.name, top.films, rank() OVER (ORDER BY top.films DESC, d.id) AS place FROM director d LEFT JOIN top ON top.director_id = d.id ORDER BY place",
            "VALUES (1, 'a', NULL), (2, NULL, 2.5)",
        ]
        for sql in queries {
            let exported = try CLI.run(["export", db, "--query", sql])
            #expect(exported.status == 0, "\(sql): \(exported.stderr)")
            #expect(exported.stdout == (try Self.shellTSV(db, sql)), "\(sql)")
        }
        // From a file, with a comment and a final semicolon; and limited as a table is.
        let file = scratch.path("q.sql")
        try "-- the noir films\nSELECT title, year FROM movie WHERE genre = 'Noir' ORDER BY id;\n".write(toFile: file, atomically: true, encoding: .utf8)
        let fromFile = try CLI.run(["export", db, "--query", "@" + file, "--limit", "3"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let shell = try Self.shellTSV(db, "SELECT title, year FROM movie WHERE genre = 'Noir' ORDER BY id LIMIT 3")
        #expect(fromFile.stdout == shell)
        // Filtered and sorted by Faultline on top of the query.
        let wrapped = try CLI.run(["export", db, "--query", "SELECT genre, count(*) AS n FROM movie GROUP BY genre", "--where", "n > 100", "--sort", "n desc"])
        #expect(wrapped.status == 0, "\(wrapped.stderr)")
        #expect(wrapped.stdout == (try Self.shellTSV(db, "SELECT * FROM (SELECT genre, count(*) AS n FROM movie GROUP BY genre) WHERE n > 100 ORDER BY n DESC")))
    }

    @Test func whatIsNotOneReadIsRefusedWithNothingTouched() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 2_000, at: scratch.path("demo.sqlite"))
        // A rollback journal: every write would be in the file itself, not left in a -wal beside it.
        _ = try sqlite3(db, "PRAGMA journal_mode = DELETE")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let latin1 = scratch.path("latin1.sql"), bom = scratch.path("bom.sql")
        try Data("SELECT 'caf\u{e9}'".data(using: .isoLatin1) ?? Data()).write(to: URL(fileURLWithPath: latin1))
        try Data([0xEF, 0xBB, 0xBF] + Array("SELECT count(*) FROM movie".utf8)).write(to: URL(fileURLWithPath: bom))
        let cases: [([String], String)] = [
            (["export", db, "--query", "DELETE FROM movie"], "DELETE is not a query"),
            (["export", db, "--query", "SELECT 1; DROP TABLE movie"], "more than one statement"),
            (["export", db, "--query", "PRAGMA user_version = 9"], "PRAGMA is not a query"),
            (["export", db, "--query", "ATTACH '\(scratch.path("x.sqlite"))' AS x"], "ATTACH is not a query"),
            (["export", db, "--query", "WITH d AS (SELECT 1) UPDATE movie SET year = 0"], "would write"),
            (["export", db, "--query", "SELECT title FROM movie WHERE"], "at character"),
            (["export", db, "--query", "@" + scratch.path("missing.sql")], "cannot read"),
            (["export", db, "--query", "SELECT 1", "--table", "movie"], "not both"),
            (["delete", db, "--query", "SELECT id FROM movie", "--where", "id < 5"], "--table"),
            (["snapshot", db, "--query", "UPDATE movie SET year = 0", "--out", scratch.path("s.svg")], "UPDATE is not a query"),
            // The browser opens files writable: a query that would write is refused there too.
            (["snapshot", db, "--query", "SELECT id FROM movie UNION ALL SELECT 0 FROM pragma_optimize", "--allow-edits", "--out", scratch.path("s.svg")], "pragma_optimize"),
            (["export", db, "--query", "@" + latin1], "not UTF-8"),
            (["export", db, scratch.path("missing.sqlite"), "--query", "SELECT 1"], "one SQLite file"),
        ]
        for (args, words) in cases {
            let r = try CLI.run(args)
            #expect(r.status == 2, "\(args): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(args)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("x.sqlite")))
        // A byte-order mark is left out, as the shell leaves it.
        let fromBOM = try CLI.run(["export", db, "--query", "@" + bom])
        #expect(fromBOM.status == 0 && fromBOM.stdout == "count(*)\n2000\n", "\(fromBOM.stderr)")
        // With no file, a query that cannot run is refused before the demo database is made.
        let home = scratch.path("home")
        let noDemo = try CLI.run(["--query", "DELETE FROM movie"], environment: ["HOME": home, "XDG_CACHE_HOME": home + "/cache", "PATH": "/usr/bin:/bin"])
        #expect(noDemo.status == 2 && noDemo.stderr.contains("DELETE is not a query"), "\(noDemo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/cache/faultline"))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("missing.sqlite")))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("s.svg")))
    }

    /// `--where 'WHERE …'`: a SQL condition, in export (of a table and of a query) and delete,
    /// keeping the shell's rows; one that would leave its parentheses is refused with nothing touched.
    @Test func sqlConditionsInWhere() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 5_000, at: scratch.path("demo.sqlite"))
        let condition = "title LIKE 'th%' AND (year >= 1990 OR rating IS NULL)"
        let table = try CLI.run(["export", db, "--table", "movie", "--where", "WHERE " + condition, "--sort", "id"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout == (try Self.shellTSV(db, "SELECT * FROM movie WHERE \(condition) ORDER BY id")))
        #expect(table.stdout.split(separator: "\n").count > 5)
        let group = "SELECT genre, count(*) AS n FROM movie GROUP BY genre"
        let query = try CLI.run(["export", db, "--query", group, "--where", "where n > 100 AND genre LIKE 'd%'"])
        #expect(query.status == 0, "\(query.stderr)")
        #expect(query.stdout == (try Self.shellTSV(db, "SELECT * FROM (\(group)) WHERE n > 100 AND genre LIKE 'd%'")))
        _ = try sqlite3(db, "PRAGMA journal_mode = DELETE")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        for bad in ["WHERE 1; DROP TABLE movie", "WHERE year > 1 -- all", "WHERE year > 1) OR (1", "WHERE yeer > 1"] {
            let r = try CLI.run(["delete", db, "--table", "movie", "--where", bad])
            #expect(r.status != 0 && r.stderr.split(separator: "\n").count == 1, "\(bad): \(r.status) \(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
        let doomed = try Self.shellTSV(db, "SELECT count(*) AS n FROM movie WHERE \(condition)")
        let total = try Self.shellTSV(db, "SELECT count(*) AS n FROM movie")
        let deleted = try CLI.run(["delete", db, "--table", "movie", "--where", "WHERE " + condition])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let n = Int(doomed.split(separator: "\n")[1]) ?? -1, all = Int(total.split(separator: "\n")[1]) ?? -1
        #expect(deleted.stdout.contains("\(n)"), "\(deleted.stdout)")
        #expect(try Self.shellTSV(db, "SELECT count(*) AS n FROM movie") == "n\n\(all - n)\n")
        #expect(try Self.shellTSV(db, "SELECT count(*) AS n FROM movie WHERE \(condition)") == "n\n0\n")
    }

    /// A query whose rows name a table's rows reopens its file for writing: reading it, moving
    /// and searching through it, and a D that is not confirmed, leave the file's bytes as they were.
    @Test func anEditableQueryReadsWithoutWriting() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 5_000, at: scratch.path("demo.sqlite"))
        _ = try sqlite3(db, "PRAGMA journal_mode = DELETE")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let sql = "SELECT m.id, m.title, d.name FROM movie m JOIN director d ON d.id = m.director_id ORDER BY m.title"
        let out = scratch.path("screen.svg")
        let r = try CLI.run(["snapshot", db, "--query", sql, "--keys", "jjvGDn", "--out", out, "--size", "100x20", "--allow-edits"])
        #expect(r.status == 0, "\(r.stderr)")
        let svg = try String(contentsOfFile: out, encoding: .utf8)
        #expect(svg.contains("edits movie"), "\(svg.prefix(4000))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
    }

    @Test func theBrowserOpensAQueryAndKeepsItReadOnly() throws {
        let scratch = TempDir()
        let db = try CLI.demo(rows: 5_000, at: scratch.path("demo.sqlite"))
        _ = try sqlite3(db, "PRAGMA journal_mode = DELETE")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let sql = "SELECT genre, count(*) AS n FROM movie GROUP BY genre ORDER BY n DESC"
        let groups = try sqlite3(db, "SELECT count(*) FROM (\(sql))")
        let out = scratch.path("screen.svg")
        // G to the last row; D on it must not delete anything (the snapshot may write with --allow-edits).
        let r = try CLI.run(["snapshot", db, "--query", sql, "--keys", "GD", "--out", out, "--size", "100x20", "--allow-edits"])
        #expect(r.status == 0, "\(r.stderr)")
        let svg = try String(contentsOfFile: out, encoding: .utf8)
        #expect(svg.contains("row \(groups) of \(groups)"), "\(svg.prefix(4000))")
        #expect(svg.contains("read-only"), "\(svg.prefix(4000))")
        #expect(svg.contains("D does nothing: a query"), "\(svg.prefix(4000))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
    }
}
