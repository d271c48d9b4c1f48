import ArgumentParser
import BatchStore
import Browser
import Foundation

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure BatchStore against raw SQLite in one run and report ratios.",
        discussion: "Creates a demo database of --rows movies (or uses --db), then times opening, the first batch and a full sweep beside raw sqlite3 baselines, and measures peak memory of batched and eager sweeps in separate processes.")

    @Option(help: "Rows of demo data to create.")
    var rows: Int = 1_000_000

    @Option(help: "Use this existing demo database instead of creating one.")
    var db: String?

    @Option(help: "Runs per timing; the median is reported.")
    var repeats: Int = 3

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Write an SVG of memory against rows swept, batched and eager.")
    var plot: String?

    @Flag(help: "Skip the eager-array memory sweep (it needs memory proportional to --rows).")
    var skipEager = false

    @Flag(help: "Measure only the browser's scroll keys (key to finished frame).")
    var browserOnly = false

    @Flag(help: "Measure only the memory of full sweeps, batched and eager (with --plot, draw them).")
    var memoryOnly = false

    func validate() throws {
        guard rows > 0 else { throw ValidationError("--rows must be at least 1") }
        guard repeats > 0 else { throw ValidationError("--repeats must be at least 1") }
        guard !(browserOnly && memoryOnly) else { throw ValidationError("--browser-only and --memory-only do not go together") }
    }

    func run() throws {
        var path = db ?? ""
        var tempDir: URL?
        if db == nil {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("faultline-bench-\(getpid())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            tempDir = dir
            path = dir.appendingPathComponent("bench.sqlite").path
            let bar = ProgressBar("creating \(Benchmark.formatCount(rows)) rows")
            try DemoDatabase.create(at: path, rows: rows) { bar.update($0) }
            bar.finish("created \(Benchmark.formatCount(rows))-row demo database")
        }
        defer {
            if let tempDir { try? FileManager.default.removeItem(at: tempDir) }
            Benchmark.removeScratchDirectory()
        }
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let actualRows = try ManagedObjectContext(store: store).count(for: FetchRequest(entityName: "movie"))

        if memoryOnly {
            let sweeps = try memorySweeps(path: path)
            if let plot {
                try Benchmark.svgPlot(sweeps, title: "Memory during a full sweep of \(Benchmark.formatCount(actualRows)) rows").write(toFile: plot, atomically: true, encoding: .utf8)
            }
            if json {
                print(String(decoding: try JSONEncoder().encode(sweeps), as: UTF8.self))
            } else {
                print(pad("memory (separate process each)", 44) + pad("start", 10) + pad("peak", 10) + "growth")
                for s in sweeps {
                    print(pad(s.mode, 44) + pad("\(s.startRSS / 1_048_576) MB", 10) + pad("\(s.peakRSS / 1_048_576) MB", 10) + "\((s.peakRSS - s.startRSS) / 1_048_576) MB")
                }
                if let plot { print("plot written to \(plot)") }
            }
            return
        }

        if !json { printError("measuring the browser: scroll keys to finished frames…") }
        let scroll = try BrowserBenchmark.scroll(path: path)
        if browserOnly {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(scroll), as: UTF8.self))
            } else {
                printScroll(scroll)
            }
            return
        }
        var comparisons: [Benchmark.Comparison] = []
        func step(_ name: String, _ body: () throws -> Benchmark.Comparison) rethrows {
            if !json { printError("measuring \(name)…") }
            comparisons.append(try body())
        }
        try step("opening, unsorted") { try Benchmark.opening(path: path, sortKey: nil, repeats: repeats) }
        try step("opening, sorted by title") { try Benchmark.opening(path: path, sortKey: "title", repeats: repeats) }
        try step("first batch") { try Benchmark.firstBatch(path: path, sortKey: "title", batchSize: 100, repeats: repeats) }
        try step("full sweep") { try Benchmark.sweep(path: path, batchSize: 100, repeats: repeats) }
        try step("full sweep reading every value") { try Benchmark.sweep(path: path, batchSize: 100, repeats: repeats, everyValue: true) }

        if !json { printError("measuring a merge (a batch update of up to 1M rows on a scratch copy first)…") }
        let merge = try Benchmark.merge(path: path, repeats: repeats)

        if !json { printError("measuring several stores: the same rows split over 4 files (separate process)…") }
        let stores = try JSONDecoder().decode(Benchmark.StoresFigures.self, from: try runWorkerProcess(["bench-worker", path, "--mode", "stores"]))

        if !json { printError("measuring batch update, delete and insert (each on a fresh copy of the file)…") }
        let batches = [
            try Benchmark.batchUpdate(path: path, repeats: repeats),
            try Benchmark.batchDelete(path: path, repeats: repeats),
            try Benchmark.batchInsert(path: path, rows: min(actualRows, 1_000_000), repeats: repeats),
        ]
        let targets = [1.2, 1.2, 1.5]
        if !json { printError("measuring memory of batch and object-by-object updates (separate processes)…") }
        let updateMemory = [try runUpdateWorker(path: path, objects: false), try runUpdateWorker(path: path, objects: true)]
        Benchmark.removeScratchDirectory()

        let sweeps = try memorySweeps(path: path)

        if let plot {
            let svg = Benchmark.svgPlot(sweeps, title: "Memory during a full sweep of \(Benchmark.formatCount(actualRows)) rows")
            try svg.write(toFile: plot, atomically: true, encoding: .utf8)
        }
        if json {
            struct Report: Encodable {
                var rows: Int
                var sqliteVersion: String
                var comparisons: [Entry]
                var memory: [Benchmark.MemorySweep]
                var merge: Merge
                var batch: [Batch]
                var updateMemory: [UpdateMemory]
                var browserScroll: BrowserBenchmark.Figures
                var stores: Benchmark.StoresFigures
                struct Batch: Encodable { var name: String; var rows: Int; var batchSeconds: Double; var rawSeconds: Double; var ratioToRaw: Double; var target: Double; var objectSeconds: Double?; var speedupOverObjects: Double?; var rowLoopSeconds: Double?; var speedupOverRowLoop: Double?; var baseline: String }
                struct UpdateMemory: Encodable { var path: String; var startRSS: Int; var openedRSS: Int; var peakRSS: Int }
                struct Merge: Encodable { var updatedIDs: Int; var objectsHeld: Int; var seconds: Double; var arraySeconds: Double; var refaulted: Int; var targetSeconds: Double }
                struct Entry: Encodable {
                    var name: String; var oursSeconds: Double; var rawSeconds: Double; var ratio: Double; var target: Double?; var baseline: String; var meetsTarget: Bool?
                }
            }
            let report = Report(rows: actualRows, sqliteVersion: SQLiteInfo.version, comparisons: comparisons.map { c in
                .init(name: c.name, oursSeconds: c.oursSeconds, rawSeconds: c.rawSeconds, ratio: c.ratio, target: c.target,
                      baseline: c.baseline, meetsTarget: c.target.map { t in comparisonsMeets(c, t) })
            }, memory: sweeps, merge: .init(updatedIDs: merge.updatedIDs, objectsHeld: merge.objectsHeld, seconds: merge.seconds, arraySeconds: merge.arraySeconds,
                                                    refaulted: merge.refaulted, targetSeconds: 0.05),
               batch: zip(batches, targets).map { b, t in .init(name: b.name, rows: b.rows, batchSeconds: b.batchSeconds, rawSeconds: b.rawSeconds, ratioToRaw: b.ratioToRaw, target: t, objectSeconds: b.objectSeconds, speedupOverObjects: b.speedupOverObjects, rowLoopSeconds: b.rowLoopSeconds, speedupOverRowLoop: b.speedupOverRowLoop, baseline: b.baseline) },
               updateMemory: updateMemory.enumerated().map { i, m in .init(path: i == 0 ? "batch" : "object by object", startRSS: m.start, openedRSS: m.opened, peakRSS: m.peak) },
               browserScroll: scroll, stores: stores)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print("faultline bench: \(Benchmark.formatCount(actualRows)) rows, SQLite \(SQLiteInfo.version), median of \(repeats)")
            print("")
            print(pad("measurement", 44) + pad("ours", 10) + pad("raw", 10) + pad("ratio", 8) + "target")
            for c in comparisons {
                let mark = c.target.map { comparisonsMeets(c, $0) ? "≤ \($0)x ok" : "≤ \($0)x MISSED" } ?? ""
                print(pad(c.name, 44) + pad(String(format: "%.3f s", c.oursSeconds), 10) + pad(String(format: "%.3f s", c.rawSeconds), 10)
                      + pad(String(format: "%.2fx", c.ratio), 8) + mark)
            }
            print(pad("merge \(Benchmark.formatCount(merge.updatedIDs)) updated IDs into \(merge.objectsHeld) held objects", 44)
                  + pad(String(format: "%.1f ms", merge.seconds * 1000), 20) + (merge.seconds < 0.05 ? "< 50 ms ok" : "< 50 ms MISSED")
                  + String(format: "   (stored keys, .changes; from an ID array: %.1f ms)", merge.arraySeconds * 1000))
            print("")
            print(pad("batch requests (fresh copy each)", 44) + pad("batch", 10) + pad("raw", 10) + pad("ratio", 8) + pad("target", 14) + "object by object")
            for (b, t) in zip(batches, targets) {
                var objects = b.objectSeconds.map { String(format: "%.3f s (batch %.1fx faster)", $0, b.speedupOverObjects ?? 0) } ?? ""
                if let loop = b.rowLoopSeconds { objects += String(format: "; raw row by row %.3f s (%.1fx)", loop, b.speedupOverRowLoop ?? 0) }
                print(pad(b.name, 44) + pad(String(format: "%.3f s", b.batchSeconds), 10) + pad(String(format: "%.3f s", b.rawSeconds), 10)
                      + pad(String(format: "%.2fx", b.ratioToRaw), 8) + pad(b.ratioToRaw <= t ? "≤ \(t)x ok" : "≤ \(t)x MISSED", 14) + objects)
            }
            let growth = { (m: (start: Int, opened: Int, peak: Int)) in Double(m.peak - m.opened) / 1_048_576 }
            print(pad("update memory: peak growth, batch", 44) + String(format: "%.1f MB", growth(updateMemory[0]))
                  + (growth(updateMemory[0]) <= 5 ? " (≤ 5 MB ok)" : " (≤ 5 MB MISSED)")
                  + String(format: "; object by object: %.0f MB (from the open context; opening the store and context itself: %.1f MB)",
                           growth(updateMemory[1]), Double(updateMemory[0].opened - updateMemory[0].start) / 1_048_576))
            print("")
            print(pad("memory (separate process each)", 44) + pad("start", 10) + pad("peak", 10) + "growth")
            for s in sweeps {
                print(pad(s.mode, 44) + pad("\(s.startRSS / 1_048_576) MB", 10) + pad("\(s.peakRSS / 1_048_576) MB", 10) + "\((s.peakRSS - s.startRSS) / 1_048_576) MB")
            }
            print("")
            print(pad("several stores: open sorted by title, \(stores.parts) stores vs 1", 44) + String(format: "%.3f s vs %.3f s = %.2fx", stores.splitSeconds, stores.oneStoreSeconds, stores.ratio)
                  + (stores.ratio <= 1.3 ? "   (≤ 1.3x ok)" : "   (≤ 1.3x MISSED)"))
            print(pad("several stores: full sweep, peak RSS growth", 44) + "\(stores.splitSweepGrowth / 1_048_576) MB (fresh process; the one-store sweep is under memory)")
            print("")
            printScroll(scroll)
            print("")
            print("baselines: " + comparisons.map { "\($0.name): \($0.baseline)" }.joined(separator: "; "))
            if let plot { print("plot written to \(plot)") }
        }
    }

    func printScroll(_ f: BrowserBenchmark.Figures) {
        print("browser, \(Benchmark.formatCount(f.rows)) rows on a \(f.width)x\(f.height) in-memory screen, \(f.keys) scroll keys (key to finished frame)")
        print(pad("  p50 / p99 / max", 44) + String(format: "%.2f / %.2f / %.2f ms", f.p50Milliseconds, f.p99Milliseconds, f.maxMilliseconds)
              + (f.p99Milliseconds <= 5 ? "   (p99 ≤ 5 ms ok)" : "   (p99 ≤ 5 ms MISSED)"))
        print(pad("  cells sent per one-row move", 44) + String(format: "%.0f of %d on screen", f.cellsPerRowStep, f.screenCells))
        print(pad("  open (first frame)", 44) + String(format: "%.2f s", f.openSeconds) + ", peak RSS \(f.peakRSS / 1_048_576) MB")
    }

    func comparisonsMeets(_ c: Benchmark.Comparison, _ target: Double) -> Bool { c.ratio <= target }

    func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }

    /// The batched sweep, and the eager one unless skipped, each in a fresh process.
    func memorySweeps(path: String) throws -> [Benchmark.MemorySweep] {
        var sweeps: [Benchmark.MemorySweep] = []
        if !json { printError("measuring memory of a batched sweep (separate process)…") }
        sweeps.append(try runWorker(path: path, eager: false))
        if !skipEager {
            if !json { printError("measuring memory of an eager sweep (separate process)…") }
            sweeps.append(try runWorker(path: path, eager: true))
        }
        return sweeps
    }

    func runUpdateWorker(path: String, objects: Bool) throws -> (start: Int, opened: Int, peak: Int) {
        let data = try runWorkerProcess(["bench-worker", path, "--mode", objects ? "update-objects" : "update-batch"])
        let values = try JSONDecoder().decode([Int].self, from: data)
        return (values[0], values[1], values[2])
    }

    func runWorkerProcess(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
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

    func runWorker(path: String, eager: Bool) throws -> Benchmark.MemorySweep {
        let data = try runWorkerProcess(["bench-worker", path] + (eager ? ["--eager"] : []))
        return try JSONDecoder().decode(Benchmark.MemorySweep.self, from: data)
    }
}

