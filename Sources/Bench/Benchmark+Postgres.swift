// Built with the `PostgreSQL` trait only (see Package.swift).
#if PostgreSQL
import BatchStore
import BatchStorePostgres
import Browser
import FaultlineDemo
import Foundation
import Synchronization
import TerminalCore

/// `faultline bench <postgres URL>`: the batched result over PostgreSQL beside PostgreSQL's own
/// statements, in one run (issue 15's targets).
extension Benchmark {
    /// The table the bench makes when no `--table` is given, kept for the next run.
    public static let postgresBenchTable = "faultline_bench_movie"
    /// The unindexed column the bench sorts by.
    static let postgresSortColumn = "votes"

    public struct PostgresOptions: Sendable {
        public var url: String
        /// An existing table to measure (it needs a primary key and a `votes`-like column to sort
        /// by: `sortColumn`); nil makes `faultline_bench_movie` with `rows` rows.
        public var table: String?
        public var sortColumn: String?
        public var rows: Int
        public var repeats: Int
        public var json: Bool

        public init(url: String, table: String?, sortColumn: String?, rows: Int, repeats: Int, json: Bool) {
            self.url = url
            self.table = table
            self.sortColumn = sortColumn
            self.rows = rows
            self.repeats = repeats
            self.json = json
        }
    }

    struct PostgresFigures: Codable, Sendable {
        var rows: Int
        var table: String
        var sortColumn: String
        var server: String
        var comparisons: [Comparison]
        var faultMilliseconds: Double
        var faultTargetMilliseconds: Double
        var sweepPeakRSS: Int
        var sweepPeakRSSAtMillion: Int?
        /// `psql … | pspg` on the same sort, when it could run.
        var pager: PagerFigures?
        /// `j`/`k` typed while the sorted result's IDs load, in the browser.
        var loadKeys: BrowserBenchmark.LoadKeyFigures?
        var notMeasured: [String]
    }

