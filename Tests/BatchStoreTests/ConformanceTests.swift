import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// Both kinds of batched result (one store, several stores) against one checker and one model,
/// over many sizes, batch sizes, resident limits, limits, offsets, filters and sorts.
@Suite("Batched results conform: one store and several, every size")
struct ConformanceTests {
    typealias Row = ConformanceModel.Row

    /// Three stores of `m(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)` holding the model's rows.
    func makeStores(_ dir: TempDir, sizes: [Int], seed: UInt64) throws -> (paths: [String], rows: [Row]) {
        let rows = ConformanceModel.rows(sizes: sizes, seed: seed)
        let paths = try sizes.indices.map { store -> String in
            let path = dir.path("s\(store).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE m(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
                let insert = try db.makeStatement(sql: "INSERT INTO m VALUES (?, ?, ?)")
                for row in rows where row.store == store { try insert.execute(arguments: [row.id, row.v, row.name]) }
            }
            return path
        }
        return (paths, rows)
    }

    func model(_ rows: [Row], stores: Set<Int>, filtered: Bool, sort: Int, limit: Int, offset: Int) -> [Row] {
        ConformanceModel.expected(rows, stores: stores, filtered: filtered, sort: sort, limit: limit, offset: offset)
    }

    func request(filtered: Bool, sort: Int, limit: Int, offset: Int, batch: Int) throws -> BatchStore.FetchRequest {
        try ConformanceModel.request(filtered: filtered, sort: sort, limit: limit, offset: offset, batch: batch)
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
        for (batch, resident, limit, offset, sort, filtered) in ConformanceModel.combinations {
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
