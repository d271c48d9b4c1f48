import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct ContextTests {
    @Test func identityMapGivesOneObjectPerIDAndForgetsUnusedOnes() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 10))
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: "n")
        let id = ObjectID(entity: entity, key: .rowid(4))
        let a = context.object(with: id)
        #expect(a.isFault)
        #expect(a.valueIfResident(at: 1) == nil, "no I/O for a fault")
        #expect(context.object(with: id) === a)
        #expect(try a.value(forKey: "v") == .integer(40))
        #expect(!a.isFault)
        #expect(a.valueIfResident(at: 1) == .integer(40))
        #expect(try context.existingObject(with: id) === a)
        #expect(context.registeredObjectCount == 1)
        do {
            let b = context.object(with: ObjectID(entity: entity, key: .rowid(5)))
            _ = try b.value(forKey: "v")
            #expect(context.registeredObjectCount == 2)
        }
        #expect(context.registeredObjectCount == 1, "an object nobody holds leaves the identity map")
        #expect(a.description == "<n r4 fulfilled>")
    }

    @Test func missingRowsThrowInsteadOfTombstones() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 3))
        let context = try ManagedObjectContext(store: store)
        let id = ObjectID(entity: try store.entity(named: "n"), key: .rowid(99))
        #expect(throws: BatchStoreError(.objectNotFound, "n row r99 no longer exists")) { try context.existingObject(with: id) }
        let fault = context.object(with: id)
        #expect(throws: BatchStoreError.self) { try fault.value(forKey: "v") }
    }

    @Test func refreshPicksUpOtherWritersAndKeepsOrDropsChanges() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 3)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let id = ObjectID(entity: try store.entity(named: "n"), key: .rowid(1))
        let o = try context.existingObject(with: id)
        try direct(path) { db in try db.execute(sql: "UPDATE n SET v = 111, name = 'other' WHERE id = 1") }
        #expect(try o.value(forKey: "v") == .integer(10), "a fulfilled object keeps its snapshot until refreshed")
        try o.setValue("mine", forKey: "name")
        context.refresh(o, mergeChanges: true)
        #expect(o.isFault)
        #expect(try o.value(forKey: "v") == .integer(111))
        #expect(try o.value(forKey: "name") == .text("mine"))
        context.refresh(o, mergeChanges: false)
        #expect(try o.value(forKey: "name") == .text("other"))
        #expect(!context.hasChanges)
        try direct(path) { db in try db.execute(sql: "UPDATE n SET v = 222 WHERE id = 1") }
        context.refreshAllObjects()
        #expect(try o.value(forKey: "v") == .integer(222))
        context.reset()
        #expect(context.registeredObjectCount == 0)
        #expect(o.managedObjectContext == nil)
    }

    @Test func saveWritesObjectByObjectInOneTransaction() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 5)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: "n")
        let two = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(2)))
        try two.setValue(.integer(-2), forKey: "v")
        let three = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(3)))
        try context.delete(three)
        let new = try context.insertObject(into: "n", values: ["v": 600, "name": "new"])
        #expect(new.objectID.isTemporaryID)
        #expect(context.hasChanges)
        #expect(Set(context.changedObjects.map { ObjectIdentifier($0) }) == Set([two, three, new].map { ObjectIdentifier($0) }))
        #expect(two.changedValues == ["v": .integer(-2)] && two.hasChanges && three.hasChanges)
        try context.save()
        #expect(!context.hasChanges)
        #expect(new.objectID == ObjectID(entity: entity, key: .rowid(6)))
        #expect(try new.value(forKey: "v") == .integer(600))
        let rows = try direct(path) { db in try Row.fetchAll(db, sql: "SELECT id, v FROM n ORDER BY id") }
        #expect(rows.map { $0["id"] as Int } == [1, 2, 4, 5, 6])
        #expect(rows[1]["v"] as Int == -2)
        #expect(try context.existingObject(with: ObjectID(entity: entity, key: .rowid(6))) === new)
    }

    @Test func saveFailsWholeWhenARowWasDeletedElsewhere() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 5)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: "n")
        let one = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(1)))
        let four = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(4)))
        try one.setValue(1000, forKey: "v")
        try four.setValue(4000, forKey: "v")
        try direct(path) { db in try db.execute(sql: "DELETE FROM n WHERE id = 4") }
        #expect(throws: BatchStoreError.self) { try context.save() }
        #expect(context.hasChanges, "changes stay pending after a failed save")
        let v1 = try direct(path) { db in try Int.fetchOne(db, sql: "SELECT v FROM n WHERE id = 1") }
        #expect(v1 == 10, "nothing was written")
    }

    @Test func aBackgroundContextWorksAtTheSameTime() async throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20_000)
        let store = try PersistentStore(path: path)
        async let background: Int = Task.detached {
            let context = try ManagedObjectContext(store: store)
            let rows = try context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("v % 20 == 0"), fetchBatchSize: 50))
            return rows.compactMap { $0 }.count
        }.value
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100))
        let mainCount = rows.compactMap { $0 }.count
        #expect(mainCount == 20_000)
        #expect(try await background == 10_000)
    }

    @Test func childContextsBatchAndPushChangesToTheirParent() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 500)
        let store = try PersistentStore(path: path)
        let parent = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: "n")
        let p7 = try parent.existingObject(with: ObjectID(entity: entity, key: .rowid(7)))
        try p7.setValue(7777, forKey: "v")
        let child = try parent.newChildContext()
        let rows = try child.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 20), residentBatches: 2)
        #expect(try rows[6]?.value(forKey: "v") == .integer(7777), "a child sees its parent's unsaved values")
        let eager = try parent.newChildContext().fetchAll(FetchRequest(entityName: "n", predicate: try FetchPredicate("id == 7")))
        #expect(try eager.first?.value(forKey: "v") == .integer(7777), "the eager path sees them too")
        _ = rows.map { $0 }
        #expect(rows.statistics.batchesFaulted == 25)
        #expect(rows.statistics.batchesResident == 2, "the batch size and resident limit hold in a child context")
        try rows[9]?.setValue(9999, forKey: "v")
        try child.save()
        #expect(try parent.existingObject(with: ObjectID(entity: entity, key: .rowid(10))).value(forKey: "v") == .integer(9999))
        let stored = try direct(path) { db in try Int.fetchOne(db, sql: "SELECT v FROM n WHERE id = 10") }
        #expect(stored == 100, "a child's save goes to the parent, not the store")
        try parent.save()
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT v FROM n WHERE id = 10") } == 9999)
    }

    @Test func objectIDsRoundTripThroughTheirURI() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, "weird name.db", sql: "CREATE TABLE \"k/v\"(a TEXT, b REAL, c BLOB, d, PRIMARY KEY(a, b, c, d)) WITHOUT ROWID; CREATE TABLE t(x)")
        let store = try PersistentStore(path: path)
        let kv = try store.entity(named: "k/v")
        let ids = [
            ObjectID(entity: kv, key: .primaryKey([.text("a/b,c%é 東"), .real(-0.1), .blob(Data([0, 255, 16])), .null])),
            ObjectID(entity: try store.entity(named: "t"), key: .rowid(-42)),
        ]
        for id in ids {
            let uri = id.uriRepresentation
            #expect(uri.hasPrefix("x-batchstore://weird%20name/"))
            #expect(try ObjectID.parse(uriRepresentation: uri, stores: [store]) == id)
        }
        #expect(throws: BatchStoreError.self) { try ObjectID.parse(uriRepresentation: "x-batchstore://other/t/r1", stores: [store]) }
        #expect(throws: BatchStoreError.self) { try ObjectID.parse(uriRepresentation: "x-batchstore://weird%20name/t/zz", stores: [store]) }
    }
}