    /// Measures and reports; `status` gets progress lines (not with `json`).
    public static func postgresReport(_ options: PostgresOptions, status: @escaping (String) -> Void) throws -> String {
        func note(_ line: String) { if !options.json { status(line) } }
        var store = try PostgresStore(url: options.url)
        let tableName: String
        if let table = options.table {
            tableName = try store.table(named: table).name
        } else {
            tableName = postgresBenchTable
            if try ensureBenchTable(store, rows: options.rows, note: note) { store = try PostgresStore(url: options.url) }
        }
        let sortColumn = options.sortColumn ?? postgresSortColumn
        let table = try store.table(named: tableName)
        guard case .primaryKey(let keyColumns) = table.rowKey, keyColumns.count == 1, let key = keyColumns.first else {
            throw BatchStoreError(.invalidArgument, "bench needs a table with a one-column primary key; \(table.name) has none")
        }
        guard table.column(named: sortColumn) != nil else {
            throw BatchStoreError(.noSuchAttribute, "\(table.name) has no column \(sortColumn.debugDescription) to sort by (--sort-column)")
        }
        let session = try store.openSession()
        defer { session.close() }
        let rows = Int(try session.query("SELECT count(*) FROM \(table.qualifiedSQL)").first?.first?.integerValue ?? 0)
        let q = table.qualifiedSQL
        let s = quoteIdentifier(sortColumn)
        let k = quoteIdentifier(key)
        let request = FetchRequest(entityName: table.name, sortDescriptors: [SortDescriptor(key: sortColumn)], fetchBatchSize: 100)
        var comparisons: [Comparison] = []

        note("opening \(formatCount(rows)) rows sorted by \(sortColumn) (unindexed), against CREATE TEMP TABLE … AS SELECT key … ORDER BY …")
        var ours: [Double] = [], raw: [Double] = []
        var sweepable: BatchFaultingCollection?
        for round in 0..<options.repeats {
            // The last round's tables go before either side is timed (ours is dropped by its
            // session as the result goes, without waiting), and the two take turns going first:
            // neither always runs beside the other's cleanup, or the other's pages being written.
            sweepable = nil
            try session.execute("DROP TABLE IF EXISTS pg_temp.bench_keys")
            let rawFirst = round % 2 == 0
            if rawFirst { raw.append(try time { try session.execute("CREATE TEMP TABLE bench_keys AS SELECT \(k) FROM \(q) ORDER BY \(s), \(k)") }) }
            ours.append(try time { sweepable = try store.fetchBatched(request, residentBatches: 8) })
            if !rawFirst { raw.append(try time { try session.execute("CREATE TEMP TABLE bench_keys AS SELECT \(k) FROM \(q) ORDER BY \(s), \(k)") }) }
        }
        try session.execute("DROP TABLE IF EXISTS pg_temp.bench_keys")
        comparisons.append(Comparison(name: "open, sorted by \(sortColumn)", oursSeconds: median(ours), rawSeconds: median(raw), target: 1.2,
                                      baseline: "CREATE TEMP TABLE AS SELECT key ORDER BY \(sortColumn), key"))

        // Unsorted, as the browser opens a table: with a progress handler, the IDs go in chunks
        // by key so that the status line counts rows; against the one statement that fills the
        // same ID table (each row's key and place, as ours holds them).
        note("opening \(formatCount(rows)) rows unsorted with progress (chunks by key), against CREATE TEMP TABLE … AS SELECT key, ctid … ORDER BY key")
        ours = []; raw = []
        var counted = 0
        var unsorted: BatchFaultingCollection?
        // Ours without a progress handler: the same open in one statement, fixed costs and all
        // (its session, the layout check), so that the chunks' own cost shows.
        var oneStatement: [Double] = []
        for round in 0..<options.repeats {
            unsorted = nil
            try session.execute("DROP TABLE IF EXISTS pg_temp.bench_keys")
            let rawFirst = round % 2 == 0
            if rawFirst { raw.append(try time { try session.execute("CREATE TEMP TABLE bench_keys AS SELECT \(k), ctid AS loc_tid FROM \(q) ORDER BY \(k)") }) }
            ours.append(try time {
                unsorted = try store.fetchBatched(FetchRequest(entityName: table.name, fetchBatchSize: 100), residentBatches: 8, progress: { p in
                    counted = max(counted, p.rowsScanned)
                    return .proceed
                })
            })
            unsorted = nil
            oneStatement.append(try time { unsorted = try store.fetchBatched(FetchRequest(entityName: table.name, fetchBatchSize: 100), residentBatches: 8) })
            if !rawFirst { raw.append(try time { try session.execute("CREATE TEMP TABLE bench_keys AS SELECT \(k), ctid AS loc_tid FROM \(q) ORDER BY \(k)") }) }
        }
        guard unsorted?.count == rows else {
            throw BatchStoreError(.invalidQuery, "the unsorted open holds \(unsorted?.count ?? 0) rows of \(rows)")
        }
        unsorted = nil
        try session.execute("DROP TABLE IF EXISTS pg_temp.bench_keys")
        comparisons.append(Comparison(name: "open unsorted, counting rows as they come (\(formatCount(counted)) seen before the end)", oursSeconds: median(ours),
                                      rawSeconds: median(raw), target: 1.2, baseline: "the same ID table in one statement: CREATE TEMP TABLE AS SELECT key, ctid ORDER BY key"))
        comparisons.append(Comparison(name: "  the same against our open without progress (one statement)", oursSeconds: median(ours), rawSeconds: median(oneStatement),
                                      target: nil, baseline: "fetchBatched without a progress handler: one CREATE TEMP TABLE AS"))

        note("the first screen of that sort, against … ORDER BY … LIMIT 100")
        ours = []; raw = []
        for _ in 0..<options.repeats {
            raw.append(try time { _ = try session.query("SELECT * FROM \(q) ORDER BY \(s), \(k) LIMIT 100") })
            let started = DispatchTime.now().uptimeNanoseconds
            var firstSeconds = 0.0
            let canceller = CancelAfterFirst()
            _ = try? store.fetchBatched(request, residentBatches: 8, firstBatch: { _ in
                firstSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                canceller.cancel()
            }, progress: { _ in canceller.isCancelled ? .cancel : .proceed })
            ours.append(firstSeconds)
        }
        let firstScreen = ours
        comparisons.append(Comparison(name: "first screen (100 rows) of that sort", oursSeconds: median(ours), rawSeconds: median(raw), target: 1.2,
                                      baseline: "SELECT * ORDER BY \(sortColumn), key LIMIT 100"))

        // G typed as the sorted result's first rows show: the browser reads the last screen by the
        // reversed query on a second session while the IDs load; against that query alone.
        note("G while that sort's IDs load, against … ORDER BY … DESC LIMIT a screen, alone")
        raw = []
        let shown: Int
        (ours, shown) = try peekTimes(repeats: options.repeats) { terminal in
            try Browser(context: PostgresContext(store: store), name: "bench", options: BrowserOptions(table: table.name, sort: sortColumn), backend: terminal)
        }
        let reversed = "SELECT * FROM \(q) ORDER BY \(s) DESC, \(k) DESC LIMIT \(shown)"
        for _ in 0..<options.repeats {
            raw.append(try time { _ = try session.query(reversed) })
        }
        // The same query while the same ID fetch sorts beside it on another session, as ours
        // runs: on two cores the two statements share them.
        var besideFetch: [Double] = []
        for _ in 0..<options.repeats {
            let fetching = try store.openSession()
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                _ = try? fetching.execute("CREATE TEMP TABLE bench_beside AS SELECT \(k), ctid AS loc_tid FROM \(q) ORDER BY \(s), \(k)")
                done.signal()
            }
            // As the first screen shows, about when G is read.
            Thread.sleep(forTimeInterval: median(firstScreen))
            besideFetch.append(try time { _ = try session.query(reversed) })
            done.wait()
            fetching.close()
        }
        note("keys typed every 20 ms while that sort's IDs load, in the browser…")
        let loadKeys = try BrowserBenchmark.keysDuringLoad(sortKey: sortColumn, repeats: options.repeats) { terminal in
            try Browser(context: PostgresContext(store: store), name: "bench", options: BrowserOptions(table: table.name, sort: sortColumn), backend: terminal)
        }
        comparisons.append(Comparison(name: "G while the IDs load: last \(shown) rows of that sort\(ours.isEmpty ? " (the fetch always ended first: not measured)" : "")",
                                      oursSeconds: ours.isEmpty ? 0 : median(ours), rawSeconds: median(raw), target: 1.5,
                                      baseline: "SELECT * ORDER BY \(sortColumn) DESC, key DESC LIMIT \(shown), alone"))
        comparisons.append(Comparison(name: "  the same against that query beside the same ID fetch", oursSeconds: ours.isEmpty ? 0 : median(ours),
                                      rawSeconds: median(besideFetch), target: 1.5,
                                      baseline: "SELECT * ORDER BY \(sortColumn) DESC, key DESC LIMIT \(shown) while CREATE TEMP TABLE AS SELECT key, ctid ORDER BY \(sortColumn), key runs on another session"))

