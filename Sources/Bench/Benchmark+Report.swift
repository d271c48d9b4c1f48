import BatchStore
import FaultlineDemo
import Foundation

extension Benchmark {
    /// What `faultline bench` measures and how it reports (its command-line options).
    public struct Options: Sendable {
        /// Rows of demo data to create when `db` is nil.
        public var rows: Int
        /// An existing demo database to measure instead of a new one.
        public var db: String?
        /// Runs per timing; the median is reported.
        public var repeats: Int
        /// One JSON object instead of a table.
        public var json: Bool
        /// Where to write an SVG of memory against rows swept.
        public var plot: String?
        /// Skip the eager-array memory sweep.
        public var skipEager: Bool
        /// Measure only the browser's scroll keys.
        public var browserOnly: Bool
        /// Measure only the memory of full sweeps.
        public var memoryOnly: Bool
        /// Measure only export and import against the sqlite3 shell.
        public var shellOnly: Bool
        /// Measure only the frequency and summary sheets.
        public var sheetsOnly: Bool

        public init(rows: Int = 1_000_000, db: String? = nil, repeats: Int = 3, json: Bool = false, plot: String? = nil,
                    skipEager: Bool = false, browserOnly: Bool = false, memoryOnly: Bool = false, shellOnly: Bool = false, sheetsOnly: Bool = false) {
            self.rows = rows
            self.db = db
            self.repeats = repeats
            self.json = json
            self.plot = plot
            self.skipEager = skipEager
            self.browserOnly = browserOnly
            self.memoryOnly = memoryOnly
            self.shellOnly = shellOnly
            self.sheetsOnly = sheetsOnly
        }
    }

    /// Runs `faultline bench`: creates a demo database of `options.rows` movies with `createDemo`
    /// (unless `options.db` names one), measures, and returns the report for stdout (a table, or
    /// one JSON object). Progress lines go to `status` as they happen (none with `json`). Memory is
    /// measured in fresh processes of this executable (`workerCommand`).
    public static func report(_ options: Options, status: @escaping (String) -> Void,
                              createDemo: (_ path: String, _ rows: Int) throws -> Void) throws -> String {
        var path = options.db ?? ""
        var tempDir: URL?
        if options.db == nil {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("faultline-bench-\(getpid())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            tempDir = dir
            path = dir.appendingPathComponent("bench.sqlite").path
            try createDemo(path, options.rows)
        }
        defer {
            if let tempDir { try? FileManager.default.removeItem(at: tempDir) }
            removeScratchDirectory()
        }
        return try BenchRun(options: options, path: path, status: status).run()
    }
}

/// One run of `faultline bench` on the database at `path`.
struct BenchRun {
    let options: Options
    let path: String
    let status: (String) -> Void
    typealias Options = Benchmark.Options

    /// A progress line, unless the output is JSON.
    func note(_ line: String) { if !options.json { status(line) } }