struct NumberRecord: Decodable, FetchableRecord, Equatable {
    var id: Int64
    var v: Int
    var name: String?
}

@Suite struct RecordTests {
    @Test func objectsDecodeIntoCodableRecords() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 30)
        try direct(path) { db in try db.execute(sql: "UPDATE n SET name = NULL WHERE id = 3") }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 8))
        #expect(try rows.record(at: 2, as: NumberRecord.self) == NumberRecord(id: 3, v: 30, name: nil))
        #expect(try rows[20]?.decode(NumberRecord.self) == NumberRecord(id: 21, v: 210, name: "row 21"))
        struct Wrong: Decodable, FetchableRecord { var name: Int }
        #expect(throws: (any Error).self) { try rows[0]?.decode(Wrong.self) }
    }

    /// A save writes deletes, then updates, then inserts, each in key order: a unique value given up
    /// by a deleted or renamed row can be taken by an insert or another update in the same save.
    @Test func saveFreesUniqueValuesBeforeTakingThem() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE u(id INTEGER PRIMARY KEY, name TEXT UNIQUE); INSERT INTO u VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let entity = try context.store.entity(named: "u")
        for round in 0..<20 {
            // Many rounds, so no order of a hash table can make this pass by luck.
            let a = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(1)))
            let b = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(2)))
            let oldA = try a.value(forKey: "name"), oldB = try b.value(forKey: "name")
            try context.delete(a)
            try b.setValue(.text("b\(round)"), forKey: "name")
            _ = try context.insertObject(into: "u", values: ["id": .integer(1), "name": oldA])
            _ = try context.insertObject(into: "u", values: ["id": .integer(Int64(100 + round)), "name": oldB])
            try context.save()
            context.reset()
        }
        let names = try direct(path) { db in try String.fetchAll(db, sql: "SELECT name FROM u ORDER BY id") }
        #expect(names == ["a", "b19", "c", "b"] + (0..<19).map { "b\($0)" })
    }
}
