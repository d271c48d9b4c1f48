import ArgumentParser
import BatchStore
import FaultlineDemo
import Browser
import Foundation
import TerminalCore

/// A printed tour for a pipe or a log: opens the demo database (creating it in the cache directory
/// on first run) and shows batching at work without the terminal browser.
struct Tour: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
        abstract: "Print a short tour of batch faulting on the demo database (no terminal needed).")

    @Option(help: "The database to tour (default: the demo database in the cache directory).")
    var db: String?

    @Option(help: "Movies in the demo database when it is created.")
    var rows: Int = 1_000_000

    func run() throws {
        if let db, isPostgresURL(db) {
            throw BatchStoreError(.invalidArgument, "tour reads a SQLite file (the demo database by default), not a PostgreSQL URL")
        }
        let path = try db ?? DemoDatabase.ensureInCache(rows: rows)
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let context = try ManagedObjectContext(store: store)
        let startRSS = ProcessMemory.residentBytes()
        let request = FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "rating", ascending: false), SortDescriptor(key: "votes", ascending: false)], fetchBatchSize: 100)
        let t0 = Date()
        let progressive = try context.beginFetch(request)
        let firstBatch = Date().timeIntervalSince(t0)
        print("faultline: \(TerminalText.escapingControlCharacters(path))")
        print(String(format: "first batch of movie sorted by rating desc (rating and votes are unindexed): %.0f ms", firstBatch * 1000))
        let rows = try progressive.finish()
        let stats = rows.statistics
        print(String(format: "all %@ row IDs fetched into %@ in %.2f s; none are in Swift memory", formatCount(stats.count), stats.idStorage, stats.idFetchSeconds))
        func show(_ range: Range<Int>) throws {
            for i in range {
                guard let m = rows[i] else { print(String(format: "%9d  (deleted since the fetch)", i + 1)); continue }
                let title = TerminalText.escapingControlCharacters(try m.value(forKey: "title").description)
                print(String(format: "%9d  %@  %@  %@", i + 1, pad(try m.value(forKey: "rating").description, 5), pad(try m.value(forKey: "year").description, 5), title))
            }
        }
        print("\n      row  rating year  title")
        try show(0..<min(5, rows.count))
        if rows.count > 10 {
            print("      …")
            let t1 = Date()
            try show((rows.count - 5)..<rows.count)
            print(String(format: "\njumped to the end: one batch fault, %.1f ms", Date().timeIntervalSince(t1) * 1000))
        }
        let after = rows.statistics
        print("batches faulted \(group(after.batchesFaulted)), resident \(group(after.batchesResident)), objects alive \(group(after.objectsAlive))")
        print("memory: \(ProcessMemory.residentBytes() / 1_048_576) MB resident (\(startRSS / 1_048_576) MB at start)")
        print("\nnext: faultline export \(path) --table movie --where 'year >= 2000' --sort 'votes desc' --limit 10")
        print("      faultline bench --rows 1000000")
    }

    func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
}
