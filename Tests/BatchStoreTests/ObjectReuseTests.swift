@testable import BatchStore
import Foundation
import Testing

/// When a batch leaves a collection's LRU, the objects only it held go back to their context and
/// are reused for the next rows (a sweep then allocates no object per row). These tests check
/// that reuse is invisible: every value is the right row's, and no object that anything still
/// refers to (strongly, weakly, unowned, or through unsaved changes) is ever given another row.
@Suite struct ObjectReuseTests {
    /// Row `i` of `makeNumbers`: (id, v, name).
    private func expected(_ i: Int) -> [SQLValue] { [.integer(Int64(i)), .integer(Int64(i * 10)), .text("row \(i)")] }

    @Test func sweepsReuseObjectsAndEveryValueIsTheRightRows() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 1_000)))
        // Three sweeps: forwards, backwards and by a stride, so reused objects meet rows in every order.
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 64), residentBatches: 2)
        let orders: [[Int]] = [Array(0..<1_000), Array((0..<1_000).reversed()), (0..<1_000).map { ($0 * 389) % 1_000 }]
        for order in orders {
            for i in order {
                let object = try #require(rows[i])
                #expect(object.objectID.key == .rowid(Int64(i + 1)))
                for column in 0..<3 { #expect(try object.value(at: column) == expected(i + 1)[column], "row \(i + 1) column \(column)") }
                #expect(context.registeredObject(for: object.objectID) === object, "the identity map answers with this object for its row")
            }
        }
        #expect(context.identity.spareCount > 0, "dropped batches gave their objects back")
        #expect(context.identity.spareCount <= IdentityMap.spareLimit)
        #expect(context.registeredObjectCount <= 2 * 64, "only resident batches' objects are registered")
    }

    @Test func aWeaklyHeldObjectIsNeverGivenAnotherRow() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 500)))
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 50), residentBatches: 1)
        weak var watched = rows[5]
        #expect(watched != nil)
        for object in rows { _ = try object?.value(at: 1) }
        // Reused, it would now stand for some other row; it must have died with its batch instead.
        #expect(watched == nil)
    }

    @Test func anUnownedOrStronglyHeldObjectStaysOut() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 10)))
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 10), residentBatches: 1)
        let strong = try #require(rows[1])
        var batch: [ManagedObject?] = try (0..<4).map { try #require(rows[$0]) }
        rows.evictAllBatches()
        let unownedTarget = try #require(batch[2])
        unowned let unownedRef = unownedTarget
        _ = unownedRef
        let before = context.identity.spareCount
        context.identity.recycle(&batch, link: context.link)
        #expect(batch[1] === strong, "held elsewhere: left in place")
        #expect(batch[2] === unownedTarget, "an unowned reference exists: left in place")
        #expect(batch[0] == nil && batch[3] == nil, "the others were taken")
        #expect(context.identity.spareCount == before + 2)
        #expect(try strong.value(at: 2) == .text("row 2"))
        #expect(try unownedTarget.value(at: 2) == .text("row 3"))
    }

    @Test func objectsWithChangesOrDeletedAreNotReused() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 400)))
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 20), residentBatches: 1)
        let changedID = try #require(rows[3]).objectID
        try #require(rows[3]).setValue(.text("changed"), forKey: "name")
        let deletedID = try #require(rows[4]).objectID
        try context.delete(try #require(rows[4]))
        for object in rows { _ = try object?.value(at: 1) }
        let changed = try #require(rows[3])
        #expect(changed.objectID == changedID)
        #expect(try changed.value(forKey: "name") == .text("changed"), "the unsaved change survived its batch")
        #expect(rows[4] == nil, "the deleted object stays deleted")
        #expect(context.registeredObject(for: deletedID)?.isDeleted == true)
        #expect(try rows[5]?.value(forKey: "name") == .text("row 6"))
        try context.save()
        let check = try ManagedObjectContext(store: context.store)
        #expect(try check.existingObject(with: changedID).value(forKey: "name") == .text("changed"))
        #expect(throws: BatchStoreError.self) { try check.existingObject(with: deletedID) }
    }

    @Test func resetAndAnotherResultStillGetTheirOwnRows() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 300)))
        do {
            let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", fetchBatchSize: 25), residentBatches: 1)
            for object in rows { _ = try object?.value(at: 0) }
        }
        #expect(context.identity.spareCount > 0)
        context.reset()
        var request = BatchStore.FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 1500"), fetchBatchSize: 25)
        request.sortDescriptors = [SortDescriptor(key: "v", ascending: false)]
        let rows = try context.fetchBatched(request, residentBatches: 1)
        #expect(rows.count == 150)
        for (k, object) in rows.enumerated() {
            let i = 300 - k
            #expect(try object?.value(at: 0) == .integer(Int64(i)))
            #expect(try object?.value(at: 2) == .text("row \(i)"))
        }
    }

    /// Across stores, each object and each store's packed values go back to their own context.
    @Test func severalStoresReuseIntoTheirOwnContexts() throws {
        let dir = TempDir()
        let paths = try ["a", "b", "c"].map { name -> String in
            let path = try makeDatabase(dir, "\(name).sqlite", sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
            try direct(path) { db in
                for i in 1...200 { try db.execute(sql: "INSERT INTO n VALUES (?, ?, ?)", arguments: [i, i, "\(name) \(i)"]) }
            }
            return path
        }
        let context = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) }))
        // Sorted by v then store: each batch mixes the three stores.
        let rows = try context.fetchBatched(BatchStore.FetchRequest(entityName: "n", sortDescriptors: [SortDescriptor(key: "v")], fetchBatchSize: 30),
                                            residentBatches: 1, firstBatch: nil, progress: nil)
        #expect(rows.count == 600)
        for _ in 0..<3 {
            for (k, object) in rows.enumerated() {
                let object = try #require(object)
                let store = ["a", "b", "c"][k % 3]
                let i = k / 3 + 1
                #expect(object.objectID.entity.storeName == store)
                #expect(object.managedObjectContext === context.contexts[k % 3], "an object stays in its own store's context")
                #expect(try object.value(forKey: "name") == .text("\(store) \(i)"))
                #expect(try object.value(forKey: "v") == .integer(Int64(i)))
            }
        }
        for store in context.contexts { #expect(store.identity.spareCount > 0) }
    }
}