        if let title = table.columns.first(where: { $0.kind == .text }), let searched = sweepable {
            note("a search for a missing value in \(title.name), against … WHERE \(title.name) ILIKE '%…%'")
            let text = "no value holds this"
            let predicate = try FetchPredicate(format: "string(%K) CONTAINS[c] %@", arguments: [.key(title.name), .value(.text(text))])
            ours = []; raw = []
            for _ in 0..<options.repeats {
                raw.append(try time { _ = try session.query("SELECT count(*) FROM \(q) WHERE \(quoteIdentifier(title.name)) ILIKE '%\(text)%'") })
                ours.append(try time { _ = try searched.firstPosition(matching: predicate, after: 0) })
            }
            comparisons.append(Comparison(name: "/ for a missing value in \(title.name)", oursSeconds: median(ours), rawSeconds: median(raw), target: 1.5,
                                          baseline: "SELECT count(*) … WHERE \(title.name) ILIKE '%…%'"))
        }

        note("faulting batches at random positions")
        guard let result = sweepable else { throw BatchStoreError(.invalidQuery, "no result to fault") }
        var g = SplitMix64(seed: 15)
        var faults: [Double] = []
        for _ in 0..<200 where result.count > 0 {
            let position = Int(g.next() % UInt64(result.count))
            faults.append(try time { _ = try result.object(at: position) })
        }
        let faultMilliseconds = median(faults) * 1000

