import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// The batched-result conformance suite, one definition (``ConformanceModel`` and
/// ``batchedResultFailures(_:expected:stores:)``), run over PostgreSQL as `ConformanceTests` runs
/// it over one SQLite store and several: every entry point (iteration both ways, random access,
/// the throwing read, object IDs, slices, statistics, membership, refresh) against the same model,
/// for every batch size, resident limit, limit and offset, sort and filter.
@Suite("Batched results conform over PostgreSQL", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresConformanceTests {
    @Test("every entry point agrees with the model", arguments: [0, 7, 201])
    func conforms(size: Int) throws {
        let server = try PostgresServer.require()
        // The same rows as the SQLite suite's first store for this size.
        let rows = ConformanceModel.rows(sizes: [size, size / 2, (size * 3) / 4], seed: UInt64(size) + 1).filter { $0.store == 0 }
        let values = rows.map { "(\($0.id), \($0.v.map(String.init) ?? "NULL"), '\($0.name)')" }
        let database = try server.makeDatabase("conform", sql: """
            CREATE TABLE m(id bigint PRIMARY KEY, v bigint, name text);
            \(values.isEmpty ? "" : "INSERT INTO m VALUES \(values.joined(separator: ", "));")
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let entity = try store.entity(named: "m")
        var combinations = 0
        for (batch, resident, limit, offset, sort, filtered) in ConformanceModel.combinations {
            let request = try ConformanceModel.request(filtered: filtered, sort: sort, limit: limit, offset: offset, batch: batch)
            let expected = ConformanceModel.expected(rows, stores: [0], filtered: filtered, sort: sort, limit: limit, offset: offset)
            let result = try store.fetchBatched(request, residentBatches: resident)
            let failures = batchedResultFailures(result, expected: expected.map { ObjectID(entity: entity, key: .primaryKey([.integer($0.id)])) })
            #expect(failures.isEmpty, "size \(size), batch \(batch), resident \(resident), limit \(limit), offset \(offset), sort \(sort), filtered \(filtered): \(failures.prefix(3))")
            combinations += 1
        }
        #expect(combinations == 4 * 3 * 5 * 3)
    }

    @Test("the checker notices a PostgreSQL result that is not the model")
    func checkerBites() throws {
        let server = try PostgresServer.require()
        let rows = ConformanceModel.rows(sizes: [20], seed: 9)
        let database = try server.makeDatabase("conform", sql: """
            CREATE TABLE m(id bigint PRIMARY KEY, v bigint, name text);
            INSERT INTO m VALUES \(rows.map { "(\($0.id), \($0.v.map(String.init) ?? "NULL"), '\($0.name)')" }.joined(separator: ", "));
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let entity = try store.entity(named: "m")
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "m", fetchBatchSize: 4))
        var expected = rows.map { ObjectID(entity: entity, key: .primaryKey([.integer($0.id)])) }
        #expect(batchedResultFailures(result, expected: expected).isEmpty)
        expected.swapAt(3, 11)
        #expect(!batchedResultFailures(result, expected: expected).isEmpty, "two rows swapped in the model")
        #expect(!batchedResultFailures(result, expected: Array(expected.dropLast())).isEmpty, "one row short")
    }
}
