@testable import BatchStore
import Foundation
import GRDB
import Testing

/// A result in rowid order reads a batch whose keys are one unbroken range as that range of the
/// table (`WHERE rowid BETWEEN first AND last`) instead of the join through the ID table. These
/// tests hold the two ways to the same answer: for every position, the row whose key the fetch
/// recorded, as the file holds it now, or nil when it is gone.
@Suite struct RangeFaultTests {
    /// Rows `ids` of `n(id INTEGER PRIMARY KEY, v, name)`.
    private func makeTable(_ dir: TempDir, ids: [Int]) throws -> String {
        let path = try makeDatabase(dir, sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
        try direct(path) { db in
            let s = try db.makeStatement(sql: "INSERT INTO n(id, v, name) VALUES (?, ?, ?)")
            for i in ids { try s.execute(arguments: [i, i * 10, "row \(i)"]) }
        }
        return path
    }

    /// The file's rows now, by id.
    private func currentRows(_ path: String) throws -> [Int64: [SQLValue]] {
        try direct(path) { db in
            var rows: [Int64: [SQLValue]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, v, name FROM n") {
                let id: Int64 = row[0]
                rows[id] = [.integer(id), (row[1] as Int64?).map(SQLValue.integer) ?? .null, (row[2] as String?).map(SQLValue.text) ?? .null]
            }
            return rows
        }
    }

    @Test func anUnbrokenBatchIsReadAsARangeAndABatchWithGapsThroughTheIDTable() throws {
        let dir = TempDir()
        // Rows 1…100, 201…300 and 400: batches of 40 are unbroken, but for positions 80…119
        // (rows 81…100 and 201…220) and the last, 280…290 (rows 281…300 and 400).
        let path = try makeTable(dir, ids: Array(1...100) + Array(201...300) + [400])
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 40))
        let dense = try rows.statements(faultingBatchAt: 60)
        #expect(dense.batchFault.contains("BETWEEN") && !dense.batchFault.contains("bs_ids"), "\(dense.batchFault)")
        #expect(dense.batchFaultArguments == [.integer(41), .integer(80)], "bound to the batch's first and last rowid")
        let later = try rows.statements(faultingBatchAt: 130)
        #expect(later.batchFaultArguments == [.integer(221), .integer(260)], "positions 120…159 are rows 221…260")
        for position in [100, 285] {
            let gap = try rows.statements(faultingBatchAt: position)
            #expect(gap.batchFault.contains("CROSS JOIN"), "position \(position): \(gap.batchFaultArguments)")
        }
        let sorted = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "v")], fetchBatchSize: 40))
        #expect(try sorted.statements(faultingBatchAt: 0).batchFault.contains("CROSS JOIN"), "a sorted result's keys need not ascend")
        var recorded: [Int64] = []
        for object in rows {
            let object = try #require(object)
            #expect(object.objectID.key == .rowid(try #require(try object.value(at: 0).integerValue)))
            recorded.append(try #require(try object.value(at: 0).integerValue))
        }
        #expect(recorded == (Array(1...100) + Array(201...300) + [400]).map(Int64.init))
    }

    /// Random files with gaps, then random deletes, updates and inserts (reusing deleted ids, and
    /// past the end) after the fetch: the unsorted result (range reads) and the same result sorted
    /// by the rowid alias (the join), each in its own context, agree with the file at every position.
    @Test(arguments: 1...6) func rangeReadsAndTheJoinAgreeWithTheFileAfterRandomChanges(seed: Int) throws {
        var rng = SplitMix64(seed: UInt64(seed))
        let dir = TempDir()
        var ids: [Int] = []
        var id = 0
        for _ in 0..<(300 + rng.below(400)) {
            // Odd seeds: no gap at all (every batch's keys follow from its positions); even seeds:
            // mostly unbroken, a gap now and then.
            id += seed % 2 == 0 && rng.below(10) == 0 ? 2 + rng.below(5) : 1
            ids.append(id)
        }
        let path = try makeTable(dir, ids: ids)
        let store = try PersistentStore(path: path)
        let batch = 1 + rng.below(64)
        let ranged = try ManagedObjectContext(store: store)
        let joined = try ManagedObjectContext(store: store)
        let a = try ranged.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: batch), residentBatches: 2)
        let b = try joined.fetchBatched(BatchStore.FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: batch), residentBatches: 2)
        #expect(a.count == ids.count && b.count == ids.count)
        for round in 0..<4 {
            try direct(path) { db in
                for _ in 0..<(5 + rng.below(40)) {
                    let victim = ids[rng.below(ids.count)]
                    switch rng.below(4) {
                    case 0: try db.execute(sql: "DELETE FROM n WHERE id = ?", arguments: [victim])
                    case 1: try db.execute(sql: "UPDATE n SET v = ?, name = ? WHERE id = ?", arguments: [rng.below(1000), "changed \(round)", victim])
                    case 2: try db.execute(sql: "INSERT OR REPLACE INTO n(id, v, name) VALUES (?, ?, ?)", arguments: [victim, -1, "again \(round)"])
                    default: try db.execute(sql: "INSERT INTO n(v, name) VALUES (?, ?)", arguments: [-2, "new \(round)"])
                    }
                }
            }
            a.evictAllBatches(); b.evictAllBatches()
            ranged.reset(); joined.reset()
            let now = try currentRows(path)
            for position in 0..<ids.count {
                let key = Int64(ids[position])
                let want = now[key]
                for (name, result) in [("range", a), ("join", b)] {
                    let object = try result.object(at: position)
                    if let want {
                        let values = try (0..<3).map { try #require(object, "\(name) seed \(seed) round \(round) position \(position): row \(key) exists").value(at: $0) }
                        #expect(values == want, "\(name) seed \(seed) round \(round) position \(position)")
                    } else {
                        #expect(object == nil, "\(name) seed \(seed) round \(round) position \(position): row \(key) is gone")
                    }
                }
            }
        }
    }

    /// A result with no gap at all is read by ranges computed from positions; after a refresh over
    /// rows deleted since, the keys have gaps and the ranges come from lookups again.
    @Test func aRefreshAfterDeletesForgetsThatTheKeysHadNoGap() throws {
        let dir = TempDir()
        let path = try makeTable(dir, ids: Array(1...500))
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 50), residentBatches: 1)
        #expect(try rows.object(at: 120)?.value(at: 2) == .text("row 121"))
        try direct(path) { db in try db.execute(sql: "DELETE FROM n WHERE id % 7 = 0") }
        rows.evictAllBatches()
        for position in 0..<500 {
            let id = position + 1
            #expect(try rows.object(at: position)?.value(at: 0) == (id % 7 == 0 ? nil : .integer(Int64(id))), "before the refresh, position \(position)")
        }
        try rows.refresh()
        let kept = (1...500).filter { $0 % 7 != 0 }
        #expect(rows.count == kept.count)
        for (position, id) in kept.enumerated() {
            #expect(try rows.object(at: position)?.value(at: 2) == .text("row \(id)"), "after the refresh, position \(position)")
        }
        #expect(try rows.statements(faultingBatchAt: 0).batchFault.contains("CROSS JOIN"), "rows 1…57 less 8 multiples of 7: gaps")
    }
}
