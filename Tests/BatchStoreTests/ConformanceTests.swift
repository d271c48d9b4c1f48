import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// Both kinds of batched result (one store, several stores) against one checker and one model,
/// over many sizes, batch sizes, resident limits, limits, offsets, filters and sorts.
@Suite("Batched results conform: one store and several, every size")
struct ConformanceTests {
    /// A row of the model: which store, its key, and the values the fetch filters and sorts on.
    struct Row { var store: Int; var id: Int64; var v: Int64?; var name: String }

    /// Three stores of `m(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)` with `sizes[i]` rows each;
    /// values repeat (ties), and some are NULL.
    func makeStores(_ dir: TempDir, sizes: [Int], seed: UInt64) throws -> (paths: [String], rows: [Row]) {
        var state = seed
        func next(_ n: Int) -> Int64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int64((state >> 33) % UInt64(n))
        }
        var rows: [Row] = []
        let paths = try sizes.enumerated().map { store, size -> String in
            let path = dir.path("s\(store).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE m(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
                let insert = try db.makeStatement(sql: "INSERT INTO m VALUES (?, ?, ?)")
                var id: Int64 = 0
                for _ in 0..<size {
                    id += 1 + next(3)                       // gaps in the keys
                    let v: Int64? = next(10) == 0 ? nil : next(7)
                    let name = "n\(next(5))"
                    try insert.execute(arguments: [id, v, name])
                    rows.append(Row(store: store, id: id, v: v, name: name))
                }
            }
            return path
        }
        return (paths, rows)
    }

    /// The model's answer: filter `v >= 2` when `filtered`, sort by `v DESC` (NULLs last, as SQLite
    /// sorts them in descending order) or by `name ASC`, ties by store then key; offset, then limit.
    func model(_ rows: [Row], stores: Set<Int>, filtered: Bool, sort: Int, limit: Int, offset: Int) -> [Row] {
        var chosen = rows.filter { stores.contains($0.store) && (!filtered || ($0.v ?? Int64.min) >= 2) }
        chosen.sort { a, b in
            switch sort {
            case 1:
                // v DESC: SQLite sorts NULL first ascending, so last descending.
                if a.v != b.v {
                    switch (a.v, b.v) {
                    case (nil, _): return false
                    case (_, nil): return true
                    case let (x?, y?): return x > y
                    }
                }
            case 2:
                if a.name != b.name { return a.name < b.name }
            default: break
            }
            return (a.store, a.id) < (b.store, b.id)
        }
        let dropped = Array(chosen.dropFirst(offset))
        return limit > 0 ? Array(dropped.prefix(limit)) : dropped
    }

    func request(filtered: Bool, sort: Int, limit: Int, offset: Int, batch: Int) throws -> BatchStore.FetchRequest {
        let sorts: [BatchStore.SortDescriptor] = sort == 1 ? try SortDescriptor.parse("v desc") : sort == 2 ? try SortDescriptor.parse("name") : []
        return BatchStore.FetchRequest(entityName: "m", predicate: filtered ? try FetchPredicate("v >= 2") : nil, sortDescriptors: sorts,
                            fetchLimit: limit, fetchOffset: offset, fetchBatchSize: batch)
    }

    @Test("every entry point agrees with the model", arguments: [0, 1, 2, 7, 64, 201])
    func conforms(size: Int) throws {
        let dir = TempDir()
        // Store sizes differ so that a result across stores interleaves unevenly.
        let (paths, rows) = try makeStores(dir, sizes: [size, size / 2, (size * 3) / 4], seed: UInt64(size) + 1)
        let stores = try paths.map { try PersistentStore(path: $0) }
        let one = try ManagedObjectContext(store: stores[0])
        let several = try CoordinatedContext(coordinator: PersistentStoreCoordinator(stores: stores))
        var combinations = 0
        for batch in [1, 3, 10, 100] {
            for resident in [1, 2, 8] {
                for (limit, offset) in [(0, 0), (1, 0), (5, 3), (0, 4), (1000, 1)] {
                    for sort in 0...2 {
                        let filtered = (batch + limit + sort) % 2 == 0
                        let request = try request(filtered: filtered, sort: sort, limit: limit, offset: offset, batch: batch)
                        // One store.
                        let expectedOne = model(rows, stores: [0], filtered: filtered, sort: sort, limit: limit, offset: offset)
                        let entityOne = try stores[0].entity(named: "m")
                        let resultOne = try one.fetchBatched(request, residentBatches: resident)
                        let failuresOne = batchedResultFailures(resultOne, expected: expectedOne.map { ObjectID(entity: entityOne, key: .rowid($0.id)) })
                        #expect(failuresOne.isEmpty, "one store, size \(size), batch \(batch), resident \(resident), limit \(limit), offset \(offset), sort \(sort), filtered \(filtered): \(failuresOne.prefix(3))")
                        // Several stores, through the same checker.
                        let expectedAll = model(rows, stores: [0, 1, 2], filtered: filtered, sort: sort, limit: limit, offset: offset)
                        let entities = try several.coordinator.entities(named: "m")
                        let ids = expectedAll.map { ObjectID(entity: entities[$0.store], key: .rowid($0.id)) }
                        var names: [String: String] = [:]
                        for (row, id) in zip(expectedAll, ids) { names[id.uriRepresentation] = stores[row.store].name }
                        let resultAll = try several.fetchBatched(request, residentBatches: resident)
                        let failuresAll = batchedResultFailures(resultAll, expected: ids, stores: names)
                        #expect(failuresAll.isEmpty, "several stores, size \(size), batch \(batch), resident \(resident), limit \(limit), offset \(offset), sort \(sort), filtered \(filtered): \(failuresAll.prefix(3))")
                        combinations += 1
                    }
                }
            }
        }
        #expect(combinations == 4 * 3 * 5 * 3)
    }

    @Test("the checker notices a result that is not the model")
    func checkerBites() throws {
        let dir = TempDir()
        let (paths, rows) = try makeStores(dir, sizes: [20], seed: 9)
        let store = try PersistentStore(path: paths[0])
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: "m")
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "m", fetchBatchSize: 4))
        var expected = rows.map { ObjectID(entity: entity, key: .rowid($0.id)) }
        #expect(batchedResultFailures(result, expected: expected).isEmpty)
        expected.swapAt(3, 11)
        #expect(!batchedResultFailures(result, expected: expected).isEmpty, "two rows swapped in the model")
        #expect(!batchedResultFailures(result, expected: Array(expected.dropLast())).isEmpty, "one row short")
    }
}