        note("sweeping every row, every value (batches of 1,000), against a raw postgres-nio row stream of the same query")
        ours = []; raw = []
        /// Reads every value of every object, in order (what each sweep below times).
        func sweepEveryValue(_ all: BatchFaultingCollection) throws {
            var total = 0
            for object in all {
                guard let object else { continue }
                total &+= checksum(try (0..<table.columns.count).map { try object.value(at: $0) })
            }
            if total == 42 { note("") }
        }
        var sweepRequest = request
        sweepRequest.fetchBatchSize = 1_000
        var streamed = (0, 0)
        // Timed from the open result on, as the SQLite bench times its sweep (the open has its own
        // target above); the same runs with their open, beside it, without a target.
        var withOpen: [Double] = []
        for _ in 0..<options.repeats {
            let sink = Mutex(0)
            raw.append(try time {
                try session.streamRows("SELECT * FROM \(q) ORDER BY \(s), \(k)") { values in sink.withLock { $0 &+= checksum(values) } }
            })
            var opened = 0.0
            withOpen.append(try time {
                let started = DispatchTime.now().uptimeNanoseconds
                let all = try store.fetchBatched(sweepRequest, residentBatches: 2)
                opened = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                try sweepEveryValue(all)
                streamed = (all.statistics.batchesStreamed, all.statistics.batchesFaulted)
            })
            ours.append(withOpen[withOpen.count - 1] - opened)
        }
        note("the sweep read \(streamed.0) of its \(streamed.1) batches from one statement streaming the rest (PostgresSweepStream)")
        comparisons.append(Comparison(name: "full sweep, every value", oursSeconds: median(ours), rawSeconds: median(raw), target: 1.5,
                                      baseline: "postgres-nio row stream of SELECT * ORDER BY \(sortColumn), key (its sort included); ours from the open result on"))
        comparisons.append(Comparison(name: "  the same sweep with its open", oursSeconds: median(withOpen), rawSeconds: median(raw), target: nil,
                                      baseline: "the raw stream above"))
        let rawSweep = median(raw)

        // The same sweep read by batch faults alone (streamsSweeps off: every batch read as it is
        // when faulted), beside the one above (no target).
        note("the same sweep by batch faults alone (streamsSweeps = false), each batch read as it is when faulted")
        var byFaults: [Double] = []
        store.streamsSweeps = false
        defer { store.streamsSweeps = true }
        for _ in 0..<options.repeats {
            let all = try store.fetchBatched(sweepRequest, residentBatches: 2)
            byFaults.append(try time { try sweepEveryValue(all) })
        }
        store.streamsSweeps = true
        comparisons.append(Comparison(name: "  the same by faults alone (no stream)", oursSeconds: median(byFaults), rawSeconds: rawSweep,
                                      target: nil, baseline: "the raw stream above"))

        // What the identity map costs a sweep: the same sweep through a context, whose objects
        // are registered one per row (no target; beside the sweep above).
        note("the same sweep through a PostgresContext (every object registered in its identity map)")
        let storeSweep = median(ours)
        var throughContext: [Double] = []
        for _ in 0..<options.repeats {
            let context = PostgresContext(store: store)
            let all = try context.fetchBatched(sweepRequest, residentBatches: 2, firstBatch: nil, progress: nil)
            throughContext.append(try time { try sweepEveryValue(all) })
        }
        comparisons.append(Comparison(name: "  the same through a context (identity map)", oursSeconds: median(throughContext), rawSeconds: storeSweep,
                                      target: nil, baseline: "the sweep above, objects without a context"))

        var notMeasured: [String] = []
        if let column = table.column(named: sortColumn), [.integer, .real, .numeric].contains(column.kind), rows >= 4 {
            note("batch update of a quarter of the rows, against the same UPDATE through psql")
            do {
                if let update = try batchUpdateComparison(store: store, session: session, table: table, key: key, column: column.name, rows: rows,
                                                          repeats: options.repeats, url: options.url, note: note) {
                    comparisons.append(update)
                    note("the same through an open result's ID table (what D and U do): its count against count(*), the update against psql's")
                    comparisons += try resultEditComparisons(store: store, session: session, table: table, key: key, column: column.name, rows: rows,
                                                             repeats: options.repeats, url: options.url)
                } else {
                    notMeasured.append("batch update against psql's UPDATE: psql is not installed here")
                }
            } catch let error as BatchStoreError where error.code == .invalidQuery {
                notMeasured.append("batch update against psql's UPDATE: \(error.message)")
            }
        } else {
            notMeasured.append("batch update: the sort column \(sortColumn) is not a number to add 1 to")
        }

