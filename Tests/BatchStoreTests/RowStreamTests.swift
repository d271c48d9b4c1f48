@testable import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// `streamRows` gives the rows a batched result holds, in the same order, for one store and
/// several, with no ID table and no objects; and it refuses what it would read wrongly.
@Suite struct RowStreamTests {
    /// Three stores with the same `movie` shape, overlapping ids, NULLs and ties in every column.
    func makeStores(_ dir: TempDir, rows: Int) throws -> [String] {
        try ["a", "b", "c"].enumerated().map { i, name in
            let path = dir.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL)")
                let s = try db.makeStatement(sql: "INSERT INTO movie VALUES (?, ?, ?, ?)")
                var rng = SplitMix64(seed: UInt64(i + 7))
                for id in 1...rows {
                    let title: String? = rng.below(10) == 0 ? nil : "t\(rng.below(30))"
                    let rating: Double? = rng.below(8) == 0 ? nil : Double(rng.below(50)) / 10
                    try s.execute(arguments: [id, title, 1950 + rng.below(20), rating])
                }
            }
            return path
        }
    }

    static let predicates = [nil, "year >= 1960", "title BEGINSWITH[c] 'T1'", "rating == nil OR rating > 2.5", "title IN {'t1', 't2'} AND year < 1965"]
    static let sorts = ["", "title", "rating desc, title", "year desc", "title desc, rating"]

    /// Every row of `result`, read through its objects, as `store:values`.
    func rows(of result: BatchFaultingCollection, storeNames: [String]) throws -> [String] {
        try result.indices.map { i in
            guard let object = try result.object(at: i) else { return "gone" }
            let values = try (0..<object.objectID.entity.attributes.count).map { try object.value(at: $0) }
            return "\(object.objectID.entity.storeName):\(values)"
        }
    }

    func streamed(_ context: some InPlaceStreamingContext, _ request: BatchStore.FetchRequest) throws -> [String] {
        var out: [String] = []
        let names = context.storeNames
        try context.streamRows(request) { row in out.append("\(names[row.storeIndex]):\(row.values)") }
        return out
    }

    @Test func sameRowsAndOrderAsTheBatchedResult() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 120)
        let one = try ManagedObjectContext(store: try PersistentStore(path: paths[0], options: .init(readOnly: true)))
        let several = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0, options: .init(readOnly: true)) }))
        var rng = SplitMix64(seed: 3)
        for round in 0..<60 {
            var request = BatchStore.FetchRequest(entityName: "movie")
            request.predicate = try Self.predicates[rng.below(Self.predicates.count)].map { try FetchPredicate($0) }
            let sort = Self.sorts[rng.below(Self.sorts.count)]
            request.sortDescriptors = sort.isEmpty ? [] : try SortDescriptor.parse(sort)
            if rng.below(2) == 0 { request.fetchLimit = rng.below(40) }
            if rng.below(2) == 0 { request.fetchOffset = rng.below(150) }
            request.fetchBatchSize = 1 + rng.below(30)
            for context in [one as any InPlaceStreamingContext, several as any InPlaceStreamingContext] {
                let expected = try rows(of: try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil), storeNames: context.storeNames)
                let got = try streamed(context, request)
                #expect(got == expected, "round \(round), \(context.storeNames.count) stores, \(request)")
            }
        }
    }

    @Test func noTempTableNoObjectsAndTheBodyCanStopIt() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 50)
        let context = try ManagedObjectContext(store: try PersistentStore(path: paths[0]))
        var seen = 0
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try context.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in
                seen += 1
                if seen == 10 { throw Stop() }
            }
        }
        #expect(seen == 10)
        #expect(context.registeredObjectCount == 0)
        let temp = try context.withDatabase { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_temp_master") }
        #expect(temp == 0, "no temp table is made or left")
        // The connection is usable afterwards: the statement was reset.
        #expect(try context.fetchBatched(BatchStore.FetchRequest(entityName: "movie")).count == 50)
    }

    @Test func refusesUnsavedChangesAndColumnsAStoreLacks() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 5)
        let context = try ManagedObjectContext(store: try PersistentStore(path: paths[0]))
        let object = try #require(try context.fetchAll(BatchStore.FetchRequest(entityName: "movie")).first)
        try object.setValue(.text("changed"), forKey: "title")
        #expect(throws: BatchStoreError.self) { try context.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in } }
        let child = try context.newChildContext()
        #expect(throws: BatchStoreError.self) { try child.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in } }
        context.rollback()
        var count = 0
        try child.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in count += 1 }
        #expect(count == 5)
        // A store whose table lacks a column of the first store's: one clear error, not misread values.
        try DatabaseQueue(path: paths[2]).write { try $0.execute(sql: "ALTER TABLE movie DROP COLUMN rating") }
        let several = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) }))
        let error = #expect(throws: BatchStoreError.self) {
            try several.streamRows(BatchStore.FetchRequest(entityName: "movie")) { _ in }
        }
        #expect(error?.message.contains("\"rating\"") == true, "\(String(describing: error))")
    }

    /// Several stores are one read: a commit to a later store while an earlier one streams is not
    /// seen, sorted or not (each store's snapshot is taken when the stream starts).
    @Test func severalStoresAreReadAsOfOneMoment() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 30)
        for path in paths { _ = try DatabaseQueue(path: path).inDatabase { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") } }
        for sort in ["", "id"] {
            let context = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0, options: .init(readOnly: true)) }))
            var request = BatchStore.FetchRequest(entityName: "movie")
            request.sortDescriptors = sort.isEmpty ? [] : try SortDescriptor.parse(sort)
            var titles: [SQLValue] = []
            var wrote = false
            try context.streamRows(request) { row in
                if !wrote {
                    wrote = true
                    try DatabaseQueue(path: paths[2]).write { try $0.execute(sql: "UPDATE movie SET title = 'LATER \(sort)'") }
                }
                if row.storeIndex == 2 { titles.append(row[1].sqlValue) }
            }
            #expect(titles.count == 30)
            #expect(!titles.contains(.text("LATER \(sort)")), "sort '\(sort)': the store was read as of the start")
            #expect(try DatabaseQueue(path: paths[2]).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE title = 'LATER \(sort)'") } == 30,
                    "the commit happened during the stream")
        }
    }

    /// Across stores, a table without one row key is refused whether the stream is sorted or not,
    /// as the batched result refuses it.
    @Test func severalStoresNeedOneRowKeySortedOrNot() throws {
        let dir = TempDir()
        let paths = try ["a", "b"].map { try makeDatabase(dir, "\($0).sqlite", sql: "CREATE TABLE ck(a, b, v, PRIMARY KEY (a, b)) WITHOUT ROWID; INSERT INTO ck VALUES (1, 2, 3)") }
        let several = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) }))
        for sort in [[], [SortDescriptor(key: "v")]] {
            #expect(throws: BatchStoreError.self) {
                try several.streamRows(BatchStore.FetchRequest(entityName: "ck", sortDescriptors: sort)) { _ in }
            }
        }
    }
}