    func run() throws -> String {
        let repeats = options.repeats
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let actualRows = try ManagedObjectContext(store: store).count(for: FetchRequest(entityName: "movie"))

        if options.memoryOnly {
            let sweeps = try memorySweeps()
            try writePlot(sweeps, rows: actualRows)
            if options.json { return String(decoding: try JSONEncoder().encode(sweeps), as: UTF8.self) }
            return (memoryTable(sweeps) + plotWritten()).joined(separator: "\n")
        }

        if options.shellOnly {
            let shell = try shellComparisons()
            return options.json ? try sortedJSON(shell) : shellLines(shell, rows: actualRows).joined(separator: "\n")
        }

        if options.sheetsOnly {
            let (comparisons, figures) = try sheetMeasurements()
            if options.json {
                struct Report: Encodable { var comparisons: [Benchmark.Comparison]; var sheets: Benchmark.SheetFigures }
                return try sortedJSON(Report(comparisons: comparisons, sheets: figures))
            }
            return (comparisonLines(comparisons) + [""] + sheetLines(figures)).joined(separator: "\n")
        }

        note("measuring the browser: scroll keys to finished frames…")
        let scroll = try BrowserBenchmark.scroll(path: path)
        if options.browserOnly {
            note("measuring G while the IDs load, a search for a missing value, a paste…")
            let last = [try Benchmark.lastRowsDuringLoad(path: path, sortKey: "title", repeats: repeats),
                        try Benchmark.searchMissing(path: path, sortKey: "title", repeats: repeats),
                        try Benchmark.searchCount(path: path, repeats: repeats),
                        try Benchmark.paste(path: path, repeats: repeats)]
            note("measuring keys typed while a sort's IDs load…")
            let loadKeys = try BrowserBenchmark.keysDuringLoad(path: path, sortKey: "title", repeats: repeats)
            if options.json {
                struct Report: Encodable { var scroll: BrowserBenchmark.Figures; var keysDuringLoad: BrowserBenchmark.LoadKeyFigures; var comparisons: [Benchmark.Comparison] }
                return try sortedJSON(Report(scroll: scroll, keysDuringLoad: loadKeys, comparisons: last))
            }
            return (scrollLines(scroll) + loadKeyLines(loadKeys) + [""] + comparisonLines(last)).joined(separator: "\n")
        }
        var comparisons: [Benchmark.Comparison] = []
        func step(_ name: String, _ body: () throws -> Benchmark.Comparison) rethrows {
            note("measuring \(name)…")
            comparisons.append(try body())
        }
        try step("opening, unsorted") { try Benchmark.opening(path: path, sortKey: nil, repeats: repeats) }
        try step("opening, sorted by title") { try Benchmark.opening(path: path, sortKey: "title", repeats: repeats) }
        try step("first batch") { try Benchmark.firstBatch(path: path, sortKey: "title", batchSize: 100, repeats: repeats) }
        try step("G while the IDs load") { try Benchmark.lastRowsDuringLoad(path: path, sortKey: "title", repeats: repeats) }
        try step("a search for a missing value") { try Benchmark.searchMissing(path: path, sortKey: "title", repeats: repeats) }
        try step("a search's match count") { try Benchmark.searchCount(path: path, repeats: repeats) }
        try step("a paste into a prompt") { try Benchmark.paste(path: path, repeats: repeats) }
        note("measuring keys typed while a sort's IDs load…")
        let loadKeys = try BrowserBenchmark.keysDuringLoad(path: path, sortKey: "title", repeats: repeats)
        try step("full sweep") { try Benchmark.sweep(path: path, batchSize: 100, repeats: repeats) }
        try step("full sweep reading every value") { try Benchmark.sweep(path: path, batchSize: 100, repeats: repeats, everyValue: true) }
        let (sheetComparisons, sheets) = try sheetMeasurements()
        comparisons += sheetComparisons

        note("measuring a merge (a batch update of up to 1M rows on a scratch copy first)…")
        let merge = try Benchmark.merge(path: path, repeats: repeats)

        note("measuring several stores: the same rows split over 4 files (separate process)…")
        let stores = try JSONDecoder().decode(Benchmark.StoresFigures.self, from: try runWorkerProcess([path, "--mode", "stores"]))

        note("measuring batch update, delete and insert (each on a fresh copy of the file)…")
        let batches = [
            try Benchmark.batchUpdate(path: path, repeats: repeats),
            try Benchmark.batchDelete(path: path, repeats: repeats),
            try Benchmark.batchInsert(path: path, rows: min(actualRows, 1_000_000), repeats: repeats),
        ]
        let targets = [1.2, 1.2, 1.5]
        note("measuring memory of batch and object-by-object updates (separate processes)…")
        let updateMemory = [try runUpdateWorker(objects: false), try runUpdateWorker(objects: true)]
        Benchmark.removeScratchDirectory()
        let shell = try shellComparisons()

        let sweeps = try memorySweeps()
        try writePlot(sweeps, rows: actualRows)
        if options.json {
            struct Report: Encodable {
                var rows: Int
                var sqliteVersion: String
                var comparisons: [Entry]
                var memory: [Benchmark.MemorySweep]
                var merge: Merge
                var batch: [Batch]
                var updateMemory: [UpdateMemory]
                var browserScroll: BrowserBenchmark.Figures
                var keysDuringLoad: BrowserBenchmark.LoadKeyFigures
                var stores: Benchmark.StoresFigures
                var againstShell: [Benchmark.ShellComparison]
                var sheets: Benchmark.SheetFigures
                struct Batch: Encodable { var name: String; var rows: Int; var batchSeconds: Double; var rawSeconds: Double; var ratioToRaw: Double; var target: Double; var objectSeconds: Double?; var speedupOverObjects: Double?; var rowLoopSeconds: Double?; var speedupOverRowLoop: Double?; var baseline: String }
                struct UpdateMemory: Encodable { var path: String; var startRSS: Int; var openedRSS: Int; var peakRSS: Int }
                struct Merge: Encodable { var updatedIDs: Int; var objectsHeld: Int; var seconds: Double; var arraySeconds: Double; var refaulted: Int; var targetSeconds: Double }
                struct Entry: Encodable {
                    var name: String; var oursSeconds: Double; var rawSeconds: Double; var ratio: Double; var target: Double?; var baseline: String; var meetsTarget: Bool?
                }
            }
            let report = Report(rows: actualRows, sqliteVersion: SQLiteInfo.version, comparisons: comparisons.map { c in
                .init(name: c.name, oursSeconds: c.oursSeconds, rawSeconds: c.rawSeconds, ratio: c.ratio, target: c.target,
                      baseline: c.baseline, meetsTarget: c.target.map { t in c.ratio <= t })
            }, memory: sweeps, merge: .init(updatedIDs: merge.updatedIDs, objectsHeld: merge.objectsHeld, seconds: merge.seconds, arraySeconds: merge.arraySeconds,
                                                    refaulted: merge.refaulted, targetSeconds: 0.05),
               batch: zip(batches, targets).map { b, t in .init(name: b.name, rows: b.rows, batchSeconds: b.batchSeconds, rawSeconds: b.rawSeconds, ratioToRaw: b.ratioToRaw, target: t, objectSeconds: b.objectSeconds, speedupOverObjects: b.speedupOverObjects, rowLoopSeconds: b.rowLoopSeconds, speedupOverRowLoop: b.speedupOverRowLoop, baseline: b.baseline) },
               updateMemory: updateMemory.enumerated().map { i, m in .init(path: i == 0 ? "batch" : "object by object", startRSS: m.start, openedRSS: m.opened, peakRSS: m.peak) },
               browserScroll: scroll, keysDuringLoad: loadKeys, stores: stores, againstShell: shell, sheets: sheets)
            return try sortedJSON(report)
        }
        var out: [String] = []
        out.append("faultline bench: \(formatCount(actualRows)) rows, SQLite \(SQLiteInfo.version), median of \(repeats)")
        out.append("")
        out += comparisonLines(comparisons)
        out.append(pad("merge \(formatCount(merge.updatedIDs)) updated IDs into \(merge.objectsHeld) held objects", 44)
                   + pad(String(format: "%.1f ms", merge.seconds * 1000), 20) + (merge.seconds < 0.05 ? "< 50 ms ok" : "< 50 ms MISSED")
                   + String(format: "   (stored keys, .changes; from an ID array: %.1f ms)", merge.arraySeconds * 1000))
        out.append("")
        out.append(pad("batch requests (fresh copy each)", 44) + pad("batch", 10) + pad("raw", 10) + pad("ratio", 8) + pad("target", 14) + "object by object")
        for (b, t) in zip(batches, targets) {
            var objects = b.objectSeconds.map { String(format: "%.3f s (batch %.1fx faster)", $0, b.speedupOverObjects ?? 0) } ?? ""
            if let loop = b.rowLoopSeconds { objects += String(format: "; raw row by row %.3f s (%.1fx)", loop, b.speedupOverRowLoop ?? 0) }
            out.append(pad(b.name, 44) + pad(String(format: "%.3f s", b.batchSeconds), 10) + pad(String(format: "%.3f s", b.rawSeconds), 10)
                       + pad(String(format: "%.2fx", b.ratioToRaw), 8) + pad(b.ratioToRaw <= t ? "≤ \(t)x ok" : "≤ \(t)x MISSED", 14) + objects)
        }
        let growth = { (m: (start: Int, opened: Int, peak: Int)) in Double(m.peak - m.opened) / 1_048_576 }
        out.append(pad("update memory: peak growth, batch", 44) + String(format: "%.1f MB", growth(updateMemory[0]))
                   + (growth(updateMemory[0]) <= 5 ? " (≤ 5 MB ok)" : " (≤ 5 MB MISSED)")
                   + String(format: "; object by object: %.0f MB (from the open context; opening the store and context itself: %.1f MB)",
                            growth(updateMemory[1]), Double(updateMemory[0].opened - updateMemory[0].start) / 1_048_576))
        out.append("")
        out += memoryTable(sweeps)
        out.append("")
        out.append(pad("several stores: open sorted by title, \(stores.parts) stores vs 1", 44) + String(format: "%.3f s vs %.3f s = %.2fx", stores.splitSeconds, stores.oneStoreSeconds, stores.ratio)
                   + (stores.ratio <= 1.3 ? "   (≤ 1.3x ok)" : "   (≤ 1.3x MISSED)"))
        out.append(pad("several stores: full sweep, \(stores.parts) stores vs 1", 44) + String(format: "%.3f s vs %.3f s = %.2fx", stores.splitSweepSeconds, stores.oneSweepSeconds, stores.sweepRatio))
        out.append(pad("several stores: full sweep, peak RSS growth", 44) + "\(stores.splitSweepGrowth / 1_048_576) MB (fresh process; the one-store sweep is under memory)")
        out.append("")
        out += shellLines(shell, rows: actualRows)
        out.append("")
        out += scrollLines(scroll)
        out += loadKeyLines(loadKeys)
        out.append("")
        out += sheetLines(sheets)
        out.append("")
        out.append("baselines: " + comparisons.map { "\($0.name): \($0.baseline)" }.joined(separator: "; "))
        out += plotWritten()
        return out.joined(separator: "\n")
    }

