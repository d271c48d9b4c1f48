import Foundation
import GRDB
import Testing
import TestSupport

@Suite(.serialized, .tags(.slow), .timeLimit(slowTestLimit)) struct EditCLITests {
    func makeDemo(_ scratch: TempDir) throws -> String {
        try CLI.demo(rows: 5000, at: scratch.path("d.sqlite"))
    }

    @Test func updateAndDeleteChangeExactlyTheRowsSQLiteSelects() throws {
        let scratch = TempDir()
        let path = try makeDemo(scratch)
        let q = try DatabaseQueue(path: path)
        let noirBefore = try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } ?? 0
        let noirCount = try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE genre = 'Noir' AND year < 1950") } ?? 0
        let dry = try CLI.run(["update", path, "--table", "movie", "--where", "genre == 'Noir' AND year < 1950", "--set", "votes = votes + 3", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == "\(noirCount)\n" && dry.stderr.contains("dry run"))
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } == noirBefore)
        let run = try CLI.run(["update", path, "--table", "movie", "--where", "genre == 'Noir' AND year < 1950", "--set", "votes = votes + 3, title = lowercase(title)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "\(noirCount)\n")
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } == noirBefore + 3 * noirCount)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE genre = 'Noir' AND year < 1950 AND title != lower(title)") } == 0)

        let doomed = try q.read { db in try Int64.fetchAll(db, sql: "SELECT m.id FROM movie m JOIN director d ON d.id = m.director_id WHERE d.name LIKE 'Agnès%' AND m.rating > 9 ORDER BY m.id") }
        let del = try CLI.run(["delete", path, "--table", "movie", "--where", "director.name BEGINSWITH 'Agnès' AND rating > 9", "--result", "ids"])
        #expect(del.status == 0, "\(del.stderr)")
        let uris = del.stdout.split(separator: "\n").map(String.init)
        #expect(uris == doomed.map { "x-batchstore://d/movie/r\($0)" }, "every ID once, streamed in key order")
        #expect(!doomed.isEmpty)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") } == 5000 - doomed.count)
        let status = try CLI.run(["update", path, "--table", "movie", "--where", "id <= 10", "--set", "votes = 0", "--result", "status"])
        #expect(status.status == 0 && status.stdout == "ok\n")
        #expect(status.stderr.hasPrefix("updated in ") && !status.stderr.contains("0 rows"), "no made-up count: \(status.stderr)")
    }

    @Test("delete and update --dry-run say what the real run would change beyond the matched rows: foreign-key actions and triggers that write")
    func dryRunSaysWhatElseChanges() throws {
        let scratch = TempDir()
        let path = scratch.path("c.sqlite")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                CREATE TABLE director(id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT);
                CREATE TABLE movie(id INTEGER PRIMARY KEY, director_id INTEGER REFERENCES director(id) ON DELETE CASCADE);
                CREATE TABLE log(x);
                CREATE TRIGGER renamed AFTER UPDATE OF name ON director BEGIN INSERT INTO log VALUES (new.name); END;
                INSERT INTO director VALUES (1, 'a', 'Varda'), (2, 'b', 'Ozu');
                INSERT INTO movie VALUES (10, 1), (11, 2);
                """)
        }
        let delete = try CLI.run(["delete", path, "--table", "director", "--where", "id == 1", "--dry-run"])
        #expect(delete.status == 0 && delete.stdout == "1\n", "\(delete.stderr)")
        #expect(delete.stderr == "note: beyond these rows, deleting from director can change movie through foreign-key actions\nwould delete 1 row (dry run: nothing was written)\n", "\(delete.stderr)")
        let update = try CLI.run(["update", path, "--table", "director", "--all", "--set", "name = uppercase(name)", "--dry-run"])
        #expect(update.status == 0 && update.stderr.contains("note: beyond these rows, this update of director fires trigger renamed\n"), "\(update.stderr)")
        let plain = try CLI.run(["update", path, "--table", "director", "--all", "--set", "code = code", "--dry-run"])
        #expect(plain.status == 0 && !plain.stderr.contains("note:"), "\(plain.stderr)")
        #expect(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie") } == 2)
    }

    @Test("an upsert says how many rows it inserted and how many it updated")
    func upsertSaysWhatItDid() throws {
        let scratch = TempDir()
        let path = try makeDemo(scratch)
        let rows = scratch.path("rows.ndjson")
        try Data("{\"id\": 1, \"votes\": 5}\n{\"id\": 3, \"votes\": 6}\n{\"id\": 900000, \"title\": \"new\", \"year\": 2020, \"genre\": \"Noir\"}\n".utf8).write(to: URL(fileURLWithPath: rows))
        let r = try CLI.run(["import", path, "--table", "movie", rows, "--on-conflict", "upsert"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "3\n")
        #expect(r.stderr.hasPrefix("upserted 3 rows from \(rows): 1 inserted, 2 updated, in "), "\(r.stderr)")
        #expect(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT votes FROM movie WHERE id = 3") } == 6)
    }

    @Test("an upsert that writes one key twice counts the rows it wrote, as the file's statements did")
    func upsertCountsRowsWritten() throws {
        let scratch = TempDir()
        let path = try makeDemo(scratch)
        let rows = scratch.path("twice.ndjson")
        try Data("{\"id\": 1, \"votes\": 5}\n{\"id\": 1, \"votes\": 7}\n{\"id\": 900000, \"title\": \"new\", \"year\": 2020, \"genre\": \"Noir\"}\n".utf8).write(to: URL(fileURLWithPath: rows))
        let r = try CLI.run(["import", path, "--table", "movie", rows, "--on-conflict", "upsert"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "3\n", "\(r.stdout)")
        #expect(r.stderr.hasPrefix("upserted 3 rows from \(rows): 1 inserted, 1 updated, in "), "\(r.stderr)")
        #expect(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT votes FROM movie WHERE id = 1") } == 7)
    }

    @Test("import --dry-run leaves the file byte for byte, in its journal mode; a real import switches it to WAL")
    func importDryRunWritesNothing() throws {
        let scratch = TempDir()
        let path = scratch.path("r.sqlite")
        try DatabaseQueue(path: path).write { try $0.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)") }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let rows = scratch.path("rows.ndjson")
        try Data("{\"id\": 1, \"v\": \"a\"}\n".utf8).write(to: URL(fileURLWithPath: rows))
        let dry = try CLI.run(["import", path, "--table", "t", rows, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let real = try CLI.run(["import", path, "--table", "t", rows])
        #expect(real.status == 0, "\(real.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).subdata(in: 18..<20) == Data([2, 2]), "WAL at the first write")
    }

    @Test("update and delete --dry-run and export, over one file and two, leave every file byte for byte with no -wal or -journal")
    func dryRunsAndExportWriteNothing() throws {
        let scratch = TempDir()
        let paths = try ["a", "b"].map { name -> String in
            let path = scratch.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL CHECK (v < 100))")
                for id in 1...50 { try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [id, id]) }
            }
            return path
        }
        let before = try paths.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        for files in [[paths[0]], paths] {
            for args in [["update"] + files + ["--table", "t", "--all", "--set", "v = v * 3", "--dry-run"],
                         ["delete"] + files + ["--table", "t", "--where", "v > 10", "--dry-run"],
                         ["export"] + files + ["--table", "t", "--where", "v > 10", "--sort", "v desc"]] {
                let r = try CLI.run(args)
                #expect(r.status == 0, "\(args): \(r.stderr)")
                #expect(try paths.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == before, "\(args) changed a file")
                for path in paths {
                    #expect(!FileManager.default.fileExists(atPath: path + "-wal") && !FileManager.default.fileExists(atPath: path + "-journal"), "\(args)")
                }
            }
        }
    }

    @Test func badEditsExitTwoAndLeaveTheFileUntouched() throws {
        let scratch = TempDir()
        let path = try makeDemo(scratch)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let cases: [[String]] = [
            ["update", path, "--table", "movie", "--all", "--set", "votes = votes +"],
            ["update", path, "--table", "movie", "--all", "--set", "votez = 1"],
            ["update", path, "--table", "movie", "--where", "year >", "--set", "votes = 1"],
            ["update", path, "--table", "movie", "--set", "votes = 1"],
            ["delete", path, "--table", "movie"],
            ["delete", path, "--table", "movie", "--where", "colour == 'red'"],
            ["update", path, "--table", "movie", "--all", "--set", "votes = 1", "--where", "year > 1"],
        ]
        for args in cases {
            let r = try CLI.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        let dry = try CLI.run(["update", path, "--table", "movie", "--where", "id <= 7", "--set", "title = nil", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == "7\n")
        #expect(dry.stderr.contains("7 of 7 rows would fail, e.g. x-batchstore://d/movie/r") && dry.stderr.contains("NOT NULL constraint failed: movie.title"))
        let failed = try CLI.run(["update", path, "--table", "movie", "--where", "id <= 7", "--set", "title = nil"])
        #expect(failed.status == 1 && failed.stderr.contains("nothing was written") && failed.stderr.split(separator: "\n").count == 1)
        let missing = scratch.path("nope.sqlite")
        let r = try CLI.run(["delete", missing, "--table", "movie", "--all"])
        #expect(r.status == 1 && r.stderr.contains("no such file"))
        #expect(!FileManager.default.fileExists(atPath: missing))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}

@Suite(.serialized, .tags(.slow), .timeLimit(slowTestLimit)) struct ImportCLITests {
    @Test func exportThenImportRoundTripsInEveryFormat() throws {
        let scratch = TempDir()
        let path = scratch.path("d.sqlite")
        #expect(try CLI.run(["demo", "--rows", "3000", "--output", path]).status == 0)
        let q = try DatabaseQueue(path: path)
        try q.write { db in
            try db.execute(sql: "CREATE TABLE copy(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER NOT NULL, rating REAL, votes INTEGER NOT NULL DEFAULT 0, genre TEXT NOT NULL, director_id INTEGER)")
            try db.execute(sql: "CREATE TABLE odd(t TEXT, b BLOB, n)")
            try db.execute(sql: "INSERT INTO odd VALUES (?, ?, ?)", arguments: ["\\x41 looks like hex", Data([0, 255]), nil])
            try db.execute(sql: "INSERT INTO odd VALUES (?, ?, ?)", arguments: ["comma, \"quote\"\nnewline", nil, ""])
        }
        for format in ["ndjson", "csv", "json"] {
            let file = scratch.path("rows.\(format)")
            if format == "json" {
                let nd = try CLI.run(["export", path, "--table", "movie", "--format", "ndjson"]).stdout
                try ("[" + nd.split(separator: "\n").joined(separator: ",") + "]").write(toFile: file, atomically: true, encoding: .utf8)
            } else {
                try CLI.run(["export", path, "--table", "movie", "--format", format]).stdout.write(toFile: file, atomically: true, encoding: .utf8)
            }
            try q.write { db in try db.execute(sql: "DELETE FROM copy") }
            let r = try CLI.run(["import", path, "--table", "copy", file])
            #expect(r.status == 0, "\(format): \(r.stderr)")
            #expect(r.stdout == "3000\n", "\(format)")
            let differences = try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT * FROM movie EXCEPT SELECT * FROM copy)") }
            #expect(differences == 0, "\(format) round-trips every value")
        }
        for format in ["ndjson", "csv"] {
            let file = scratch.path("odd.\(format)")
            try CLI.run(["export", path, "--table", "odd", "--format", format]).stdout.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try CLI.run(["import", path, "--table", "odd", file])
            #expect(r.status == 0, "\(format): \(r.stderr)")
            let groups = try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT t, b, n, count(*) c FROM odd GROUP BY t, b, n HAVING c = 2)") }
            #expect(groups == 2, "\(format): each odd row came back identical, blobs and the \\x text included")
            try q.write { db in try db.execute(sql: "DELETE FROM odd WHERE rowid > 2") }
        }
    }

    @Test func badImportsWriteNothing() throws {
        let scratch = TempDir()
        let path = scratch.path("d.sqlite")
        #expect(try CLI.run(["demo", "--rows", "100", "--output", path]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let bad = scratch.path("bad.ndjson")
        try "{\"title\": \"ok\", \"year\": 1, \"genre\": \"g\"}\n{\"title\": \"x\", \"colour\": 1}\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let r1 = try CLI.run(["import", path, "--table", "movie", bad])
        #expect(r1.status != 0 && r1.stderr.contains("row 2") && r1.stderr.contains("colour"))
        let r2 = try CLI.run(["import", path, "--table", "movie", scratch.path("missing.ndjson")])
        #expect(r2.status == 1 && r2.stderr.contains("no such file"))
        try "not json\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let r3 = try CLI.run(["import", path, "--table", "movie", bad])
        #expect(r3.status != 0 && r3.stderr.contains("line 1"))
        let dupe = scratch.path("dupe.ndjson")
        try "{\"id\": 1, \"title\": \"t\", \"year\": 1, \"genre\": \"g\"}\n".write(toFile: dupe, atomically: true, encoding: .utf8)
        let r4 = try CLI.run(["import", path, "--table", "movie", dupe, "--on-conflict", "fail"])
        #expect(r4.status == 1 && r4.stderr.contains("UNIQUE constraint failed"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func editsSwitchTheFileToWALAndReadsNeverChangeIt() throws {
        let scratch = TempDir()
        let db = scratch.path("j.sqlite")
        try DatabaseQueue(path: db).write { try $0.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, x TEXT); INSERT INTO n VALUES (1, 'a')") }
        func mode() throws -> String { try DatabaseQueue(path: db).read { try String.fetchOne($0, sql: "PRAGMA journal_mode") ?? "" } }
        #expect(try mode() == "delete")
        #expect(try CLI.run(["export", db, "--table", "n"]).status == 0)
        #expect(try mode() == "delete", "a read must not change the file")
        #expect(try CLI.run(["update", db, "--table", "n", "--all", "--set", "x = 'b'"]).status == 0)
        #expect(try mode() == "wal", "other readers keep reading during a long batch")
    }

    @Test("update --dry-run shows a few rows old → new and how many non-NULL values the update would turn into NULL; a real run then writes exactly that")
    func dryRunPreview() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v REAL, w INTEGER, s TEXT);
            INSERT INTO n VALUES (1, 10, 2, 'a'), (2, NULL, 2, 'b'), (3, 30, NULL, 'c' || char(10) || 'd'), (4, 40, NULL, 'x');
            """)
        let dry = try CLI.run(["update", path, "--table", "n", "--all", "--set", "v = v * w, s = s || \"!\"", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == "4\n", "\(dry.stderr)")
        let lines = dry.stderr.split(separator: "\n").map(String.init)
        #expect(lines == [#"e.g. id 1: v 10.0 → 20.0, s "a" → "a!"; id 2: v nil → nil, s "b" → "b!"; id 3: v 30.0 → nil, s "c\nd" → "c\nd!"; …"#,
                          "note: 2 non-NULL values of v would become NULL",
                          "would update 4 rows (dry run: nothing was written)"], "\(lines)")
        let real = try CLI.run(["update", path, "--table", "n", "--all", "--set", "v = v * w, s = s || \"!\""])
        #expect(real.status == 0)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n WHERE v IS NULL") } == 3)
    }
}
