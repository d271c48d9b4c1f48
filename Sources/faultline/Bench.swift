import ArgumentParser
#if PostgreSQL
import BatchStorePostgres
#endif
import FaultlineBench
import FaultlineDemo
import Foundation

/// `faultline bench`: the options; the measuring and the report are in FaultlineBench.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure BatchStore against raw SQLite (or PostgreSQL, with --db <url>) in one run and report ratios.",
        discussion: "Creates a demo database of --rows movies (or uses --db), then times opening, the first batch, a full sweep and the frequency and summary sheets beside raw sqlite3 baselines, and measures peak memory of batched and eager sweeps in separate processes.")

    @Option(help: "Rows of demo data to create.")
    var rows: Int = 1_000_000

    @Option(help: "Use this existing demo database instead of creating one; or a PostgreSQL URL (postgresql://user@host/db): the batched result there against PostgreSQL's own statements, on a table of --rows rows it makes (faultline_bench_movie, kept for the next run) or on --table.")
    var db: String?

    @Option(help: "With a PostgreSQL URL: measure this table (a one-column primary key) instead of making one.")
    var table: String?

    @Option(help: "With a PostgreSQL URL: the column to sort by (default votes; pick one without an index).")
    var sortColumn: String?

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

    @Flag(help: "Measure only export and import against the sqlite3 shell (each a separate process on the same file).")
    var shellOnly = false

    @Flag(help: "Measure only the frequency and summary sheets (their SQL against SQLite's own, and the browser's first figures, memory and scroll keys in a separate process).")
    var sheetsOnly = false

    func validate() throws {
        guard rows > 0 else { throw ValidationError("--rows must be at least 1") }
        guard repeats > 0 else { throw ValidationError("--repeats must be at least 1") }
        guard [browserOnly, memoryOnly, shellOnly, sheetsOnly].filter({ $0 }).count <= 1 else {
            throw ValidationError("--browser-only, --memory-only, --shell-only and --sheets-only do not go together")
        }
    }

    func run() throws {
        if let db, isPostgresURL(db) {
            guard !(browserOnly || memoryOnly || shellOnly || sheetsOnly || skipEager || plot != nil) else {
                throw ValidationError("with a PostgreSQL URL, bench takes --rows, --table, --sort-column, --repeats and --json only")
            }
            #if PostgreSQL
            print(try Benchmark.postgresReport(.init(url: db, table: table, sortColumn: sortColumn, rows: rows, repeats: repeats, json: json), status: printError))
            return
            #else
            throw postgresNotBuilt()
            #endif
        }
        if table != nil || sortColumn != nil { throw ValidationError("--table and --sort-column go with a PostgreSQL URL in --db") }
        let options = Benchmark.Options(rows: rows, db: db, repeats: repeats, json: json, plot: plot,
                                        skipEager: skipEager, browserOnly: browserOnly, memoryOnly: memoryOnly, shellOnly: shellOnly, sheetsOnly: sheetsOnly)
        print(try Benchmark.report(options, status: printError) { path, rows in
            try createDemoDatabase(at: path, rows: rows, label: "creating \(formatCount(rows)) rows") { _ in
                "created \(formatCount(rows))-row demo database"
            }
        })
    }
}

/// Runs one measurement of `bench` in this fresh process and prints it (used by `bench`).
struct BenchWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: Benchmark.workerCommand, abstract: "Internal: one memory sweep for bench.", shouldDisplay: false)

    @Argument var database: String
    @Flag var eager = false
    @Option var batchSize: Int = 100
    @Option var mode: String = "sweep"
    @Option var table: String = ""
    @Option var sort: String = ""
    @Option var limit: Int = 0

    func run() throws {
        #if PostgreSQL
        if mode == "pg-cells" {
            try Benchmark.postgresCellsWorker(url: database) { print($0) }
            return
        }
        if mode == "pg-fault" {
            try Benchmark.postgresFaultWorker(url: database, table: table, sort: sort, batchSize: batchSize) { print($0) }
            return
        }
        if mode == "pg-sweep" {
            try Benchmark.postgresSweepWorker(url: database, table: table, sort: sort, limit: limit, batchSize: batchSize) { print($0) }
            return
        }
        #else
        if mode.hasPrefix("pg-") { throw postgresNotBuilt() }
        #endif
        try Benchmark.worker(database: database, mode: mode, eager: eager, batchSize: batchSize) { print($0) }
    }
}
