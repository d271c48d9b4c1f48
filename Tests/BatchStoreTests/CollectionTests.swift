@testable import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct CollectionTests {
    /// Collection conformance over many (rows, batch size, limit, offset) combinations, against the
    /// eager path and against arithmetic.
    @Test func conformanceOverCombinations() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 57))
        let context = try ManagedObjectContext(store: store)
        for (rowsWhere, expectedRows) in [("id <= 0", 0), ("id == 1", 1), ("id <= 56", 56), ("TRUEPREDICATE", 57)] {
            for batchSize in [1, 2, 7, 56, 57, 100] {
                for limit in [0, 1, 10, 57, 80] {
                    for offset in [0, 3, 56, 60] {
                        let request = FetchRequest(entityName: "n", predicate: try FetchPredicate(format: rowsWhere),
                                                   sortDescriptors: [SortDescriptor(key: "v", ascending: false)],
                                                   fetchLimit: limit, fetchOffset: offset, fetchBatchSize: batchSize)
                        let rows = try context.fetchBatched(request, residentBatches: 2)
                        let all = (1...57).filter { $0 <= expectedRows }.map(Int64.init).reversed()
                        var expected = Array(all.dropFirst(offset))
                        if limit > 0 { expected = Array(expected.prefix(limit)) }
                        let label = "\(rowsWhere) batch \(batchSize) limit \(limit) offset \(offset)"
                        #expect(rows.count == expected.count, "\(label)")
                        #expect(rows.map { $0?.intID } == expected, "\(label)")
                        #expect(Array(rows.reversed()).map { $0?.intID } == expected.reversed(), "\(label)")
                        #expect(rows.indices == 0..<expected.count)
                        if expected.count > 4 {
                            let slice = rows[2..<5]
                            #expect(slice.map { $0?.intID } == Array(expected[2..<5]))
                            #expect(slice.startIndex == 2 && slice.count == 3)
                            #expect(rows.index(rows.startIndex, offsetBy: 3) == 3)
                            #expect(rows.distance(from: 1, to: 4) == 3)
                        }
                        #expect(try context.fetchAll(request).map(\.intID) == expected, "\(label): eager path agrees")
                    }
                }
            }
        }
    }

    @Test func rowsDeletedBetweenFetchAndFaultAreNil() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 100)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 10))
        #expect(rows.count == 100)
        try direct(path) { db in try db.execute(sql: "DELETE FROM n WHERE id % 7 = 0") }
        let present = rows.map { $0 == nil ? 0 : 1 }
        #expect(present.reduce(0, +) == 100 - 14)
        #expect(rows[6] == nil && rows[13] == nil && rows[0] != nil)
        #expect(rows.lastError == nil)
        // Fulfilled objects stay valid values; a refresh drops the gone rows from the count.
        try rows.refresh()
        #expect(rows.count == 86)
        #expect(rows.allSatisfy { $0 != nil })
    }

    @Test func eachBatchFaultIsOneQueryAndResidentObjectsStayBounded() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 5_000))
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100), residentBatches: 3)
        var statements: [String] = []
        try context.traceSQL { statements.append($0) }
        var maxAlive = 0
        for (i, object) in rows.enumerated() {
            #expect(object?.isFault == false)
            if i % 50 == 0 { maxAlive = max(maxAlive, context.registeredObjectCount) }
        }
        try context.traceSQL(nil)
        // One read of the table per batch of 100 over 5,000 rows: a range of rowids (the result is
        // in rowid order, with no gap), after one lookup of the first and last key in the ID table.
        let tableReads = statements.filter { $0.contains("main.\"n\"") }
        #expect(tableReads.count == 50, "\(statements.prefix(4))")
        #expect(tableReads.allSatisfy { $0.contains("BETWEEN ? AND ?") && !$0.contains("CROSS JOIN") })
        #expect(statements.count == 51 && statements.filter { !$0.contains("main.") }.allSatisfy { $0.contains("bs_ids") })
        #expect(maxAlive <= 3 * 100 + 1, "only resident batches keep objects alive (saw \(maxAlive))")
        let stats = rows.statistics
        #expect(stats.batchesFaulted == 50 && stats.batchesResident == 3 && stats.idsHeld == 5_000)
        // The IDs live in SQLite: the temp table the statistics name holds all 5,000, in order.
        let table = try #require(stats.idStorage.split(separator: " ").dropFirst(3).first.map(String.init))
        let keys = try context.withDatabase { db in try Int64.fetchAll(db, sql: "SELECT key FROM temp.\(quoteIdentifier(table)) ORDER BY pos") }
        #expect(keys == Array(1...5_000).map(Int64.init))
        #expect(stats.lastFaultSeconds != nil)
        // A held object survives eviction and comes back as the same instance.
        let held = rows[0]
        rows.evictAllBatches()
        #expect(rows[0] === held)
    }

    @Test func objectsDeletedInTheContextDropOutAtOnce() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 50)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 10))
        let victim = try #require(rows[5])
        #expect(rows[4] != nil, "batch 0 is now the resident fast-path batch")
        try context.delete(victim)
        #expect(rows[5] == nil, "the resident batch shows the deletion")
        _ = rows[45]
        #expect(rows[5] == nil, "and so does the cache after switching batches")
        context.rollback()
        #expect(rows[5] === victim)
        try context.delete(victim)
        try context.save()
        try rows.refresh()
        #expect(rows.count == 49)
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM n WHERE id = 6") } == 0)
    }

    @Test func descriptionNeverFaultsAndIterationKeepsBatching() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 1_000))
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 10))
        _ = rows.description + rows.debugDescription + "\(rows)" + String(reflecting: rows) + rows[100..<900].description
        #expect(rows.statistics.batchesFaulted == 0)
        var count = 0
        for object in rows[95..<125] { if object != nil { count += 1 } }
        #expect(count == 30)
        #expect(rows.statistics.batchesFaulted == 4, "95..<125 spans batches 9, 10, 11, 12: no 16-object minimum, no more")
        let firstThree = rows.prefix(3).map { $0?.intID }
        #expect(firstThree == [1, 2, 3])
        #expect(rows.statistics.batchesFaulted == 5)
    }

    @Test func tempTableGoesAwayWithTheCollection() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 100))
        let context = try ManagedObjectContext(store: store)
        do {
            let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 10))
            let copy = rows
            #expect(try context.temporaryTableNames().count == 1)
            _ = copy[rows.startIndex]
        }
        #expect(try context.temporaryTableNames().isEmpty)
    }

    @Test func refreshPicksUpInsertsAndDeletesAndKeepsTheAnchor() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 1_000)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "v")], fetchBatchSize: 50))
        #expect(rows[500]?.intID == 501)
        try direct(path) { db in
            try db.execute(sql: "DELETE FROM n WHERE id <= 100")
            try db.execute(sql: "INSERT INTO n(id, v) VALUES (5000, 0), (5001, 1)")
        }
        let newPosition = try rows.refresh(keeping: [500])
        #expect(rows.count == 902)
        #expect(newPosition == 402)
        #expect(rows[402]?.intID == 501)
        // The anchor is gone: the next candidate wins.
        try direct(path) { db in try db.execute(sql: "DELETE FROM n WHERE id = 501") }
        #expect(try rows.refresh(keeping: [402, 403, 401]) == 402)
        #expect(rows[402]?.intID == 502)
        #expect(try context.temporaryTableNames().count == 1)
    }

    @Test func progressiveOpeningGivesTheFirstBatchThenReportsProgressAndCancels() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 300_000)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let request = FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "name", ascending: false)], fetchBatchSize: 40)
        let progressive = try context.beginFetch(request)
        #expect(progressive.firstBatch.count == 40)
        #expect(progressive.firstBatch.first?.intID == 99_999, "'row 99999' sorts last as text")
        var reports: [IDFetchProgress] = []
        let rows = try progressive.finish { p in reports.append(p); return .proceed }
        #expect(rows.count == 300_000)
        #expect(rows.prefix(40).map { $0?.intID } == progressive.firstBatch.map(\.intID))
        #expect(!reports.isEmpty)
        #expect(reports.last?.rowsScanned == 300_000)
        let cancelling = try context.beginFetch(request)
        #expect(throws: BatchStoreError(.cancelled, "the fetch was cancelled")) {
            _ = try cancelling.finish { _ in .cancel }
        }
        #expect(try context.temporaryTableNames().count == 1, "a cancelled fetch leaves no temp table")
        _ = rows.count
    }

    @Test func withoutRowidTablesAndViewsBatchToo() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE kv(k TEXT, n INTEGER, v TEXT, PRIMARY KEY (k, n)) WITHOUT ROWID;
            WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 250)
              INSERT INTO kv SELECT 'key' || (i % 5), i, 'value ' || i FROM c;
            CREATE VIEW odd AS SELECT k, n, v FROM kv WHERE n % 2 = 1;
            """)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "kv", predicate: try FetchPredicate("n > 10"), sortDescriptors: [SortDescriptor(key: "n")], fetchBatchSize: 16))
        #expect(rows.count == 240)
        #expect(try rows.map { try $0?.value(forKey: "n") } == (11...250).map { SQLValue.integer(Int64($0)) })
        #expect(rows[0]?.objectID.key == .primaryKey([.text("key1"), .integer(11)]))
        try direct(path) { db in try db.execute(sql: "DELETE FROM kv WHERE n = 12") }
        context.refreshAllObjects()
        rows.evictAllBatches()
        #expect(rows[1] == nil)
        let view = try context.fetchBatched(FetchRequest(entityName: "odd", sortDescriptors: [SortDescriptor(key: "n", ascending: false)], fetchBatchSize: 7))
        #expect(view.count == 125)
        #expect(try view[0]?.value(forKey: "n") == .integer(249))
        #expect(try view.map { try $0?.value(forKey: "v") }.last == .text("value 1"))
    }

    @Test func resultTypes() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 30))
        let context = try ManagedObjectContext(store: store)
        var request = FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 100"), fetchLimit: 5, fetchOffset: 2)
        request.resultType = .count
        guard case .count(let c) = try context.execute(request) else { Issue.record("not a count"); return }
        #expect(c == 5)
        request.resultType = .managedObjectID
        guard case .objectIDs(let ids) = try context.execute(request) else { Issue.record("not ids"); return }
        #expect(ids.map(\.key) == (13...17).map { .rowid(Int64($0)) })
        request.resultType = .dictionary
        request.propertiesToFetch = ["name", "v"]
        guard case .dictionaries(let ds) = try context.execute(request) else { Issue.record("not dicts"); return }
        #expect(ds.first == ["name": .text("row 13"), "v": .integer(130)])
        request.resultType = .managedObject
        request.fetchBatchSize = 2
        guard case .batched(let rows) = try context.execute(request) else { Issue.record("not batched"); return }
        #expect(rows.count == 5)
        request.fetchBatchSize = 0
        guard case .objects(let objects) = try context.execute(request) else { Issue.record("not objects"); return }
        #expect(objects.count == 5 && !objects[0].isFault)
    }
}
