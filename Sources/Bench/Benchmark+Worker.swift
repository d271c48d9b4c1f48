import BatchStore
import Foundation

extension Benchmark {
    /// The hidden subcommand the bench runs in fresh processes of its own executable, for figures
    /// that need a process of their own (memory peaks): `<executable> bench-worker DB [--eager]
    /// [--batch-size N] [--mode M]`.
    public static let workerCommand = "bench-worker"

    /// One worker run in this fresh process; `output` prints each line of its result. `mode` is
    /// `sweep` (the memory of one full sweep, batched or `eager`, as JSON), `stores`,
    /// `update-batch`, `update-objects`, `sheets` (JSON for the bench), or `insert-ratio`, `update-ratio`,
    /// `merge`, `sweep-ratio`, `sheets-ratio` (lines for measuring by hand), `sweep-ours`, `summary-ours`
    /// (ours alone, for a profiler).
    public static func worker(database: String, mode: String, eager: Bool, batchSize: Int, output: (String) -> Void) throws {
        switch mode {
        case "stores":
            let f = try stores(path: database, parts: 4, repeats: 3)
            output(String(decoding: try JSONEncoder().encode(f), as: UTF8.self))
        case "insert-ratio":
            defer { removeScratchDirectory() }
            let b = try batchInsert(path: database, rows: 1_000_000, repeats: 3)
            output(String(format: "insert: batch %.3f s, raw %.3f s, ratio %.2fx", b.batchSeconds, b.rawSeconds, b.ratioToRaw))
        case "update-ratio":
            defer { removeScratchDirectory() }
            for b in [try batchUpdate(path: database, repeats: 1), try batchDelete(path: database, repeats: 1)] {
                output(String(format: "%@: batch %.3f s, raw %.3f s (%.2fx), object by object %.3f s (batch %.1fx faster), raw row by row %.3f s (batch %.1fx faster)",
                              b.name, b.batchSeconds, b.rawSeconds, b.ratioToRaw, b.objectSeconds ?? 0, b.speedupOverObjects ?? 0, b.rowLoopSeconds ?? 0, b.speedupOverRowLoop ?? 0))
            }
        case "merge":
            defer { removeScratchDirectory() }
            let m = try merge(path: database, repeats: 5)
            output(String(format: "merge %d updated IDs into %d held objects: stored %.1f ms, from an array %.1f ms (%d refaulted)",
                          m.updatedIDs, m.objectsHeld, m.seconds * 1000, m.arraySeconds * 1000, m.refaulted))
        case "sweep-ratio":
            let c = try sweep(path: database, batchSize: batchSize, repeats: 5)
            output(String(format: "sweep: ours %.3f s, raw %.3f s, ratio %.2fx", c.oursSeconds, c.rawSeconds, c.ratio))
            let e = try sweep(path: database, batchSize: batchSize, repeats: 5, everyValue: true)
            output(String(format: "sweep reading every value: ours %.3f s, raw %.3f s, ratio %.2fx", e.oursSeconds, e.rawSeconds, e.ratio))
        case "sweep-floor":
            // What the batch fault's SQL costs by itself: the raw scan beside the same rows read in
            // batches of `batchSize`, through an ID table (`… CROSS JOIN movie ON rowid = key WHERE
            // pos BETWEEN ? AND ?`) and as rowid ranges, all with the C API, every column into
            // Swift values.
            let raw = try RawConnection(path: database)
            try raw.exec("CREATE TEMP TABLE ids(pos INTEGER PRIMARY KEY, key); INSERT INTO ids(key) SELECT rowid FROM movie ORDER BY rowid")
            let columns = "t.id, t.title, t.year, t.rating, t.votes, t.genre, t.director_id"
            var scan: [Double] = [], batched: [Double] = [], ranges: [Double] = []
            for _ in 0..<5 {
                scan.append(try time { try raw.sweep("SELECT rowid, id, title, year, rating, votes, genre, director_id FROM movie ORDER BY rowid") })
                batched.append(try time { try raw.batchedSweep("SELECT ids.pos, ids.key, \(columns) FROM ids CROSS JOIN movie AS t ON t.rowid = ids.key WHERE ids.pos BETWEEN ? AND ?", batchSize: batchSize) })
                ranges.append(try time { try raw.batchedSweep("SELECT t.rowid, \(columns) FROM movie AS t WHERE t.rowid BETWEEN ? AND ?", batchSize: batchSize) })
            }
            output(String(format: "scan %.3f s; in batches of %d: join %.3f s (%.2fx), rowid ranges %.3f s (%.2fx)", median(scan), batchSize,
                          median(batched), median(batched) / median(scan), median(ranges), median(ranges) / median(scan)))
        case "query-first", "query-open":
            // The browser's two steps on a query's result: its first batch (`… LIMIT 100`), or
            // the whole result into the ID table; prints the rows it has.
            let store = try PersistentStore(path: database, options: .init(readOnly: true, query: queryJoin))
            let context = try ManagedObjectContext(store: store)
            guard let entity = store.queryEntity else { return }
            let request = FetchRequest(entityName: entity.name, fetchBatchSize: batchSize)
            let n = mode == "query-first" ? try context.beginFetch(request).firstBatch.count : try context.fetchBatched(request).count
            output("\(n)")
        case "sheets":
            let f = try sheets(path: database)
            output(String(decoding: try JSONEncoder().encode(f), as: UTF8.self))
        case "sheets-ratio":
            // The sheets' ratios alone, for measuring by hand.
            for c in [try frequency(path: database, filtered: false, repeats: 3), try frequency(path: database, filtered: true, repeats: 3),
                      try summary(path: database, repeats: 3)] {
                output(String(format: "%@: ours %.3f s, raw %.3f s, ratio %.2fx", c.name, c.oursSeconds, c.rawSeconds, c.ratio))
            }
        case "summary-ours":
            // Ours alone, for a profiler: the summary of every column, once.
            let rows = try ManagedObjectContext(store: try PersistentStore(path: database, options: .init(readOnly: true)))
                .fetchBatched(FetchRequest(entityName: "movie", fetchBatchSize: batchSize))
            for column in movieColumns { output("\(try rows.summary(of: column, rows: .matchingNow))") }
        case "sweep-ours", "sweep-ours-every":
            // Ours alone, for a profiler (`perf record`, `valgrind --tool=callgrind`): the sweep
            // the ratio times, five times over, without the raw loop in the same profile.
            let store = try PersistentStore(path: database, options: .init(readOnly: true))
            var sink = 0
            for _ in 0..<5 {
                let context = try ManagedObjectContext(store: store)
                let rows = try context.fetchBatched(FetchRequest(entityName: "movie", fetchBatchSize: batchSize), residentBatches: 2)
                sink &+= try sweepBody(rows, everyValue: mode == "sweep-ours-every")
            }
            output("swept, sink \(sink)")
        case "update-batch", "update-objects":
            defer { removeScratchDirectory() }
            let m = try updateMemory(path: database, objects: mode == "update-objects")
            output("[\(m.start), \(m.opened), \(m.peak)]")
        default:
            let sweep = try memorySweep(path: database, eager: eager, batchSize: batchSize, samples: 100)
            output(String(decoding: try JSONEncoder().encode(sweep), as: UTF8.self))
        }
    }
}
