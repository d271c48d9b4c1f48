import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// Formats a value the way `export --format tsv` promises, independently of the exporter.
func tsv(_ value: DatabaseValue) -> String {
    switch value.storage {
    case .null: return "\\N"
    case .int64(let i): return String(i)
    case .double(let d): return "\(d)"
    case .string(let s): return s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t").replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
    case .blob(let d): return "\\x" + d.map { String(format: "%02x", $0) }.joined()
    }
}

@Suite(.serialized, .tags(.slow), .timeLimit(slowTestLimit)) struct CLITests {
    @Test func demoIsDeterministicAndExportMatchesSQLiteRowForRow() throws {
        let scratch = TempDir()
        let a = scratch.path("a.sqlite"), b = scratch.path("b.sqlite")
        let made = try CLI.run(["demo", "--rows", "20000", "--output", a])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stderr.contains("created"))
        _ = try CLI.run(["demo", "--rows", "20000", "--output", b])
        let queueA = try DatabaseQueue(path: a), queueB = try DatabaseQueue(path: b)
        let sumA = try queueA.read { db in try String.fetchOne(db, sql: "SELECT group_concat(title || year || ifnull(rating, 'n') || genre || ifnull(director_id, 'n'), ',') FROM movie") }
        let sumB = try queueB.read { db in try String.fetchOne(db, sql: "SELECT group_concat(title || year || ifnull(rating, 'n') || genre || ifnull(director_id, 'n'), ',') FROM movie") }
        #expect(sumA == sumB, "same rows, same data")
        let counts = try queueA.read { db in (try Int.fetchOne(db, sql: "SELECT count(*) FROM movie"), try Int.fetchOne(db, sql: "SELECT count(*) FROM director")) }
        #expect(counts.0 == 20000 && counts.1 == 400)
        let indexes = try queueA.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name") }
        #expect(indexes == ["director_name", "movie_director", "movie_genre_year", "movie_year"])

        let export = try CLI.run(["export", a, "--table", "movie", "--where", "year >= 1990 AND director.name CONTAINS[c] 'kuro'",
                                  "--sort", "rating desc, title", "--offset", "3", "--limit", "500", "--batch-size", "37"])
        #expect(export.status == 0, "\(export.stderr)")
        let expected = try queueA.read { db -> [String] in
            let rows = try Row.fetchAll(db, sql: """
                SELECT m.* FROM movie m LEFT JOIN director d ON d.id = m.director_id
                WHERE m.year >= 1990 AND instr(lower(d.name), 'kuro') > 0
                ORDER BY m.rating DESC, m.title ASC, m.rowid ASC LIMIT 500 OFFSET 3
                """)
            return rows.map { row in row.databaseValues.map(tsv).joined(separator: "\t") }
        }
        let lines = export.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "id\ttitle\tyear\trating\tvotes\tgenre\tdirector_id")
        #expect(Array(lines.dropFirst().dropLast()) == expected)
        #expect(expected.count == 500)
    }

    @Test func exportFormatsEscapeEverything() throws {
        let scratch = TempDir()
        let path = scratch.path("odd.sqlite")
        let q = try DatabaseQueue(path: path)
        try q.write { db in
            try db.execute(sql: "CREATE TABLE t(\"a,b\" TEXT, n, r REAL, bl BLOB)")
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?)", arguments: ["tab\there \"q\"\nline", nil, 1.5, Data([0, 1, 254])])
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?)", arguments: ["", 7, nil, nil])
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?)", arguments: ["esc \u{1B}[31m bell \u{07}", "x", 2.0, nil])
        }
        let csv = try CLI.run(["export", path, "--table", "t", "--format", "csv"])
        #expect(csv.stdout == "\"a,b\",n,r,bl\r\n\"tab\there \"\"q\"\"\nline\",,1.5,\\x0001fe\r\n\"\",7,,\r\nesc \u{1B}[31m bell \u{07},x,2.0,\r\n")
        let tsvOut = try CLI.run(["export", path, "--table", "t", "--format", "tsv"])
        #expect(tsvOut.stdout == "a,b\tn\tr\tbl\ntab\\there \"q\"\\nline\t\\N\t1.5\t\\x0001fe\n\t7\t\\N\t\\N\nesc \u{1B}[31m bell \u{07}\tx\t2.0\t\\N\n")
        let nd = try CLI.run(["export", path, "--table", "t", "--format", "ndjson"])
        let objects = try nd.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 3)
        #expect(objects[0]?["a,b"] as? String == "tab\there \"q\"\nline")
        #expect((objects[0]?["bl"] as? [String: String])?["$blob"] == Data([0, 1, 254]).base64EncodedString())
        #expect(objects[2]?["a,b"] as? String == "esc \u{1B}[31m bell \u{07}")
        #expect(!nd.stdout.contains("\u{1B}"), "NDJSON escapes control characters")
    }

    @Test func badInputIsOneLineAndTheRightExitCode() throws {
        let scratch = TempDir()
        let db = scratch.path("d.sqlite")
        _ = try CLI.run(["demo", "--rows", "50", "--output", db])
        let missing = scratch.path("missing.sqlite")
        // CSV files whose header is wrong, even with no rows after it (or rows a CR-only line end
        // hides in the header), and a key an INTEGER PRIMARY KEY cannot hold.
        func csv(_ name: String, _ text: String) throws -> String {
            let path = scratch.path(name)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let unknown = try csv("unknown.csv", "id,nickname\n")
        let twice = try csv("twice.csv", "id,ID,title\n1,1,x\n")
        let classicMac = try csv("mac.csv", "id,title\r1,x\r2,y\r")
        let notAnInteger = try csv("abc.csv", "id,title,year,genre\n100007,fine,2001,Drama\nabc,x,2002,Drama\n")
        let cases: [([String], Int32, String)] = [
            (["import", db, "--table", "movie", unknown], 2, "the header names \"nickname\", which is no column of movie"),
            (["import", db, "--table", "movie", twice], 2, "the header names the column id twice (\"id\" and \"ID\""),
            (["import", db, "--table", "movie", classicMac], 2, "which is no column of movie"),
            (["import", db, "--table", "movie", notAnInteger], 1, "row 2: movie.id = \"abc\" is not an integer"),
            (["export", missing, "--table", "movie"], 1, "no such file"),
            (["export", scratch.url.path, "--table", "movie"], 1, "is a directory"),
            (["export", db, "--table", "nope"], 1, "no table or view named \"nope\""),
            (["export", db, "--table", "movie", "--where", "year >"], 2, "column 7: expected a value after '>'"),
            (["export", db, "--table", "movie", "--where", "colour == 1"], 2, "no column named \"colour\""),
            (["export", db, "--table", "movie", "--sort", "year up"], 2, "sort error at column 6"),
            (["export", db, "--table", "movie", "--format", "xml"], 2, "xml"),
            (["export", db], 2, "--table"),
            (["demo", "--rows", "5", "--output", db], 2, "already exists"),
            (["nonsense"], 1, "nonsense: no such file"),   // the default command is the browser: a missing database
        ]
        for (args, status, fragment) in cases {
            let r = try CLI.run(args)
            #expect(r.status == status, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(fragment), "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): one line, got \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(args)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a missing path is never created")
    }

    @Test func benchOnAUsersFileLeavesItsFolderAsItWas() throws {
        let scratch = TempDir()
        let db = scratch.path("mine.sqlite")
        #expect(try CLI.run(["demo", "--rows", "5000", "--output", db]).status == 0)
        // SQLite's own -wal/-shm sidecars appear whenever a WAL file is opened (even read-only); only
        // files of ours would be a problem.
        func ours() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }.sorted()
        }
        let before = try ours()
        let original = try Data(contentsOf: URL(fileURLWithPath: db))
        let r = try CLI.run(["bench", "--db", db, "--repeats", "1", "--skip-eager", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try ours() == before, "no scratch copies beside the user's file")
        #expect(before == ["mine.sqlite"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == original, "the mutating trials ran on copies")
    }

    @Test func benchReportsRatiosAsJSONAndDrawsThePlot() throws {
        let scratch = TempDir()
        let plot = scratch.path("plot.svg")
        let r = try CLI.run(["bench", "--rows", "20000", "--repeats", "1", "--json", "--plot", plot])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["rows"] as? Int == 20000)
        let comparisons = try #require(json["comparisons"] as? [[String: Any]])
        #expect(comparisons.count == 12, "open ×2, first batch, G while the IDs load, a search, a search's match count, a paste, sweep, sweep reading every value, frequency ×2, summary")
        #expect(comparisons.contains { ($0["name"] as? String)?.hasPrefix("G while the IDs load") == true })
        #expect(comparisons.suffix(3).compactMap { $0["target"] as? Double } == [1.2, 1.2, 1.5])
        let sheets = try #require(json["sheets"] as? [String: Any])
        #expect(sheets["rows"] as? Int == 20000 && sheets["distinctValues"] as? Int == 20000, "F on id: every value distinct")
        #expect((sheets["summaryFirstSeconds"] as? Double ?? 0) > 0 && (sheets["summaryFirstSeconds"] as? Double ?? 0) <= (sheets["summarySeconds"] as? Double ?? 0))
        #expect((sheets["sheetsPeakRSS"] as? Int ?? 0) > 1_000_000 && ((sheets["scroll"] as? [String: Any])?["keys"] as? Int) == 3000)
        // (20,000 rows load before G is read: that one says it was not measured.)
        for c in comparisons where (c["name"] as? String)?.contains("not measured") != true {
            #expect((c["oursSeconds"] as? Double ?? 0) > 0 && (c["rawSeconds"] as? Double ?? 0) > 0, "\(c)")
        }
        let merge = try #require(json["merge"] as? [String: Any])
        #expect(merge["updatedIDs"] as? Int == 20000 && merge["objectsHeld"] as? Int == 1000)
        #expect(merge["refaulted"] as? Int == 1000, "every held object was among the updated rows")
        #expect((merge["seconds"] as? Double ?? 0) > 0 && (merge["arraySeconds"] as? Double ?? 0) > 0)
        let batch = try #require(json["batch"] as? [[String: Any]])
        #expect(batch.count == 3)
        #expect(batch.allSatisfy { ($0["rows"] as? Int ?? 0) > 1000 && ($0["batchSeconds"] as? Double ?? 0) > 0 && ($0["rawSeconds"] as? Double ?? 0) > 0 })
        #expect((batch[0]["objectSeconds"] as? Double ?? 0) > 0, "the object-by-object path is measured beside the batch")
        #expect((batch[0]["rowLoopSeconds"] as? Double ?? 0) > 0 && (batch[1]["rowLoopSeconds"] as? Double ?? 0) > 0, "and the raw row-by-row floor")
        let updateMemory = try #require(json["updateMemory"] as? [[String: Any]])
        #expect(updateMemory.count == 2 && updateMemory.allSatisfy {
            ($0["peakRSS"] as? Int ?? 0) >= ($0["openedRSS"] as? Int ?? Int.max) && ($0["openedRSS"] as? Int ?? 0) > 1_000_000
        })
        let memory = try #require(json["memory"] as? [[String: Any]])
        #expect(memory.count == 2)
        #expect(memory.allSatisfy { ($0["peakRSS"] as? Int ?? 0) > 1_000_000 })
        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("polyline") && svg.contains("eager array"))
    }

    @Test func benchMemoryOnlySweepsBothWaysAndPlots() throws {
        let scratch = TempDir()
        let plot = scratch.path("memory.svg")
        let r = try CLI.run(["bench", "--rows", "20000", "--memory-only", "--json", "--plot", plot])
        #expect(r.status == 0, "\(r.stderr)")
        let sweeps = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        #expect(sweeps.map { $0["mode"] as? String ?? "" }.count == 2)
        #expect(sweeps.allSatisfy { $0["rows"] as? Int == 20000 && ($0["samples"] as? [[Int]] ?? []).count > 10 })
        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        #expect(svg.contains("batched") && svg.contains("eager array"))
        let both = try CLI.run(["bench", "--browser-only", "--memory-only"])
        #expect(both.status == 2 && both.stderr.contains("do not go together"))
    }
}
