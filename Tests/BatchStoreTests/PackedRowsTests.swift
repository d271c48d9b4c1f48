@testable import BatchStore
import Foundation
import GRDB
import Testing

/// Batch faults pack a batch's values into one ``PackedRows`` and decode them on access. These
/// tests check that every storage class survives the packing, and that an object the app keeps
/// never pins its batch's buffers once the collection lets the batch go.
@Suite struct PackedRowsTests {
    private func packedRows(of object: ManagedObject) -> PackedRows? {
        if case .packed(let rows, _) = object.storage { return rows }
        return nil
    }

    @Test func everyStorageClassSurvivesPacking() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE v(id INTEGER PRIMARY KEY, x)")
        let expected: [SQLValue] = [
            .integer(.min), .integer(.max), .integer(0), .real(-0.0), .real(1e308), .real(-2.5),
            .text(""), .text("a\u{0}b"), .text("é 日本 🙂"), .text(String(repeating: "long ", count: 5_000)),
            .blob(Data()), .blob(Data([0, 1, 2, 255])), .blob(Data(repeating: 7, count: 100_000)), .null,
        ]
        try direct(path) { db in
            let s = try db.makeStatement(sql: "INSERT INTO v(id, x) VALUES (?, ?)")
            for (i, value) in expected.enumerated() {
                switch value {
                case .integer(let n): try s.execute(arguments: [i + 1, n])
                case .real(let d): try s.execute(arguments: [i + 1, d])
                case .text(let t): try s.execute(arguments: [i + 1, Data(t.utf8)]); try db.execute(sql: "UPDATE v SET x = CAST(x AS TEXT) WHERE id = ?", arguments: [i + 1])
                case .blob(let b): try s.execute(arguments: [i + 1, b])
                case .null: try s.execute(arguments: [i + 1, DatabaseValue.null])
                }
            }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path, options: .init(readOnly: true)))
        // Batch size 3: values of several batches, with text and blobs spread across arenas.
        let rows = try context.fetchBatched(FetchRequest(entityName: "v", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 3))
        #expect(rows.count == expected.count)
        for (i, want) in expected.enumerated() {
            let object = try #require(rows[i])
            #expect(packedRows(of: object) != nil, "row \(i) was faulted by its batch, packed")
            let got = try object.value(forKey: "x")
            #expect(got == want, "row \(i): \(got.storageClass) vs \(want.storageClass)")
            #expect(try object.value(forKey: "id") == .integer(Int64(i + 1)))
        }
        #expect(try direct(path) { db in try String.fetchOne(db, sql: "SELECT typeof(x) FROM v WHERE id = 8") } == "text")
    }

    @Test func aKeptObjectGetsItsOwnValuesWhenItsBatchIsDropped() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 1_000))
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100), residentBatches: 2)
        let kept = try #require(rows[7])
        weak var buffer = packedRows(of: kept)
        #expect(buffer != nil)
        // Sweep on: batch 0 leaves the LRU; only `kept` survives it.
        for object in rows { _ = try object?.value(at: 1) }
        #expect(packedRows(of: kept) == nil, "the kept object was detached when its batch was dropped")
        // So the batch's buffers are free: gone, or reused by a later batch of the sweep.
        if let buffer {
            #expect(!(0..<buffer.rowCount).contains { buffer.value(row: $0, column: 2) == .text("row 8") }, "reused, not pinned")
        }
        #expect(try kept.value(forKey: "name") == .text("row 8"))
        #expect(try kept.value(forKey: "v") == .integer(80))
        #expect(rows[7] === kept, "and it is still the one object for its row")
        #expect(context.registeredObjectCount <= 2 * 100 + 1)
        // Two resident batches of 100 rows x 3 columns: cells plus one arena each.
        let bytes = try #require(rows.statistics.valueBytesResident)
        #expect(bytes > 2 * 100 * 3 * 13 && bytes <= 2 * (100 * 3 * 13 + 8192), "\(bytes)")
        rows.evictAllBatches()
        #expect(rows.statistics.valueBytesResident == 0)
    }

    /// A result across stores packs each store's share of a batch and detaches kept objects from
    /// every one of them when the batch goes.
    @Test func severalStoresPackAndDetachLikeOne() throws {
        let dir = TempDir()
        let paths = try ["a", "b"].map { name -> String in
            let path = try makeDatabase(dir, "\(name).sqlite", sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
            try direct(path) { db in
                for i in 1...300 { try db.execute(sql: "INSERT INTO n VALUES (?, ?, ?)", arguments: [i, i * (name == "a" ? 10 : -10), "\(name) \(i)"]) }
            }
            return path
        }
        let context = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) }))
        // Sorted by v: a batch mixes rows of both stores.
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "name")], fetchBatchSize: 50),
                                            residentBatches: 2, firstBatch: nil, progress: nil)
        #expect(rows.count == 600)
        let kept = try #require(rows[3])
        let other = try #require(rows[303])
        #expect(kept.objectID.entity.storeName == "a" && other.objectID.entity.storeName == "b")
        #expect(packedRows(of: kept) != nil && packedRows(of: other) != nil, "each store's share is packed")
        weak var buffer = packedRows(of: kept)
        let before = try kept.value(forKey: "name")
        #expect(before == .text("a 101"), "a 1, a 10, a 100, a 101, …")
        for object in rows { _ = try object?.value(at: 1) }
        #expect(packedRows(of: kept) == nil, "detached when its batch was dropped")
        if let buffer {
            #expect(!(0..<buffer.rowCount).contains { buffer.value(row: $0, column: 2) == before }, "reused, not pinned")
        }
        #expect(try kept.value(forKey: "name") == before)
        #expect(rows[3] === kept)
        #expect(try #require(rows.statistics.valueBytesResident) > 0)
    }

    @Test func anObjectInTwoCollectionsIsDetachedWhenItsOwnerDropsIt() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 300))
        let context = try ManagedObjectContext(store: store)
        var a: BatchFaultingCollection? = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 50))
        let b = try context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("id > 100"), fetchBatchSize: 50))
        let fromA = try #require(a?[149])
        weak var bufferA = packedRows(of: fromA)
        let fromB = try #require(b[49])
        #expect(fromA === fromB, "one object per row in a context")
        #expect(packedRows(of: fromB) === bufferA, "B reused the fulfilled object without re-reading it")
        a = nil
        // A went away: its buffer does not live on through B's batch (it is freed, or emptied and
        // kept for the context's next batch).
        #expect(bufferA == nil || bufferA?.rowCount == 0, "A's buffer is not pinned by B's batch")
        #expect(packedRows(of: fromB) == nil)
        #expect(try b[49]?.value(forKey: "v") == .integer(1_500))
    }

    @Test func refreshAndReReadGiveNewValuesNotTheOldBuffer() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 10))
        let object = try #require(rows[3])
        #expect(try object.value(forKey: "v") == .integer(40))
        try direct(path) { db in try db.execute(sql: "UPDATE n SET v = -1 WHERE id = 4") }
        context.refresh(object, mergeChanges: false)
        #expect(object.isFault)
        #expect(try object.value(forKey: "v") == .integer(-1))
    }
}
