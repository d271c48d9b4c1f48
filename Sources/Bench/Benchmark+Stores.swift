import BatchStore
import Foundation

extension Benchmark {
    /// Several stores: the same rows split over `parts` files.
    struct StoresFigures: Sendable, Codable {
        var rows: Int
        var parts: Int
        /// Opening sorted by `title` (unindexed): one store, then the split stores.
        var oneStoreSeconds: Double
        var splitSeconds: Double
        var ratio: Double { oneStoreSeconds > 0 ? splitSeconds / oneStoreSeconds : 0 }
        /// Peak RSS growth during a full sweep of the split result (measured first, in a fresh
        /// process): connections and page caches per store, then flat.
        var splitSweepGrowth: Int
        /// A full sweep reading one value of every object: one store, then the split stores.
        var oneSweepSeconds: Double
        var splitSweepSeconds: Double
        var sweepRatio: Double { oneSweepSeconds > 0 ? splitSweepSeconds / oneSweepSeconds : 0 }
    }

    /// Splits `movie` of `path` into `parts` store files (rows by `id % parts`, in the scratch
    /// folder), then times opening the result sorted by `title` from one store and from the split
    /// stores, and measures the memory of a full sweep of each.
    static func stores(path: String, parts: Int, repeats: Int) throws -> StoresFigures {
        try FileManager.default.createDirectory(atPath: scratchDirectory, withIntermediateDirectories: true)
        defer { removeScratchDirectory() }
        var paths: [String] = []
        var schema: [String] = []
        try RawConnection(path: path).forEachRow("SELECT sql FROM sqlite_master WHERE name IN ('movie', 'director') AND type = 'table'") { row in
            if case .text(let sql) = row[0] { schema.append(sql) }
        }
        for part in 0..<parts {
            let file = scratchDirectory + "/part\(part).sqlite"
            removeScratch(file)
            let db = try RawConnection(path: file, readOnly: false, create: true)
            try db.exec("PRAGMA foreign_keys = ON")
            for sql in schema { try db.exec(sql) }
            try db.exec(RawConnection.attachReadOnly(path, as: "src"))
            try db.exec("INSERT INTO main.director SELECT * FROM src.director")
            try db.exec("INSERT INTO main.movie SELECT * FROM src.movie WHERE id % \(parts) = \(part)")
            try db.exec("DETACH DATABASE src")
            paths.append(file)
        }
        let one = try PersistentStore(path: path, options: .init(readOnly: true))
        let split = try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0, options: .init(readOnly: true)) })
        let request = FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "title")], fetchBatchSize: 100)
        func sweepGrowth(_ body: () throws -> Void) rethrows -> Int {
            _ = ProcessMemory.resetPeak()
            let start = ProcessMemory.residentBytes()
            try body()
            return max(0, ProcessMemory.peakResidentBytes() - start)
        }
        let splitGrowth = try sweepGrowth {
            let c = try CoordinatedContext(coordinator: split)
            let result = try c.fetchBatched(request, residentBatches: 8)
            var sink = 0
            for i in 0..<result.count { if let o = result[i], case .integer(let y) = try o.value(at: 2) { sink &+= Int(y) } }
            if sink == 42 { print("") }
        }
        var oneTimes: [Double] = [], splitTimes: [Double] = []
        var rows = 0
        for _ in 0..<repeats {
            let c1 = try ManagedObjectContext(store: one)
            oneTimes.append(try time { rows = try c1.fetchBatched(request).count })
            let c2 = try CoordinatedContext(coordinator: split)
            splitTimes.append(try time { _ = try c2.fetchBatched(request).count })
        }
        var oneSweeps: [Double] = [], splitSweeps: [Double] = []
        let unsorted = FetchRequest(entityName: "movie", fetchBatchSize: 100)
        for _ in 0..<repeats {
            let one = try ManagedObjectContext(store: one).fetchBatched(unsorted, residentBatches: 2)
            oneSweeps.append(try time { _ = try sweepBody(one, everyValue: false) })
            let split = try CoordinatedContext(coordinator: split).fetchBatched(unsorted, residentBatches: 2, firstBatch: nil, progress: nil)
            splitSweeps.append(try time { _ = try sweepBody(split, everyValue: false) })
        }
        return StoresFigures(rows: rows, parts: parts, oneStoreSeconds: median(oneTimes), splitSeconds: median(splitTimes),
                             splitSweepGrowth: splitGrowth, oneSweepSeconds: median(oneSweeps), splitSweepSeconds: median(splitSweeps))
    }
}
