import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct MergeTests {
    @Test func aBatchUpdateMergedIntoTwoContextsAndAnOpenCollection() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 1_000)
        let store = try PersistentStore(path: path)
        let worker = try ManagedObjectContext(store: store)
        let viewer = try ManagedObjectContext(store: store)
        let other = try ManagedObjectContext(store: store)
        let rows = try viewer.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 50), residentBatches: 4)
        #expect(try rows[10]?.value(forKey: "v") == .integer(110))
        _ = rows[600]
        let held = try other.existingObject(with: ObjectID(entity: try store.entity(named: "n"), key: .rowid(11)))
        var statements: [String] = []
        try viewer.traceSQL { statements.append($0) }

        let result = try worker.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id <= 100"),
                                                           propertiesToUpdate: [("v", try UpdateExpression("v * -1"))], resultType: .objectIDs))
        let reports = ManagedObjectContext.mergeChanges(ChangeSet(updated: result.objectIDs ?? []), into: [viewer, other])
        #expect(reports[0].updated.count == 50, "only the objects the viewer holds: batch 0")
        #expect(reports[0].batchesInvalidated == 1, "batch 600's is untouched")
        #expect(reports[1].updated.map(\.key) == [.rowid(11)])
        #expect(statements.isEmpty, "a merge does no I/O")
        #expect(try rows[10]?.value(forKey: "v") == .integer(-110), "the collection shows the new value")
        #expect(try held.value(forKey: "v") == .integer(-110))
        // The stale batch was faulted again with one read of the table (a range of rowids, after
        // a lookup of its end keys in the ID table).
        #expect(statements.filter { $0.contains("main.") }.count == 1, "\(statements)")
        #expect(statements.filter { !$0.contains("main.") }.allSatisfy { $0.contains("bs_ids") }, "\(statements)")
        try viewer.traceSQL(nil)
    }

    @Test func aBatchDeleteMergedMakesRowsGone() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 300)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100))
        let victim = try #require(rows[5])
        let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("id % 2 == 0")), resultType: .objectIDs))
        #expect(result.count == 150)
        let report = context.mergeChanges(ChangeSet(deleted: result.objectIDs ?? []))
        #expect(report.deleted.count == 50)
        #expect(victim.isDeleted)
        #expect(rows[5] == nil && rows[4] != nil)
        #expect(rows.compactMap { $0 }.count == 150)
        #expect(throws: BatchStoreError.self) { try context.existingObject(with: victim.objectID) }
        try rows.refresh()
        #expect(rows.count == 150)
    }

    @Test func mergePoliciesDecideObjectsWithUnsavedChanges() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let store = try PersistentStore(path: path)
        let entity = try store.entity(named: "n")
        for policy in [MergePolicy.error, .storeWins, .inMemoryWins] {
            try direct(path) { db in try db.execute(sql: "UPDATE n SET v = id * 10, name = 'row ' || id") }
            let context = try ManagedObjectContext(store: store)
            context.mergePolicy = policy
            let object = try context.existingObject(with: ObjectID(entity: entity, key: .rowid(3)))
            try object.setValue("mine", forKey: "name")
            let batch = try ManagedObjectContext(store: store)
            let result = try batch.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: try UpdateExpression.parseAssignments("v = 0, name = 'batch'"), resultType: .objectIDs))
            let report = context.mergeChanges(ChangeSet(updated: result.objectIDs ?? []))
            switch policy {
            case .error:
                #expect(report.conflicts == [object.objectID] && report.updated.isEmpty)
                #expect(try object.value(forKey: "v") == .integer(30), "left alone")
            case .storeWins:
                #expect(try object.value(forKey: "name") == .text("batch") && !object.hasChanges)
            case .inMemoryWins:
                #expect(try object.value(forKey: "name") == .text("mine"))
                #expect(try object.value(forKey: "v") == .integer(0), "other properties take the store's values")
            }
        }
    }

    @Test func aMillionChangedIDsAreMatchedAgainstWhatTheContextHolds() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeNumbers(dir, count: 2_000))
        let entity = try store.entity(named: "n")
        let context = try ManagedObjectContext(store: store)
        let held = try context.fetchAll(FetchRequest(entityName: "n", fetchLimit: 1_000))
        // One million IDs, unsorted, most of them not held.
        var ids = (1...1_000_000).map { ObjectID(entity: entity, key: .rowid(Int64($0 * 2))) }
        ids.swapAt(0, ids.count - 1)
        let report = context.mergeChanges(ChangeSet(updated: ids))
        #expect(report.updated.count == 500, "the even rowids among the 1,000 held")
        #expect(held.filter(\.isFault).count == 500)
    }

    @Test func withoutRowidChangesMergeByPrimaryKey() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE kv(k TEXT, n INTEGER, v TEXT, PRIMARY KEY (k, n)) WITHOUT ROWID;
            INSERT INTO kv VALUES ('a', 1, 'one'), ('a', 2, 'two'), ('b', 1, 'three');
            """)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let held = try context.fetchAll(FetchRequest(entityName: "kv"))
        let result = try context.execute(BatchUpdateRequest(entityName: "kv", predicate: try FetchPredicate("n == 1"),
                                                            propertiesToUpdate: [("v", .constant("changed"))], resultType: .objectIDs))
        let deleted = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "kv", predicate: try FetchPredicate("k == 'a' AND n == 2")), resultType: .objectIDs))
        let report = context.mergeChanges(ChangeSet(updated: result.objectIDs ?? [], deleted: deleted.objectIDs ?? []))
        #expect(Set(report.updated.map(\.key)) == [.primaryKey(["a", 1]), .primaryKey(["b", 1])])
        #expect(report.deleted.map(\.key) == [.primaryKey(["a", 2])])
        #expect(try held.filter { !$0.isDeleted }.map { try $0.value(forKey: "v") } == [.text("changed"), .text("changed")])
        #expect(held[1].isDeleted)
    }
}
