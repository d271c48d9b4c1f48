import BatchStore
import Foundation

extension Benchmark {
    /// One row of the "against the sqlite3 shell" table: a `faultline` command and the shell
    /// command that produces the same rows, each a separate process on the same file in the same
    /// run, output to /dev/null; the median of the repeats, and each side's peak RSS.
    struct ShellComparison: Sendable, Codable {
        var name: String
        var oursSeconds: Double
        var shellSeconds: Double
        var ratio: Double { shellSeconds > 0 ? oursSeconds / shellSeconds : 0 }
        var target: Double?
        var oursPeakRSS: Int
        var shellPeakRSS: Int
        var ours: String
        var shell: String
    }

    /// Runs `arguments[0]` with the rest, stdout to `stdout` (created or truncated; /dev/null by
    /// default), stderr kept; returns the wall time and the child's peak RSS; a failure throws. The peak is the child's own `VmHWM`, read from /proc every 2 ms by
    /// a second thread while this one waits: `wait4`'s `ru_maxrss` would report this (large)
    /// process's RSS, which a spawned child shares until its exec.
    @discardableResult
    static func runTimed(_ arguments: [String], stdout: String = "/dev/null") throws -> (seconds: Double, peakRSS: Int) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let code = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard code == 0 else { throw BatchStoreError(.sqlite(-1), "cannot start \(arguments[0]): \(String(cString: strerror(code)))") }
        let watcher = PeakWatcher(pid: pid)
        let thread = Thread { watcher.run() }
        thread.start()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let peak = watcher.stop()
        guard status == 0 else {
            throw BatchStoreError(.sqlite(-1), "\(arguments.map { $0.count > 60 ? String($0.prefix(60)) + "…" : $0 }.joined(separator: " ")) failed (status \(status))")
        }
        return (seconds, peak)
    }

    /// Samples a child's `VmHWM` (its peak RSS so far, after its exec) until stopped.
    final class PeakWatcher: @unchecked Sendable {
        let pid: pid_t
        private let lock = NSLock()
        private var stopped = false
        private var peak = 0
        private let done = DispatchSemaphore(value: 0)

        init(pid: pid_t) { self.pid = pid }

        func run() {
            while true {
                if let hwm = Self.vmHWM(pid) { lock.withLock { peak = max(peak, hwm) } }
                if lock.withLock({ stopped }) { break }
                usleep(2_000)
            }
            done.signal()
        }

        /// Stops sampling and returns the largest `VmHWM` seen, in bytes.
        func stop() -> Int {
            lock.withLock { stopped = true }
            done.wait()
            return lock.withLock { peak }
        }

        static func vmHWM(_ pid: pid_t) -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
            return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
        }
    }

    /// Export in each format, sorted and not, from one store and from four; a blob-heavy table;
    /// import from CSV and NDJSON: each `faultline` command beside the sqlite3 shell doing the same
    /// work. `executable` is this program.
    static func againstShell(path: String, executable: String, shell: String, repeats: Int, note: (String) -> Void) throws -> [ShellComparison] {
        try FileManager.default.createDirectory(atPath: scratchDirectory, withIntermediateDirectories: true)
        defer { removeScratchDirectory() }
        var rows: [ShellComparison] = []
        func compare(_ name: String, target: Double?, ours: [String], shell: [String], before: (() throws -> Void)? = nil) throws {
            note("against the shell: \(name)…")
            var o: [Double] = [], s: [Double] = [], oRSS = 0, sRSS = 0
            for _ in 0..<repeats {
                try before?()
                let a = try runTimed(ours)
                try before?()
                let b = try runTimed(shell)
                o.append(a.seconds); s.append(b.seconds)
                oRSS = max(oRSS, a.peakRSS); sRSS = max(sRSS, b.peakRSS)
            }
            rows.append(ShellComparison(name: name, oursSeconds: median(o), shellSeconds: median(s), target: target, oursPeakRSS: oRSS, shellPeakRSS: sRSS,
                                        ours: ours.dropFirst().joined(separator: " "), shell: shell.dropFirst().joined(separator: " ")))
        }
        // -readonly: the shell must not write the user's file either (not even a WAL checkpoint).
        let shellModes: [(format: String, flags: [String])] = [("tsv", ["-readonly", "-tabs", "-header"]), ("csv", ["-readonly", "-csv", "-header"]), ("ndjson", ["-readonly", "-json"])]

        // One store.
        for sorted in [false, true] {
            for (format, flags) in shellModes {
                try compare("export \(format)\(sorted ? ", sorted by rating" : "")", target: 1.3,
                            ours: [executable, "export", path, "--table", "movie", "--format", format] + (sorted ? ["--sort", "rating desc"] : []),
                            shell: [shell] + flags + [path, "SELECT * FROM movie" + (sorted ? " ORDER BY rating DESC, id" : "")])
            }
        }

        // Four stores: the rows split by id % 4; the shell attaches them and runs UNION ALL.
        let parts = try splitIntoStores(path: path, parts: 4)
        let union = parts.enumerated().map { i, p in "SELECT '\((p as NSString).lastPathComponent)' AS store, * FROM \(i == 0 ? "main" : "s\(i)").movie" }.joined(separator: " UNION ALL ")
        let attach = parts.enumerated().dropFirst().map { i, p in "ATTACH '\(p)' AS s\(i);" }.joined()
        for sorted in [false, true] {
            for (format, flags) in shellModes {
                let order = sorted ? " ORDER BY rating DESC, store, id" : ""
                try compare("export \(format), 4 stores\(sorted ? ", sorted by rating" : "")", target: 1.3,
                            ours: [executable, "export"] + parts + ["--table", "movie", "--format", format] + (sorted ? ["--sort", "rating desc"] : []),
                            shell: [shell] + flags + [parts[0], "\(attach) SELECT * FROM (\(union))\(order)"])
            }
        }

        // A blob-heavy table: 20,000 rows of 2.5-2.6 KB blobs; the shell writes hex() itself.
        let blobs = scratchDirectory + "/blobs.sqlite"
        removeScratch(blobs)
        let b = try RawConnection(path: blobs, readOnly: false, create: true)
        try b.exec("CREATE TABLE b(id INTEGER PRIMARY KEY, name TEXT, data BLOB); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) INSERT INTO b SELECT i, 'n' || i, randomblob(2500 + i % 100) FROM c")
        for format in ["csv", "tsv", "ndjson"] {
            try compare("export \(format), 20k rows of 2.5 KB blobs", target: 1.5,
                        ours: [executable, "export", blobs, "--table", "b", "--format", format],
                        shell: [shell, "-readonly", "-csv", "-header", blobs, "SELECT id, name, '\\x' || lower(hex(data)) AS data FROM b"])
        }

        // Queries (--query): the browser's first screen (the first batch, before the ID table is
        // filled) against the shell's LIMIT form; the whole result fetched into the ID table
        // against the shell counting it; export against the shell's TSV of the same query.
        let q = queryJoin
        try compare("query: first screen, join filtered and sorted (100 rows)", target: 1.2,
                    ours: [executable, workerCommand, path, "--mode", "query-first"], shell: [shell, "-readonly", path, q + " LIMIT 100"])
        try compare("query: whole result into the ID table (count)", target: nil,
                    ours: [executable, workerCommand, path, "--mode", "query-open"], shell: [shell, "-readonly", path, "SELECT count(*) FROM (\(q))"])
        for (name, sql) in [("join filtered and sorted", q), ("GROUP BY", queryGroupBy)] {
            try compare("query: export tsv, \(name)", target: 1.3, ours: [executable, "export", path, "--query", sql],
                        shell: [shell, "-readonly", "-tabs", "-header", "-nullvalue", "\\N", path, sql])
        }

        // Import: the shell's .import of the same CSV into the same empty table. The demo's movies
        // have NULL director keys, which the shell imports as '' (it has no NULL in CSV), so with
        // foreign keys on it would refuse them: here its foreign keys stay off, as it leaves them
        // (faultline checks them). The real-shaped file below compares with the checks on.
        let csv = scratchDirectory + "/movie.csv", ndjson = scratchDirectory + "/movie.ndjson"
        note("against the shell: writing the import files…")
        for (file, format) in [(csv, "csv"), (ndjson, "ndjson")] {
            try runTimed([executable, "export", path, "--table", "movie", "--format", format], stdout: file)
        }
        let checked = ["-cmd", "PRAGMA foreign_keys = ON"]
        let target = scratchDirectory + "/import.sqlite"
        let empty = { try makeEmptyCopy(of: path, at: target) }
        try compare("import csv", target: 1.5, ours: [executable, "import", target, "--table", "movie", csv],
                    shell: [shell, target, ".import --csv --skip 1 \(csv) movie"], before: empty)
        try compare("import ndjson (shell: the same rows as CSV)", target: 1.5, ours: [executable, "import", target, "--table", "movie", ndjson],
                    shell: [shell, target, ".import --csv --skip 1 \(csv) movie"], before: empty)

        // A real-shaped file: 24 columns of every storage class, a fifth of the values NULL, text
        // timestamps, a foreign key checked on every row by both (never NULL, so that the shell,
        // which reads an empty field as '', can check it too); a quarter as many rows as the demo.
        let wide = scratchDirectory + "/wide-source.sqlite", wideCSV = scratchDirectory + "/wide.csv"
        try makeWideTable(at: wide, demo: path, rows: max(1, try rowCount(path) / 4))
        try runTimed([executable, "export", wide, "--table", "wide", "--format", "csv"], stdout: wideCSV)
        let wideTarget = scratchDirectory + "/wide-import.sqlite"
        try compare("import csv, 24 columns with NULLs and a foreign key (both check it)", target: 1.5,
                    ours: [executable, "import", wideTarget, "--table", "wide", wideCSV],
                    shell: [shell] + checked + [wideTarget, ".import --csv --skip 1 \(wideCSV) wide"],
                    before: { try makeEmptyCopy(of: wide, at: wideTarget) })
        return rows
    }

    /// The demo's movie count.
    static func rowCount(_ path: String) throws -> Int {
        var count = 0
        try RawConnection(path: path).forEachRow("SELECT count(*) FROM movie") { row in
            if case .integer(let n) = row[0] { count = Int(n) }
        }
        return count
    }

    /// A file at `path` with the demo's directors and a table `wide` of `rows` rows: 24 columns
    /// (integers, reals, text, text timestamps, a director foreign key), every fifth value of
    /// most columns NULL.
    static func makeWideTable(at path: String, demo: String, rows: Int) throws {
        removeScratch(path)
        let db = try RawConnection(path: path, readOnly: false, create: true)
        var columns = ["id INTEGER PRIMARY KEY", "director_id INTEGER REFERENCES director(id)"]
        var values = ["i", "1 + i % (SELECT count(*) FROM director)"]
        for k in 0..<22 {
            let null = "CASE WHEN (i + \(k)) % 5 = 0 THEN NULL ELSE "
            switch k % 4 {
            case 0:
                columns.append("n\(k) INTEGER"); values.append(null + "(i * \(k + 7)) % 100003 END")
            case 1:
                columns.append("r\(k) REAL"); values.append(null + "(i % 9973) / 7.0 END")
            case 2:
                // Parenthesised: || binds tighter than %, which made every such value 0.
                columns.append("t\(k) TEXT"); values.append(null + "'value ' || ((i * \(k + 3)) % 50021) || ', \"quoted\"' END")
            default:
                columns.append("at\(k) TEXT"); values.append(null + "datetime(1700000000 + i * 61, 'unixepoch') END")
            }
        }
        var directorSQL = ""
        try RawConnection(path: demo).forEachRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'director'") { row in
            if case .text(let sql) = row[0] { directorSQL = sql }
        }
        try db.exec("""
            \(RawConnection.attachReadOnly(demo, as: "src"));
            \(directorSQL);
            INSERT INTO director SELECT * FROM src.director;
            DETACH DATABASE src;
            CREATE TABLE wide(\(columns.joined(separator: ", ")));
            WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < \(rows))
            INSERT INTO wide SELECT \(values.joined(separator: ", ")) FROM c;
            """)
    }

    /// `movie` of `path` split into `parts` files by `id % parts`, with every director, in the scratch folder.
    static func splitIntoStores(path: String, parts: Int) throws -> [String] {
        try (0..<parts).map { part in
            let file = scratchDirectory + "/store\(part).sqlite"
            try makeEmptyCopy(of: path, at: file)
            let db = try RawConnection(path: file, readOnly: false)
            try db.exec("\(RawConnection.attachReadOnly(path, as: "src")); INSERT INTO main.movie SELECT * FROM src.movie WHERE id % \(parts) = \(part); DETACH DATABASE src")
            return file
        }
    }

    /// A new file at `target` with the schema of `path` (tables, then indexes) and its directors,
    /// and no movies.
    static func makeEmptyCopy(of path: String, at target: String) throws {
        removeScratch(target)
        var schema: [String] = []
        try RawConnection(path: path).forEachRow("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type = 'index', rowid") { row in
            if case .text(let sql) = row[0] { schema.append(sql) }
        }
        let db = try RawConnection(path: target, readOnly: false, create: true)
        try db.exec("\(RawConnection.attachReadOnly(path, as: "src")); BEGIN; " + schema.joined(separator: "; ")
                    + "; INSERT INTO main.director SELECT * FROM src.director; COMMIT; DETACH DATABASE src")
    }
}
