import BatchStore
import Browser
import Foundation
import GRDBSQLite
import TerminalCore

/// Measurements behind `faultline bench`: each BatchStore operation beside its raw-SQLite
/// baseline (sqlite3 C calls, no GRDB, no objects), in the same process and run, so ratios hold
/// on a noisy machine. Each figure is the median of `repeats` runs, ours and raw alternating.
public enum Benchmark {
    /// One timed comparison.
    struct Comparison: Sendable, Codable {
        var name: String
        var oursSeconds: Double
        var rawSeconds: Double
        var ratio: Double { rawSeconds > 0 ? oursSeconds / rawSeconds : 0 }
        var target: Double?
        var baseline: String
    }

    /// Memory of one full sweep, measured in a separate process.
    struct MemorySweep: Sendable, Codable {
        var mode: String
        var rows: Int
        var startRSS: Int
        var peakRSS: Int
        /// (rows swept, RSS bytes) samples for the plot.
        var samples: [[Int]]
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        return s.isEmpty ? 0 : s[s.count / 2]
    }

    static func time(_ body: () throws -> Void) rethrows -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    /// A raw sqlite3 connection, for baselines.
    final class RawConnection {
        var db: OpaquePointer?
        init(path: String, readOnly: Bool = true, create: Bool = false) throws {
            // URI filenames on, so that ATTACH can open the user's file read-only (attachReadOnly).
            let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)) | SQLITE_OPEN_URI
            guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK else {
                throw BatchStoreError(.notADatabase, "cannot open \(path)")
            }
        }
        deinit { sqlite3_close_v2(db) }

        /// `ATTACH` of `path` as `name`, read-only (`file:…?mode=ro`): the bench reads the user's
        /// file and never writes it, not even a checkpoint of its WAL.
        static func attachReadOnly(_ path: String, as name: String) -> String {
            var uri = "file:"
            for c in path.unicodeScalars {
                switch c {
                case "%", "?", "#": uri += String(format: "%%%02X", c.value)
                default: uri.unicodeScalars.append(c)
                }
            }
            return "ATTACH DATABASE '\(uri.replacingOccurrences(of: "'", with: "''"))?mode=ro' AS \(name)"
        }

        func exec(_ sql: String) throws {
            var err: UnsafeMutablePointer<CChar>?
            if sqlite3_exec(db, sql, nil, nil, &err) != SQLITE_OK {
                let m = err.map { String(cString: $0) } ?? "error"
                sqlite3_free(err)
                throw BatchStoreError(.sqlite(-1), m)
            }
        }

        /// Every column of the current row of `stmt` as Swift values, with the plain C API calls a
        /// hand-written loop makes (inlined, so the baseline pays no call).
        @inline(__always)
        static func rowValues(_ stmt: OpaquePointer?, _ n: Int32) -> [SQLValue] {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(n))
            for i in 0..<n {
                switch sqlite3_column_type(stmt, i) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(stmt, i)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(stmt, i)))
                case SQLITE_TEXT: values.append(.text(String(cString: sqlite3_column_text(stmt, i))))
                case SQLITE_NULL: values.append(.null)
                default:
                    let bytes = sqlite3_column_blob(stmt, i)
                    values.append(.blob(bytes.map { Data(bytes: $0, count: Int(sqlite3_column_bytes(stmt, i))) } ?? Data()))
                }
            }
            return values
        }

        /// Steps `sql` to the end reading every column into Swift values (the minimal consumer);
        /// returns the rows read.
        @discardableResult
        func sweep(_ sql: String) throws -> Int {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
            defer { sqlite3_finalize(stmt) }
            let n = sqlite3_column_count(stmt)
            var rows = 0
            var sink = 0
            while sqlite3_step(stmt) == SQLITE_ROW {
                let values = Self.rowValues(stmt, n)
                sink &+= values.count
                rows += 1
            }
            return rows + (sink < 0 ? 1 : 0)
        }

        /// Steps `sql` (with `?1`, `?2` bound to a 1-based position range) batch by batch until a
        /// batch is empty, reading every column into Swift values; returns the rows read.
        @discardableResult
        func batchedSweep(_ sql: String, batchSize: Int) throws -> Int {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
            defer { sqlite3_finalize(stmt) }
            let n = sqlite3_column_count(stmt)
            var rows = 0, sink = 0, start = 0
            while true {
                sqlite3_bind_int64(stmt, 1, Int64(start + 1))
                sqlite3_bind_int64(stmt, 2, Int64(start + batchSize))
                var inBatch = 0
                while sqlite3_step(stmt) == SQLITE_ROW {
                    sink &+= Self.rowValues(stmt, n).count
                    inBatch += 1
                }
                sqlite3_reset(stmt)
                rows += inBatch
                start += batchSize
                if inBatch == 0 { break }
            }
            return rows + (sink < 0 ? 1 : 0)
        }

        /// Steps `sql` to the end, reading every column of each row into Swift values for `body`.
        @discardableResult
        func forEachRow(_ sql: String, _ body: ([SQLValue]) -> Void) throws -> Int {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
            defer { sqlite3_finalize(stmt) }
            let n = sqlite3_column_count(stmt)
            var rows = 0
            while sqlite3_step(stmt) == SQLITE_ROW {
                let values = Self.rowValues(stmt, n)
                body(values)
                rows += 1
            }
            return rows
        }
    }

    /// Opening: the ID fetch into a temp table, ours vs `INSERT INTO temp … SELECT rowid …`.
    static func opening(path: String, sortKey: String?, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        let order = sortKey.map { " ORDER BY \(quoteIdentifier($0)), rowid" } ?? " ORDER BY rowid"
        var ours: [Double] = [], base: [Double] = []
        for i in 0..<repeats {
            try raw.exec("DROP TABLE IF EXISTS temp.raw_ids; CREATE TEMP TABLE raw_ids(pos INTEGER PRIMARY KEY, key)")
            let t = try time { try raw.exec("INSERT INTO temp.raw_ids(key) SELECT rowid FROM main.movie\(order)") }
            base.append(t)
            let context = try ManagedObjectContext(store: store)
            var request = FetchRequest(entityName: "movie", fetchBatchSize: 100)
            if let sortKey { request.sortDescriptors = [SortDescriptor(key: sortKey)] }
            var rows: BatchFaultingCollection?
            ours.append(try time { rows = try context.fetchBatched(request) })
            _ = rows?.count
            rows = nil
            _ = i
        }
        try raw.exec("DROP TABLE IF EXISTS temp.raw_ids")
        return Comparison(name: sortKey.map { "open sorted by \($0) (unindexed)" } ?? "open unsorted (ID fetch)",
                          oursSeconds: median(ours), rawSeconds: median(base), target: 1.2,
                          baseline: "INSERT INTO temp … SELECT rowid FROM movie\(order)")
    }

    /// `G` typed as the first rows of a sorted result show, while its IDs are still fetched: the
    /// browser's read of the last screen of rows (a reversed `ORDER BY … LIMIT` on a second
    /// connection, opened for it, beside the running ID fetch), against the same query alone.
    /// A repeat where the fetch ended before `G` was read (nothing to wait for) is not counted.
    static func lastRowsDuringLoad(path: String, sortKey: String, repeats: Int) throws -> Comparison {
        let raw = try RawConnection(path: path)
        var base: [Double] = []
        let (ours, shown) = try peekTimes(repeats: repeats) { terminal in
            try Browser(store: try PersistentStore(path: path, options: .init(readOnly: true)), options: BrowserOptions(table: "movie", sort: sortKey), backend: terminal)
        }
        let sql = "SELECT id, title, year, rating, votes, genre, director_id FROM movie ORDER BY \(quoteIdentifier(sortKey)) DESC, rowid DESC LIMIT \(shown)"
        for _ in 0..<repeats { base.append(try time { try raw.sweep(sql) }) }
        return Comparison(name: "G while the IDs load: last \(shown) rows of a sort by \(sortKey)\(ours.isEmpty ? " (the fetch always ended first: not measured)" : "")",
                          oursSeconds: ours.isEmpty ? 0 : median(ours), rawSeconds: median(base),
                          target: 1.5, baseline: "SELECT … ORDER BY \(sortKey) DESC, rowid DESC LIMIT \(shown), alone")
    }

    /// `G` typed as the first rows of a sorted sheet show, `repeats` times, each in a browser
    /// `makeBrowser` opens on a 200x50 in-memory screen: the seconds of each read of the last
    /// rows (a repeat where the fetch ended before it is not counted), and the rows a screen shows.
    static func peekTimes(repeats: Int, makeBrowser: (MemoryTerminal) throws -> Browser) throws -> (seconds: [Double], shown: Int) {
        var times: [Double] = []
        var shown = 48
        for _ in 0..<repeats {
            let terminal = MemoryTerminal(width: 200, height: 50)
            let browser = try makeBrowser(terminal)
            var peeked: Double?
            browser.log = { line in
                guard line.hasPrefix("peeked the last"), let seconds = line.split(separator: " ").dropLast().last.flatMap({ Double($0) }) else { return }
                peeked = seconds
            }
            terminal.keys = [.char("G")]
            browser.start()
            while browser.idle() {}
            shown = browser.state.gridHeight
            if let peeked { times.append(peeked) }
        }
        return (times, shown)
    }

    /// `/` for a value no row holds, from the first row of a result sorted by `sortKey`: ours
    /// (``BatchFaultingCollection/firstPosition(matching:after:backwards:progress:)``, in result
    /// order) against the scan SQLite does for the same test of every row (`count(*) … LIKE`).
    static func searchMissing(path: String, sortKey: String, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: sortKey)], fetchBatchSize: 100))
        let text = "no title holds this"
        let predicate = try FetchPredicate(format: "string(title) CONTAINS[c] %@", arguments: [.value(.text(text))])
        var ours: [Double] = [], base: [Double] = []
        for _ in 0..<repeats {
            base.append(try time { try raw.sweep("SELECT count(*) FROM movie WHERE title LIKE '%\(text)%'") })
            ours.append(try time { _ = try rows.firstPosition(matching: predicate, after: 0) })
        }
        return Comparison(name: "/ for a missing value over a result sorted by \(sortKey)", oursSeconds: median(ours), rawSeconds: median(base),
                          target: 1.5, baseline: "SELECT count(*) FROM movie WHERE title LIKE '%…%'")
    }

    /// The count a search's status line gives (the rows whose title holds "forest", any case):
    /// ours (`count(for:)` of `string(title) CONTAINS[c]`, what the browser's second connection
    /// runs after the first match) against SQLite's `count(*) … LIKE`.
    static func searchCount(path: String, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        let context = try ManagedObjectContext(store: store)
        let predicate = try FetchPredicate(format: "string(title) CONTAINS[c] %@", arguments: [.value(.text("forest"))])
        var ours: [Double] = [], base: [Double] = []
        var counted = 0
        for _ in 0..<repeats {
            base.append(try time { try raw.sweep("SELECT count(*) FROM movie WHERE title LIKE '%forest%'") })
            ours.append(try time { counted = try context.count(for: FetchRequest(entityName: "movie", predicate: predicate)) })
        }
        return Comparison(name: "a search's match count (\(group(counted)) rows hold forest)", oursSeconds: median(ours), rawSeconds: median(base),
                          target: 1.5, baseline: "SELECT count(*) FROM movie WHERE title LIKE '%forest%'")
    }

    /// A 20,000-character paste into the filter prompt, as a terminal delivers it (every
    /// character a key, read in one burst), to the prompt holding it: against a budget of 0.1 s.
    static func paste(path: String, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let filter = String(String(repeating: "rating > 1 OR ", count: 1_500).prefix(20_000))
        var ours: [Double] = []
        for _ in 0..<repeats {
            let terminal = MemoryTerminal(width: 200, height: 50)
            let browser = try Browser(store: store, options: BrowserOptions(table: "movie"), backend: terminal)
            browser.start()
            browser.send(.char("f"))
            terminal.keys = filter.map { Key.char($0) }
            let started = DispatchTime.now().uptimeNanoseconds
            while !terminal.keys.isEmpty { browser.sendBurst(terminal.keys.removeFirst()) }
            ours.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return Comparison(name: "paste of 20,000 characters into a prompt", oursSeconds: median(ours), rawSeconds: 0.1,
                          target: 1.0, baseline: "a budget of 0.1 s")
    }

    /// Time to the first batch of a sorted result, ours (``ManagedObjectContext/beginFetch(_:residentBatches:)``)
    /// vs `SELECT … ORDER BY … LIMIT batch`.
    static func firstBatch(path: String, sortKey: String, batchSize: Int, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        var ours: [Double] = [], base: [Double] = []
        let sql = "SELECT id, title, year, rating, votes, genre, director_id FROM movie ORDER BY \(quoteIdentifier(sortKey)), rowid LIMIT \(batchSize)"
        for _ in 0..<repeats {
            base.append(try time { try raw.sweep(sql) })
            let context = try ManagedObjectContext(store: store)
            let request = FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: sortKey)], fetchBatchSize: batchSize)
            ours.append(try time { _ = try context.beginFetch(request).firstBatch.count })
        }
        return Comparison(name: "first batch of a sorted result", oursSeconds: median(ours), rawSeconds: median(base),
                          target: 1.2, baseline: "SELECT … ORDER BY \(sortKey) LIMIT \(batchSize)")
    }

    /// A full sweep at `batchSize`, touching one value of every object (what a list or a scrolling
    /// view does), vs a raw cursor loop over the same query reading every column.
    ///
    /// With `everyValue`, ours reads every attribute of every object too; batch values are kept
    /// packed and decoded on access, so this shows what the decoding costs when all of it is done.
    /// Targets: 1.2x for one value, 1.3x for every value.
    static func sweep(path: String, batchSize: Int, repeats: Int, everyValue: Bool = false) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        var ours: [Double] = [], base: [Double] = []
        for _ in 0..<repeats {
            base.append(try time { try raw.sweep("SELECT rowid, id, title, year, rating, votes, genre, director_id FROM movie ORDER BY rowid") })
            let context = try ManagedObjectContext(store: store)
            let rows = try context.fetchBatched(FetchRequest(entityName: "movie", fetchBatchSize: batchSize), residentBatches: 2)
            ours.append(try time { _ = try sweepBody(rows, everyValue: everyValue) })
        }
        return Comparison(name: everyValue ? "full sweep reading every value" : "full sweep, batch size \(batchSize)",
                          oursSeconds: median(ours), rawSeconds: median(base),
                          target: everyValue ? 1.3 : 1.2, baseline: "raw sqlite3_step loop over SELECT * FROM movie, every column read")
    }

    /// The sweep the ratio times: one value (`year`) of every object, or every value of every object.
    static func sweepBody(_ rows: BatchFaultingCollection, everyValue: Bool) throws -> Int {
        var sink = 0
        if everyValue {
            let attributes = rows.entity.attributes.count
            for object in rows {
                guard let object else { continue }
                for i in 0..<attributes {
                    switch try object.value(at: i) {
                    case .integer(let n): sink &+= Int(truncatingIfNeeded: n)
                    case .text(let t): sink &+= t.utf8.count
                    default: sink &+= 1
                    }
                }
            }
        } else {
            for object in rows { if let object { if case .integer(let y) = try object.value(at: 2) { sink &+= Int(y) } } }
        }
        return sink
    }

    /// Sweeps every row of `movie` in this process, batched or into an eager array, sampling RSS.
    /// Meant to run alone in a fresh process (see `faultline bench-worker`).
    static func memorySweep(path: String, eager: Bool, batchSize: Int, samples: Int) throws -> MemorySweep {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let context = try ManagedObjectContext(store: store)
        let start = ProcessMemory.residentBytes()
        var points: [[Int]] = [[0, start]]
        var swept = 0
        var total = 0
        let request = FetchRequest(entityName: "movie", fetchBatchSize: batchSize)
        if eager {
            // The eager path: every object in a Swift array (Core Data's Array-copy trap).
            let n = try context.count(for: request)
            let step = max(1, n / samples)
            var all: [ManagedObject] = []
            all.reserveCapacity(n)
            var offset = 0
            // Fetch in slices so RSS can be sampled as the array grows; the array keeps everything.
            while offset < n {
                var slice = request
                slice.fetchBatchSize = 0
                slice.fetchOffset = offset
                slice.fetchLimit = step
                let part = try context.fetchAll(slice)
                all.append(contentsOf: part)
                offset += step
                points.append([min(offset, n), ProcessMemory.residentBytes()])
            }
            total = all.count
            swept = all.count
        } else {
            let rows = try context.fetchBatched(request, residentBatches: 8)
            total = rows.count
            let step = max(1, total / samples)
            var sink = 0
            for i in rows.indices {
                if let o = rows[i], case .integer(let y) = try o.value(at: 2) { sink &+= Int(y) }
                swept += 1
                if swept % step == 0 { points.append([swept, ProcessMemory.residentBytes()]) }
            }
            if sink == 42 { print("") }
        }
        _ = swept
        return MemorySweep(mode: eager ? "eager array" : "batched (batch \(batchSize), 8 resident)", rows: total,
                           startRSS: start, peakRSS: ProcessMemory.peakResidentBytes(), samples: points)
    }

}