    /// The timed comparisons, one line each with its target.
    func comparisonLines(_ comparisons: [Benchmark.Comparison]) -> [String] { Benchmark.comparisonLines(comparisons) }

    /// The frequency and summary sheets: their SQL beside SQLite's own (in this process), then the
    /// browser's figures from a fresh process.
    func sheetMeasurements() throws -> ([Benchmark.Comparison], Benchmark.SheetFigures) {
        note("measuring the frequency and summary sheets against SQLite's own GROUP BY and aggregates…")
        let comparisons = [
            try Benchmark.frequency(path: path, filtered: false, repeats: options.repeats),
            try Benchmark.frequency(path: path, filtered: true, repeats: options.repeats),
            try Benchmark.summary(path: path, repeats: options.repeats),
        ]
        note("measuring the sheets in the browser: first figures, memory, scroll keys on a frequency sheet of id (separate process)…")
        let figures = try JSONDecoder().decode(Benchmark.SheetFigures.self, from: try runWorkerProcess([path, "--mode", "sheets"]))
        return (comparisons, figures)
    }

    /// The browser's sheet figures, with their targets.
    func sheetLines(_ f: Benchmark.SheetFigures) -> [String] {
        func mb(_ bytes: Int) -> String { "\(bytes / 1_048_576) MB" }
        func first(_ s: Double) -> String { String(format: "%.3f s", s) + (s <= 0.3 ? " (≤ 0.3 s ok)" : " (≤ 0.3 s MISSED)") }
        let s = f.scroll
        return ["sheets in the browser, \(formatCount(f.rows)) rows on a 200x50 in-memory screen (separate process; key to frame)",
                pad("  F on genre: first figures / complete", 44) + first(f.frequencyFirstSeconds) + String(format: " / %.3f s", f.frequencySeconds),
                pad("  I (\(Benchmark.movieColumns.count) columns): first figures / complete", 44) + first(f.summaryFirstSeconds) + String(format: " / %.3f s", f.summarySeconds),
                pad("    its first exact row (first figures above: a sample, ≈)", 44) + String(format: "%.3f s", f.summaryFirstExactSeconds),
                pad("  peak RSS during F and I", 44) + mb(f.sheetsPeakRSS) + (f.sheetsPeakRSS <= 40 << 20 ? " (≤ 40 MB ok)" : " (≤ 40 MB MISSED)")
                    + " (the open table: \(mb(f.openRSS)))",
                pad("  F on id: \(formatCount(f.distinctValues)) distinct values", 44) + String(format: "%.3f s", f.distinctSeconds)
                    + ", peak RSS \(mb(f.distinctPeakRSS))" + (f.distinctPeakRSS <= 40 << 20 ? " (≤ 40 MB ok)" : " (≤ 40 MB MISSED)"),
                pad("  its scroll keys p50 / p99 / max", 44) + String(format: "%.2f / %.2f / %.2f ms", s.p50Milliseconds, s.p99Milliseconds, s.maxMilliseconds)
                    + (s.p99Milliseconds <= 5 ? "   (p99 ≤ 5 ms ok)" : "   (p99 ≤ 5 ms MISSED)") + " over \(s.keys) keys"]
    }

