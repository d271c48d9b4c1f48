@testable import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// `BatchStore.FetchRequest.reversesOrder` gives the rows in exactly the reverse of the request's order
/// (ties broken by key, NULLs where the reverse puts them), so that with a limit it reads the
/// last rows of a sort by the engine's own top-N: what a browser shows for `G` while the IDs load.
@Suite("Fetches in reverse order")
struct ReversedOrderTests {
    /// The object IDs of `request` fetched whole, and the last `n` of it read reversed with a limit.
    func forwardAndTail(_ context: some FetchingContext, _ request: BatchStore.FetchRequest, last n: Int) throws -> (forward: [ObjectID], tail: [ObjectID]) {
        let all = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
        let forward = try (0..<all.count).compactMap { try all.objectID(at: $0) }
        var reversed = request
        reversed.reversesOrder = true
        reversed.fetchLimit = n
        let tail = try context.fetchBatched(reversed, residentBatches: 2, firstBatch: nil, progress: nil)
        return (forward, try (0..<tail.count).compactMap { try tail.objectID(at: $0) }.reversed())
    }

    @Test("one store: with ties, NULLs, several keys, a filter, a key-less table and no sort at all, the reversed limited fetch is the forward order's last rows")
    func oneStore() throws {
        let dir = TempDir()
        let path = dir.path("r.sqlite")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT); CREATE TABLE loose(a, b)")
            var rng = SplitMix64(seed: 7)
            for id in 1...500 {
                let a: Int? = rng.below(10) == 0 ? nil : rng.below(5)
                let b: String? = rng.below(7) == 0 ? nil : "v\(rng.below(4))"
                try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?)", arguments: [id, a, b])
                try db.execute(sql: "INSERT INTO loose VALUES (?, ?)", arguments: [a, b])
            }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for (table, sort, filter) in [("t", "a", ""), ("t", "a desc, b", ""), ("t", "b desc", "a >= 2"), ("t", "", ""), ("loose", "b, a desc", ""), ("loose", "", "b != nil")] {
            let request = BatchStore.FetchRequest(entityName: table, predicate: filter.isEmpty ? nil : try FetchPredicate(format: filter),
                                       sortDescriptors: sort.isEmpty ? [] : try SortDescriptor.parse(sort), fetchBatchSize: 50)
            let (forward, tail) = try forwardAndTail(context, request, last: 23)
            #expect(tail == Array(forward.suffix(23)), "\(table) sort \(sort) filter \(filter)")
            #expect(tail.count == 23)
        }
    }

    @Test("several stores: the reversed limited fetch is the forward order's last rows, ties by store then key")
    func severalStores() throws {
        let dir = TempDir()
        let paths = try ["a", "b"].enumerated().map { i, name in
            let path = dir.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER)")
                var rng = SplitMix64(seed: UInt64(i + 3))
                for id in 1...200 { try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [id, rng.below(6) == 0 ? nil : rng.below(4)]) }
            }
            return path
        }
        let context = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: try paths.map { try PersistentStore(path: $0) }))
        for sort in ["a", "a desc", ""] {
            let request = BatchStore.FetchRequest(entityName: "t", sortDescriptors: sort.isEmpty ? [] : try SortDescriptor.parse(sort), fetchBatchSize: 40)
            let (forward, tail) = try forwardAndTail(context, request, last: 17)
            #expect(tail == Array(forward.suffix(17)), "sort \(sort)")
        }
    }
}