extension Benchmark {
    /// Merge figures: the stored form (what ``BatchResultType/changes`` returns) is the target's;
    /// the array form (what ``BatchResultType/objectIDs`` returns) is shown beside it.
    struct MergeFigures: Sendable, Codable {
        var updatedIDs: Int
        var objectsHeld: Int
        /// Merging a ``StoredChanges`` table of `updatedIDs` keys.
        var seconds: Double
        /// Merging the same IDs from a Swift array.
        var arraySeconds: Double
        /// Objects the merge refaulted (held objects among the changed rows).
        var refaulted: Int
    }

    /// Merges up to 1M updated IDs into a context holding 1,000 fulfilled objects, on a scratch copy:
    /// a real batch update (`votes = votes` on the first 1M rows, result type `.changes`) makes the
    /// stored table; the median of `repeats` merges of it, and of the same IDs as an array.
    /// Target: under 50 ms.
    static func merge(path: String, repeats: Int) throws -> MergeFigures {
        let copy = try scratchCopy(path, "merge"); defer { removeScratch(copy) }
        let store = try PersistentStore(path: copy)
        let worker = try ManagedObjectContext(store: store)
        let result = try worker.execute(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("rowid <= 1000000"),
                                                           propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes"), resultType: .changes))
        guard let changes = result.changes, let stored = changes.stored.first else { throw BatchStoreError(.invalidArgument, "no stored changes") }
        let ids = try stored.objectIDs()
        var times: [Double] = [], arrayTimes: [Double] = []
        var held = 0, refaulted = 0
        for _ in 0..<repeats {
            for fromArray in [false, true] {
                let context = try ManagedObjectContext(store: store)
                let objects = try context.fetchAll(FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "title")], fetchLimit: 1_000))
                held = objects.count
                var report: MergeReport?
                let t = time { report = context.mergeChanges(fromArray ? ChangeSet(updated: ids) : changes) }
                if fromArray { arrayTimes.append(t) } else { times.append(t); refaulted = report?.updated.count ?? 0 }
                _ = objects.count
            }
        }
        return MergeFigures(updatedIDs: stored.count, objectsHeld: held, seconds: median(times), arraySeconds: median(arrayTimes), refaulted: refaulted)
    }
}