    /// Export and import against the sqlite3 shell (none when the shell is not installed).
    func shellComparisons() throws -> [Benchmark.ShellComparison] {
        guard let shell = Benchmark.which("sqlite3") else {
            note("no sqlite3 shell on PATH: the comparison with it is skipped (make installs it)")
            return []
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        return try Benchmark.againstShell(path: path, executable: executable, shell: shell, repeats: options.repeats, note: note)
    }

    /// The "against the sqlite3 shell" table.
    func shellLines(_ rows: [Benchmark.ShellComparison], rows count: Int) -> [String] {
        guard !rows.isEmpty else { return ["against the sqlite3 shell: skipped (no sqlite3 on PATH)"] }
        var out = ["against the sqlite3 shell (\(formatCount(count)) movies; separate processes, output to /dev/null, median of \(options.repeats))",
                   pad("command", 44) + pad("faultline", 11) + pad("shell", 10) + pad("ratio", 8) + pad("target", 15) + "peak RSS, faultline / shell"]
        for r in rows {
            let mark = r.target.map { r.ratio <= $0 ? "≤ \($0)x ok" : "≤ \($0)x MISSED" } ?? ""
            out.append(pad(r.name, 44) + pad(String(format: "%.3f s", r.oursSeconds), 11) + pad(String(format: "%.3f s", r.shellSeconds), 10)
                       + pad(String(format: "%.2fx", r.ratio), 8) + pad(mark, 15) + "\(r.oursPeakRSS / 1_048_576) / \(r.shellPeakRSS / 1_048_576) MB")
        }
        out.append("shell commands: export uses -tabs -header, -csv -header and -json with the same ORDER BY (ties by id, then store);"
                   + " four stores are ATTACHed and joined with UNION ALL; blobs are written with '\\x' || lower(hex(data));"
                   + " import is .import --csv --skip 1 into the same empty table (the shell leaves foreign keys off on the demo, whose NULL keys it would read as ''; faultline checks them; the 24-column file: both check them)")
        return out
    }

    /// The memory table: one row per sweep.
    func memoryTable(_ sweeps: [Benchmark.MemorySweep]) -> [String] {
        [pad("memory (separate process each)", 44) + pad("start", 10) + pad("peak", 10) + "growth"]
            + sweeps.map { s in
                pad(s.mode, 44) + pad("\(s.startRSS / 1_048_576) MB", 10) + pad("\(s.peakRSS / 1_048_576) MB", 10) + "\((s.peakRSS - s.startRSS) / 1_048_576) MB"
            }
    }

    func scrollLines(_ f: BrowserBenchmark.Figures) -> [String] {
        ["browser, \(formatCount(f.rows)) rows on a \(f.width)x\(f.height) in-memory screen, \(f.keys) scroll keys (key to finished frame)",
         pad("  p50 / p99 / max", 44) + String(format: "%.2f / %.2f / %.2f ms", f.p50Milliseconds, f.p99Milliseconds, f.maxMilliseconds)
             + (f.p99Milliseconds <= 5 ? "   (p99 ≤ 5 ms ok)" : "   (p99 ≤ 5 ms MISSED)"),
         pad("  cells sent per one-row move", 44) + String(format: "%.0f of %d on screen", f.cellsPerRowStep, f.screenCells),
         pad("  open (first frame)", 44) + String(format: "%.2f s", f.openSeconds) + ", peak RSS \(f.peakRSS / 1_048_576) MB"]
    }

    func loadKeyLines(_ f: BrowserBenchmark.LoadKeyFigures) -> [String] { Benchmark.loadKeyLines(f) }

    /// With `--plot`, writes the memory plot of `sweeps`.
    func writePlot(_ sweeps: [Benchmark.MemorySweep], rows: Int) throws {
        guard let plot = options.plot else { return }
        try Benchmark.svgPlot(sweeps, title: "Memory during a full sweep of \(formatCount(rows)) rows").write(toFile: plot, atomically: true, encoding: .utf8)
    }

    /// The table's last line with `--plot`.
    func plotWritten() -> [String] { options.plot.map { ["plot written to \($0)"] } ?? [] }

    func sortedJSON(_ value: some Encodable) throws -> String { try Benchmark.sortedJSON(value) }

    func pad(_ s: String, _ n: Int) -> String { Benchmark.pad(s, n) }

    /// The batched sweep, and the eager one unless skipped, each in a fresh process.
    func memorySweeps() throws -> [Benchmark.MemorySweep] {
        var sweeps: [Benchmark.MemorySweep] = []
        note("measuring memory of a batched sweep (separate process)…")
        sweeps.append(try runSweepWorker(eager: false))
        if !options.skipEager {
            note("measuring memory of an eager sweep (separate process)…")
            sweeps.append(try runSweepWorker(eager: true))
        }
        return sweeps
    }

    func runUpdateWorker(objects: Bool) throws -> (start: Int, opened: Int, peak: Int) {
        let data = try runWorkerProcess([path, "--mode", objects ? "update-objects" : "update-batch"])
        let values = try JSONDecoder().decode([Int].self, from: data)
        return (values[0], values[1], values[2])
    }

    func runSweepWorker(eager: Bool) throws -> Benchmark.MemorySweep {
        let data = try runWorkerProcess([path] + (eager ? ["--eager"] : []))
        return try JSONDecoder().decode(Benchmark.MemorySweep.self, from: data)
    }

    /// Runs `<this executable> bench-worker <arguments>` and returns its stdout.
    func runWorkerProcess(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = [Benchmark.workerCommand] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BatchStoreError(.sqlite(-1), "the memory worker failed (exit \(process.terminationStatus))")
        }
        return data
    }
}

extension Benchmark {
    /// `s` padded with spaces to `n` characters (one space after a longer one): a report's column.
    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }

    /// The comparisons as a table's lines, each with its target met or missed (and, with
    /// `baselines`, a line naming what it was measured against).
    static func comparisonLines(_ comparisons: [Comparison], baselines: Bool = false) -> [String] {
        [pad("measurement", 44) + pad("ours", 10) + pad("raw", 10) + pad("ratio", 8) + "target"] + comparisons.flatMap { c in
            let mark = c.target.map { c.ratio <= $0 ? "≤ \($0)x ok" : "≤ \($0)x MISSED" } ?? ""
            let line = pad(c.name, 44) + pad(String(format: "%.3f s", c.oursSeconds), 10) + pad(String(format: "%.3f s", c.rawSeconds), 10)
                + pad(String(format: "%.2fx", c.ratio), 8) + mark
            return baselines ? [line, "    raw: \(c.baseline)"] : [line]
        }
    }

    /// `value` as one line of JSON, keys sorted.
    static func sortedJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The lines of keys typed while a sort loads (either engine).
    static func loadKeyLines(_ f: BrowserBenchmark.LoadKeyFigures) -> [String] {
        let ratio = f.fetchSeconds > 0 ? f.fetchWithKeysSeconds / f.fetchSeconds : 0
        return ["keys while a sort by \(f.sortKey) of \(formatCount(f.rows)) rows loads (j/k every 20 ms over the first rows, \(f.keys) keys, typed to next frame)",
                pad("  p50 / p99 / max", 44) + String(format: "%.2f / %.2f / %.2f ms", f.p50Milliseconds, f.p99Milliseconds, f.maxMilliseconds)
                    + (f.keys == 0 ? "   (no key landed during the load: not measured)" : f.p99Milliseconds <= 50 ? "   (p99 ≤ 50 ms ok)" : "   (p99 ≤ 50 ms MISSED)"),
                pad("  the fetch with those keys / alone", 44) + String(format: "%.3f / %.3f s = %.2fx", f.fetchWithKeysSeconds, f.fetchSeconds, ratio)
                    + (ratio <= 1.05 ? "   (≤ 1.05x ok)" : "   (≤ 1.05x MISSED)")]
    }
}