        note("import of a real-shaped CSV file against psql's \\copy of it")
        do {
            if let copy = try importComparison(session: session, url: options.url, rows: max(1, rows / 4), repeats: options.repeats) {
                comparisons.append(copy)
            } else {
                notMeasured.append("import against psql's \\copy: psql is not installed here")
            }
        } catch let error as BatchStoreError where error.code == .invalidQuery {
            notMeasured.append("import against psql's \\copy: \(error.message)")
        }

        note("client memory of full sweeps, each in a fresh process")
        let peak = try sweepWorker(url: options.url, table: table.name, sortColumn: sortColumn, limit: 0)
        let peakAtMillion = rows > 1_000_000 ? try sweepWorker(url: options.url, table: table.name, sortColumn: sortColumn, limit: 1_000_000) : nil

        note("psql … | pspg on the same sort, in a tmux pane")
        var pager: PagerFigures?
        do {
            let first = try session.query("SELECT \(k)::text FROM \(q) ORDER BY \(s), \(k) LIMIT 1").first?.first?.textValue ?? ""
            pager = try pagerFirstScreen(url: options.url, sql: "SELECT * FROM \(q) ORDER BY \(s), \(k)", column: sortColumn, firstKey: first,
                                         timeout: 600)
        } catch let error as BatchStoreError {
            notMeasured.append("psql | pspg first screen and memory: \(error.message)")
        }

        let figures = PostgresFigures(rows: rows, table: table.name, sortColumn: sortColumn, server: store.serverVersion, comparisons: comparisons,
                                      faultMilliseconds: faultMilliseconds, faultTargetMilliseconds: 2, sweepPeakRSS: peak, sweepPeakRSSAtMillion: peakAtMillion,
                                      pager: pager, loadKeys: loadKeys, notMeasured: notMeasured)
        return options.json ? try sortedJSON(figures) : postgresLines(figures).joined(separator: "\n")
    }

    /// The report's lines.
    static func postgresLines(_ f: PostgresFigures) -> [String] {
        func mb(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        var lines = ["PostgreSQL \(f.server): \(formatCount(f.rows)) rows of \(f.table), sorted by \(f.sortColumn) (no index); medians, one run"]
            + comparisonLines(f.comparisons, baselines: true)
        if let keys = f.loadKeys { lines += loadKeyLines(keys) }
        lines.append(pad("one batch fault (100 rows, random position)", 44) + String(format: "%.2f ms", f.faultMilliseconds)
                     + (f.faultMilliseconds <= f.faultTargetMilliseconds ? "   ≤ 2 ms ok" : "   ≤ 2 ms MISSED"))
        let rssOK = f.sweepPeakRSS <= 40 << 20
        lines.append(pad("client peak RSS, full sweep", 44) + mb(f.sweepPeakRSS) + (rssOK ? "   ≤ 40 MB ok" : "   ≤ 40 MB MISSED"))
        if let million = f.sweepPeakRSSAtMillion {
            let within = abs(f.sweepPeakRSS - million) <= 5 << 20
            lines.append(pad("  the same over the first 1M rows", 44) + mb(million) + (within ? "   within 5 MB ok" : "   within 5 MB MISSED"))
        }
        if let p = f.pager {
            let ours = f.comparisons.first { $0.name.hasPrefix("first screen") }?.oursSeconds
            lines.append(pad("psql | pspg, first screen", 44) + String(format: "%.3f s", p.firstScreenSeconds)
                         + (ours.map { String(format: "   (ours %.3f s: %.0fx sooner)", $0, p.firstScreenSeconds / max($0, 1e-6)) } ?? ""))
            lines.append(pad("psql | pspg, peak RSS", 44) + "pspg \(mb(p.pagerPeakRSS)), psql \(mb(p.psqlPeakRSS))   (ours \(mb(f.sweepPeakRSS)))")
        }
        for line in f.notMeasured { lines.append("not measured: " + line) }
        return lines
    }
}

/// Set once the first screen has come: the bench then cancels the ID fetch it does not need.
private final class CancelAfterFirst: @unchecked Sendable {
    private(set) var isCancelled = false
    func cancel() { isCancelled = true }
}
#endif