/// Runs one memory sweep in this fresh process and prints it as JSON (used by `bench`).
struct BenchWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench-worker", abstract: "Internal: one memory sweep for bench.", shouldDisplay: false)

    @Argument var database: String
    @Flag var eager = false
    @Option var batchSize: Int = 100
    @Option var mode: String = "sweep"

    func run() throws {
        if mode == "stores" {
            let f = try Benchmark.stores(path: database, parts: 4, repeats: 3)
            print(String(decoding: try JSONEncoder().encode(f), as: UTF8.self))
            return
        }
        if mode == "insert-ratio" {
            defer { Benchmark.removeScratchDirectory() }
            let b = try Benchmark.batchInsert(path: database, rows: 1_000_000, repeats: 3)
            print(String(format: "insert: batch %.3f s, raw %.3f s, ratio %.2fx", b.batchSeconds, b.rawSeconds, b.ratioToRaw))
            return
        }
        if mode == "update-ratio" {
            defer { Benchmark.removeScratchDirectory() }
            for b in [try Benchmark.batchUpdate(path: database, repeats: 1), try Benchmark.batchDelete(path: database, repeats: 1)] {
                print(String(format: "%@: batch %.3f s, raw %.3f s (%.2fx), object by object %.3f s (batch %.1fx faster), raw row by row %.3f s (batch %.1fx faster)",
                             b.name, b.batchSeconds, b.rawSeconds, b.ratioToRaw, b.objectSeconds ?? 0, b.speedupOverObjects ?? 0, b.rowLoopSeconds ?? 0, b.speedupOverRowLoop ?? 0))
            }
            return
        }
        if mode == "merge" {
            defer { Benchmark.removeScratchDirectory() }
            let m = try Benchmark.merge(path: database, repeats: 5)
            print(String(format: "merge %d updated IDs into %d held objects: stored %.1f ms, from an array %.1f ms (%d refaulted)",
                         m.updatedIDs, m.objectsHeld, m.seconds * 1000, m.arraySeconds * 1000, m.refaulted))
            return
        }
        if mode == "sweep-ratio" {
            let c = try Benchmark.sweep(path: database, batchSize: batchSize, repeats: 5)
            print(String(format: "sweep: ours %.3f s, raw %.3f s, ratio %.2fx", c.oursSeconds, c.rawSeconds, c.ratio))
            let e = try Benchmark.sweep(path: database, batchSize: batchSize, repeats: 5, everyValue: true)
            print(String(format: "sweep reading every value: ours %.3f s, raw %.3f s, ratio %.2fx", e.oursSeconds, e.rawSeconds, e.ratio))
            return
        }
        if mode == "update-batch" || mode == "update-objects" {
            defer { Benchmark.removeScratchDirectory() }
            let m = try Benchmark.updateMemory(path: database, objects: mode == "update-objects")
            print("[\(m.start), \(m.opened), \(m.peak)]")
            return
        }
        let sweep = try Benchmark.memorySweep(path: database, eager: eager, batchSize: batchSize, samples: 100)
        print(String(decoding: try JSONEncoder().encode(sweep), as: UTF8.self))
    }
}
