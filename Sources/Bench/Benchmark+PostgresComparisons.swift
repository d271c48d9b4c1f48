// Built with the `PostgreSQL` trait only (see Package.swift).
#if PostgreSQL
import BatchStore
import BatchStorePostgres
import Browser
import FaultlineDemo
import Foundation
import Synchronization
import TerminalCore

extension Benchmark {
    /// Makes (or keeps, when it has `rows` rows) the bench's table; true when it made it.
    static func ensureBenchTable(_ store: PostgresStore, rows: Int, note: (String) -> Void) throws -> Bool {
        let session = try store.openSession()
        defer { session.close() }
        if store.schema.table(named: postgresBenchTable) != nil,
           try session.query("SELECT count(*) FROM \(quoteIdentifier(postgresBenchTable))").first?.first?.integerValue == Int64(rows) {
            return false
        }
        note("creating \(formatCount(rows)) rows in \(postgresBenchTable) (kept for the next run; DROP TABLE \(postgresBenchTable) removes it)")
        try session.execute("DROP TABLE IF EXISTS \(quoteIdentifier(postgresBenchTable))")
        try session.execute("""
            CREATE TABLE \(quoteIdentifier(postgresBenchTable)) (id bigint PRIMARY KEY, title text NOT NULL, year int, rating float8, votes int, genre text)
            """)
        try session.execute("""
            INSERT INTO \(quoteIdentifier(postgresBenchTable))
            SELECT g, 'Movie ' || g, CASE WHEN g % 50 = 0 THEN NULL ELSE 1900 + (g * 7919) % 125 END, ((g * 104729) % 100) / 10.0,
                   (g * 31337) % 1000003, (ARRAY['Drama','Comedy','Noir','Western','Horror','Musical','Documentary','Animation'])[1 + g % 8]
            FROM generate_series(1::bigint, \(rows)) AS g
            """)
        try session.execute("ANALYZE \(quoteIdentifier(postgresBenchTable))")
        return true
    }

    /// An edit of an open result (the rows of the first quarter of keys, sorted by `column`), as the
    /// browser's `D` and `U` run it, joined to the result's ID table: the confirmation's count
    /// against `SELECT count(*) … WHERE key <= …`, and the update (`c = c - 1`) against psql's
    /// `UPDATE … SET c = c + 1 WHERE key <= …`, alternating, each after a VACUUM.
    static func resultEditComparisons(store: PostgresStore, session: PostgresSession, table: PostgresTable, key: String, column: String, rows: Int,
                                      repeats: Int, url: String) throws -> [Comparison] {
        guard let psql = which("psql") else { return [] }
        let q = table.qualifiedSQL, k = quoteIdentifier(key), c = quoteIdentifier(column)
        guard let bound = try session.query("SELECT \(k) FROM \(q) ORDER BY \(k) OFFSET \(rows / 4 - 1) LIMIT 1").first?.first?.integerValue else { return [] }
        let predicate = try FetchPredicate("%K <= %@", .key(key), .value(.integer(bound)))
        let result = try store.fetchBatched(FetchRequest(entityName: table.name, predicate: predicate, sortDescriptors: [SortDescriptor(key: column)], fetchBatchSize: 100),
                                            residentBatches: 8)
        let delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: table.name, predicate: predicate))
        let update = BatchUpdateRequest(entityName: table.name, predicate: predicate, propertiesToUpdate: [(column, try UpdateExpression("\(column) - 1"))], resultType: .count)
        var count: (ours: [Double], raw: [Double]) = ([], []), edit: (ours: [Double], raw: [Double]) = ([], [])
        var counted = (ours: 0, raw: 0)
        // The engine's own semi-join for the same question: the same keys in a temp table of this
        // session (a temp table, as the result's ID table is: no parallel workers read it),
        // analysed, and the range's rows counted that are among them.
        try session.execute("DROP TABLE IF EXISTS pg_temp.bench_ids")
        try session.execute("CREATE TEMP TABLE bench_ids AS SELECT \(k) AS key FROM \(q) WHERE \(k) <= \(bound) ORDER BY \(c), \(k)")
        try session.execute("ANALYZE pg_temp.bench_ids")
        defer { _ = try? session.execute("DROP TABLE IF EXISTS pg_temp.bench_ids") }
        var semiJoin: [Double] = []
        for _ in 0..<repeats {
            count.raw.append(try time { counted.raw = Int(try session.query("SELECT count(*) FROM \(q) WHERE \(k) <= \(bound)").first?.first?.integerValue ?? -1) })
            count.ours.append(try time { counted.ours = try result.count(forDelete: delete) })
            semiJoin.append(try time { _ = try session.query("SELECT count(*) FROM \(q) AS t WHERE t.\(k) <= \(bound) AND t.\(k) IN (SELECT key FROM pg_temp.bench_ids)") })
            try session.execute("VACUUM \(q)")
            edit.raw.append(try time { _ = try runPsql(psql, url: url, sql: "UPDATE \(q) SET \(c) = \(c) + 1 WHERE \(k) <= \(bound)") })
            try session.execute("VACUUM \(q)")
            edit.ours.append(try time { _ = try result.execute(update) })
        }
        guard counted.ours == counted.raw else {
            throw BatchStoreError(.invalidQuery, "the result's delete count \(counted.ours) differs from count(*) \(counted.raw)")
        }
        return [
            Comparison(name: "D's count through the result, \(formatCount(counted.ours)) rows", oursSeconds: median(count.ours), rawSeconds: median(count.raw), target: 1.2,
                       baseline: "SELECT count(*) … WHERE \(key) <= \(bound)"),
            Comparison(name: "  the same count against the engine's semi-join", oursSeconds: median(count.ours), rawSeconds: median(semiJoin), target: 1.2,
                       baseline: "SELECT count(*) … WHERE \(key) <= \(bound) AND \(key) IN (SELECT key FROM a temp table of the result's keys)"),
            Comparison(name: "U through the result, \(formatCount(counted.ours)) rows", oursSeconds: median(edit.ours), rawSeconds: median(edit.raw), target: 1.5,
                       baseline: "psql -c 'UPDATE … SET \(column) = \(column) + 1 WHERE \(key) <= \(bound)'"),
        ]
    }

    /// `UPDATE … SET c = c + 1 WHERE key <= <the first quarter's last key>` through psql, against
    /// the same change as a ``BatchUpdateRequest`` through ``PostgresContext`` (`c = c - 1`, so each
    /// pair leaves the table as it was), alternating, each after a VACUUM so neither meets the
    /// other's dead rows. Nil when psql is not installed.
    static func batchUpdateComparison(store: PostgresStore, session: PostgresSession, table: PostgresTable, key: String, column: String, rows: Int,
                                      repeats: Int, url: String, note: (String) -> Void) throws -> Comparison? {
        guard let psql = which("psql") else { return nil }
        let q = table.qualifiedSQL, k = quoteIdentifier(key), c = quoteIdentifier(column)
        guard let last = try session.query("SELECT \(k) FROM \(q) ORDER BY \(k) OFFSET \(rows / 4 - 1) LIMIT 1").first?.first,
              let bound = last.integerValue else {
            throw BatchStoreError(.invalidQuery, "bench needs an integer primary key to choose a quarter of the rows by")
        }
        let context = PostgresContext(store: store)
        let request = BatchUpdateRequest(entityName: table.name, predicate: try FetchPredicate("%K <= %@", .key(key), .value(.integer(bound))),
                                         propertiesToUpdate: [(column, try UpdateExpression("\(column) - 1"))], resultType: .count)
        var ours: [Double] = [], raw: [Double] = []
        var changed = (psql: "", ours: 0)
        for _ in 0..<repeats {
            try session.execute("VACUUM \(q)")
            raw.append(try time { changed.psql = try runPsql(psql, url: url, sql: "UPDATE \(q) SET \(c) = \(c) + 1 WHERE \(k) <= \(bound)") })
            try session.execute("VACUUM \(q)")
            ours.append(try time { changed.ours = try context.execute(request, undoable: false).count ?? 0 })
        }
        guard changed.psql == "UPDATE \(changed.ours)" else {
            throw BatchStoreError(.invalidQuery, "psql answered \(changed.psql.debugDescription), the batch update changed \(changed.ours) rows")
        }
        return Comparison(name: "batch update, \(formatCount(changed.ours)) rows", oursSeconds: median(ours), rawSeconds: median(raw), target: 1.2,
                          baseline: "psql -c 'UPDATE … SET \(column) = \(column) + 1 WHERE \(key) <= \(bound)'")
    }

    /// Runs one statement through psql (`-X`: no ~/.psqlrc) and returns its command tag.
    /// `faultline import URL FILE --table faultline_bench_wide` against `psql -c '\copy … FROM FILE
    /// CSV HEADER'` into the same empty table, alternating, each a fresh process: a real-shaped
    /// file of `rows` rows (24 columns of integers, reals, text with quotes and commas and
    /// timestamps, a fifth of the values NULL, a foreign key the server checks on every row).
    /// Nil when psql is not installed.
    static func importComparison(session: PostgresSession, url: String, rows: Int, repeats: Int) throws -> Comparison? {
        guard let psql = which("psql") else { return nil }
        let parent = "faultline_bench_parent", wide = "faultline_bench_wide"
        var columns = ["id bigint PRIMARY KEY", "parent_id int REFERENCES \(parent)(id)"]
        var values = ["i", "CASE WHEN i % 7 = 0 THEN NULL ELSE 1 + i % 1000 END"]
        for k in 0..<22 {
            let null = "CASE WHEN (i + \(k)) % 5 = 0 THEN NULL ELSE "
            switch k % 4 {
            case 0: columns.append("n\(k) bigint"); values.append(null + "(i * \(k + 7)) % 100003 END")
            case 1: columns.append("r\(k) float8"); values.append(null + "(i % 9973) / 7.0 END")
            case 2: columns.append("t\(k) text"); values.append(null + "'value ' || (i * \(k + 3)) % 50021 || ', \"quoted\"' END")
            default: columns.append("at\(k) timestamp"); values.append(null + "to_timestamp(1700000000 + i * 61)::timestamp END")
            }
        }
        try session.execute("DROP TABLE IF EXISTS \(wide)")
        try session.execute("DROP TABLE IF EXISTS \(parent)")
        try session.execute("CREATE TABLE \(parent)(id int PRIMARY KEY)")
        try session.execute("INSERT INTO \(parent) SELECT generate_series(1, 1000)")
        try session.execute("CREATE TABLE \(wide)(\(columns.joined(separator: ", ")))")
        try session.execute("INSERT INTO \(wide) SELECT \(values.joined(separator: ", ")) FROM generate_series(1, \(rows)) AS i")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("faultline-bench-\(getpid())-wide.csv").path
        defer {
            try? FileManager.default.removeItem(atPath: file)
            _ = try? session.execute("DROP TABLE IF EXISTS \(wide)")
            _ = try? session.execute("DROP TABLE IF EXISTS \(parent)")
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        try runTimed([executable, "export", url, "--table", wide, "--format", "csv"], stdout: file)
        var ours: [Double] = [], raw: [Double] = []
        for _ in 0..<repeats {
            try session.execute("TRUNCATE \(wide)")
            raw.append(try runTimed([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", "\\copy \(wide) FROM '\(file)' CSV HEADER"]).seconds)
            try session.execute("TRUNCATE \(wide)")
            ours.append(try runTimed([executable, "import", url, file, "--table", wide]).seconds)
        }
        guard try session.query("SELECT count(*) FROM \(wide)").first?.first?.integerValue == Int64(rows) else {
            throw BatchStoreError(.invalidQuery, "the import did not write \(rows) rows")
        }
        return Comparison(name: "import csv, \(formatCount(rows)) rows × 24 columns, NULLs, a foreign key", oursSeconds: median(ours), rawSeconds: median(raw),
                          target: 1.5, baseline: "psql -c '\\copy … FROM file CSV HEADER' (COPY FROM STDIN)")
    }

    static func runPsql(_ psql: String, url: String, sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psql)
        process.arguments = ["-X", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let problem = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BatchStoreError(.invalidQuery, "psql failed: \(String(decoding: problem, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The peak RSS of one full batched sweep in a fresh process (`bench-worker URL --mode pg-sweep:…`).
    static func sweepWorker(url: String, table: String, sortColumn: String, limit: Int) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = [workerCommand, url, "--mode", "pg-sweep", "--batch-size", "1000", "--table", table, "--sort", sortColumn, "--limit", String(limit)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let peak = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BatchStoreError(.invalidQuery, "the memory worker failed (exit \(process.terminationStatus))")
        }
        return peak
    }

    /// The worker's side: one sweep of `table` sorted by `sort` (the first `limit` rows; 0: all),
    /// every value read, batches of `batchSize` with two resident; prints the peak RSS in bytes.
    public static func postgresSweepWorker(url: String, table: String, sort: String, limit: Int, batchSize: Int, output: (String) -> Void) throws {
        let store = try PostgresStore(url: url)
        let entity = try store.entity(named: table)
        let rows = try store.fetchBatched(FetchRequest(entityName: entity.name, sortDescriptors: [SortDescriptor(key: sort)], fetchLimit: limit,
                                                       fetchBatchSize: batchSize), residentBatches: 2)
        var total = 0
        for object in rows {
            guard let object else { continue }
            total &+= checksum(try entity.attributes.indices.map { try object.value(at: $0) })
        }
        if total == 42 { output("") }
        output(String(ProcessMemory.peakResidentBytes()))
    }

    /// The worker's side of a fault measurement: `table` sorted by `sort` opened once, then 400
    /// batches of `batchSize` faulted at random positions (the bench's seed); prints the 10th,
    /// 50th and 90th percentiles in milliseconds.
    public static func postgresFaultWorker(url: String, table: String, sort: String, batchSize: Int, output: (String) -> Void) throws {
        let store = try PostgresStore(url: url)
        let entity = try store.entity(named: table)
        let rows = try store.fetchBatched(FetchRequest(entityName: entity.name, sortDescriptors: [SortDescriptor(key: sort)], fetchBatchSize: batchSize),
                                          residentBatches: 8)
        var g = SplitMix64(seed: 15)
        var faults: [Double] = []
        let before = threadTicks()
        for _ in 0..<400 where rows.count > 0 {
            let position = Int(g.next() % UInt64(rows.count))
            faults.append(try time { _ = try rows.object(at: position) })
        }
        let after = threadTicks()
        faults.sort()
        guard !faults.isEmpty else { return }
        output([0.1, 0.5, 0.9].map { String(format: "%.3f", faults[Int(Double(faults.count - 1) * $0)] * 1000) }.joined(separator: " "))
        if ProcessInfo.processInfo.environment["FAULTLINE_FAULT_AB"] != nil {
            // The same faults read as rows, interleaved with records at other places of the same result order.
            store.faultsAsRecords = false
            let asRows = try store.fetchBatched(FetchRequest(entityName: entity.name, sortDescriptors: [SortDescriptor(key: sort)], fetchBatchSize: batchSize),
                                                residentBatches: 8)
            var a: [Double] = [], b: [Double] = []
            for _ in 0..<400 {
                a.append(try time { _ = try rows.object(at: Int(g.next() % UInt64(rows.count))) })
                b.append(try time { _ = try asRows.object(at: Int(g.next() % UInt64(rows.count))) })
            }
            a.sort(); b.sort()
            output(String(format: "interleaved: records %.3f ms, rows %.3f ms (medians)", a[200] * 1000, b[200] * 1000))
        }
        // CPU time per fault by thread (from /proc, in ticks of 10 ms).
        for (name, ticks) in after.sorted(by: { $0.key < $1.key }) {
            let spent = ticks - (before[name] ?? 0)
            if spent > 0 { output(String(format: "%@ %.3f ms CPU a fault", name, Double(spent) * 10 / Double(faults.count))) }
        }
    }

    /// Experiment: the client's CPU for 100-row batches read as 7 cells a row, 1 cell, or one record.
    public static func postgresCellsWorker(url: String, output: (String) -> Void) throws {
        let store = try PostgresStore(url: url)
        let session = try store.openSession()
        defer { session.close() }
        try session.execute("CREATE TEMP TABLE bs_x USING heap AS SELECT t.id AS key, t.ctid AS loc_tid FROM faultline_bench_movie t ORDER BY votes, id")
        try session.execute("SET jit = off")
        let rows = Int(try session.query("SELECT count(*) FROM bs_x").first?.first?.integerValue ?? 0)
        let cols = "t.\"id\", t.\"title\"::text, t.\"year\", t.\"rating\", t.\"votes\", t.\"genre\"::text"
        let inner = "SELECT ((ids.ctid::text::point)[0]::bigint * 185 + (ids.ctid::text::point)[1]::bigint) AS pos, r.* FROM pg_temp.bs_x AS ids CROSS JOIN LATERAL (SELECT \(cols) FROM faultline_bench_movie AS t WHERE t.ctid = ids.loc_tid AND t.id = ids.key LIMIT 1) AS r WHERE ids.ctid = ANY (CAST($1::text AS tid[]))"
        let variants = [("7 cells", inner), ("1 cell", "SELECT f.pos FROM (\(inner)) AS f"), ("record text", "SELECT ROW(f.*)::text FROM (\(inner)) AS f"), ("1 row, 7 cells", "SELECT * FROM (\(inner)) AS f LIMIT 1"), ("no row", "SELECT 1 WHERE $1::text IS NULL"), ("array of records as bytea", "SELECT array_send(array_agg(ROW(f.*))) FROM (\(inner)) AS f")]
        for (name, sql) in variants {
            var g = SplitMix64(seed: 15)
            var times: [Double] = []
            let before = threadTicks()
            for _ in 0..<400 {
                let first = Int(g.next() % UInt64(rows / 100)) * 100
                let list = "{" + (first..<first + 100).map { "\"(\($0 / 185),\($0 % 185 + 1))\"" }.joined(separator: ",") + "}"
                times.append(try time { _ = try session.query(sql, [.text(list)]) })
            }
            let after = threadTicks()
            times.sort()
            let cpu = after.map { "\($0.key.prefix(8)) \(String(format: "%.3f", Double($0.value - (before[$0.key] ?? 0)) * 10 / 400))" }.sorted().joined(separator: ", ")
            output("\(name): median \(String(format: "%.3f", times[200] * 1000)) ms; CPU a batch: \(cpu)")
        }
    }

    /// Ticks of CPU (user + system) each thread of this process has used, by name and id.
    static func threadTicks() -> [String: Int] {
        var ticks: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
            let name = String(stat[stat.index(after: open)..<close])
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
            ticks["\(name)/\(tid)"] = user + system
        }
        return ticks
    }

    /// A number from every value, so no read is optimised away.
    static func checksum(_ values: [SQLValue]) -> Int {
        var sum = 0
        for value in values {
            switch value {
            case .integer(let n): sum &+= Int(truncatingIfNeeded: n)
            case .real(let d): sum &+= Int(d)
            case .text(let t): sum &+= t.utf8.count
            case .blob(let b): sum &+= b.count
            case .null: sum &+= 1
            }
        }
        return sum
    }
}
#endif
