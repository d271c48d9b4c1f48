@testable import BatchStore
import Foundation
import GRDB
import Testing

/// Result type `.changes`: the changed keys stay in a temp table, and merges ask it only about the
/// objects each context holds.
@Suite struct StoredChangesTests {
    @Test func anUpdateKeepsItsKeysInSQLiteAndMergesByWhatContextsHold() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 20_000)
        let store = try PersistentStore(path: path)
        let worker = try ManagedObjectContext(store: store)
        let viewer = try ManagedObjectContext(store: store)
        let rows = try viewer.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100), residentBatches: 4)
        #expect(try rows[10]?.value(forKey: "v") == .integer(110))
        _ = rows[15_000]
        let heldCount = viewer.registeredObjectCount
        #expect(heldCount == 200)

        let result = try worker.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id % 2 == 1"),
                                                           propertiesToUpdate: [("v", try UpdateExpression("v * -1"))], resultType: .changes))
        #expect(result.count == 10_000 && result.objectIDs == nil)
        let changes = try #require(result.changes)
        #expect(changes.updated.isEmpty && changes.updatedCount == 10_000, "no IDs in Swift memory")
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM n WHERE v < 0") } == 10_000)

        var statements: [String] = []
        try worker.traceSQL { statements.append($0) }
        let report = ManagedObjectContext.mergeChanges(changes, into: [viewer])[0]
        try worker.traceSQL(nil)
        #expect(report.updated.count == 100, "the odd rows among the 200 held")
        let updatedIDs: [Int64] = report.updated.compactMap { if case .rowid(let r) = $0.key { return r } else { return nil } }
        let oddHeld: [Int64] = (Array(1...100) + Array(15_001...15_100)).filter { $0 % 2 == 1 }.map(Int64.init)
        #expect(updatedIDs.sorted() == oddHeld)
        #expect(statements.count == 1 && statements[0].contains(" IN (") && statements[0].contains("bs_changes"),
                "one probe of the stored keys for the held objects, none per changed row: \(statements)")
        #expect(report.batchesInvalidated == 2)
        #expect(try rows[10]?.value(forKey: "v") == .integer(-110), "odd id 11 changed")
        #expect(try rows[11]?.value(forKey: "v") == .integer(120), "even id 12 did not")
    }

    @Test func aDeleteWithChangesMakesRowsGoneAndStreamsItsIDs() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 25_000)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100))
        let victim = try #require(rows[4])   // id 5
        let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("id > 3")), resultType: .changes))
        #expect(result.count == 24_997)
        let changes = try #require(result.changes)
        #expect(changes.deletedCount == 24_997)
        let report = context.mergeChanges(changes)
        #expect(report.deleted.count == 97)
        #expect(victim.isDeleted && rows[4] == nil && rows[2] != nil)

        // Streaming, 10,000 at a time, in key order, everything exactly once.
        var seen: [Int64] = []
        try changes.stored[0].forEachObjectID { id in
            if case .rowid(let r) = id.key { seen.append(r) }
        }
        #expect(seen == Array(4...25_000).map(Int64.init))
    }

    @Test func compositeKeysMatchToo() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE pair(a TEXT, b INTEGER, v INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID;
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 600)
            INSERT INTO pair SELECT 'k' || (i % 7), i, i FROM k;
            """)
        let store = try PersistentStore(path: path)
        let worker = try ManagedObjectContext(store: store)
        let viewer = try ManagedObjectContext(store: store)
        let held = try viewer.fetchAll(FetchRequest(entityName: "pair", predicate: try FetchPredicate("b <= 700")))
        #expect(held.count == 600, "more than one 500-key probe")
        let result = try worker.execute(BatchUpdateRequest(entityName: "pair", predicate: try FetchPredicate("a == 'k3'"),
                                                           propertiesToUpdate: [("v", .constant(.integer(0)))], resultType: .changes))
        let report = viewer.mergeChanges(try #require(result.changes))
        #expect(report.updated.count == (1...600).filter { $0 % 7 == 3 }.count)
        for object in held {
            let b = try object.value(forKey: "b").integerValue!
            #expect(try object.value(forKey: "v") == .integer(b % 7 == 3 ? 0 : b))
        }
    }

    @Test func insertsKeepTheirKeysAndAFailureLeavesNothing() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let inserted = try context.execute(BatchInsertRequest(entityName: "n", objects: [["v": .integer(1)], ["v": .integer(2)]], resultType: .changes))
        #expect(inserted.changes?.insertedCount == 2)
        #expect(try inserted.changes?.stored.first?.objectIDs().map(\.key) == [.rowid(11), .rowid(12)])

        try direct(path) { db in try db.execute(sql: "CREATE TRIGGER no_negative BEFORE UPDATE ON n WHEN NEW.v < 0 BEGIN SELECT RAISE(ABORT, 'negative'); END") }
        let before = try context.temporaryTableNames()
        #expect(throws: BatchStoreError.self) {
            try context.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("v", try UpdateExpression("v - 100"))], resultType: .changes))
        }
        #expect(try context.temporaryTableNames() == before, "the rolled-back request left no change table")
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM n WHERE v < 0") } == 0)
    }

    /// When the stored table cannot be read, a merge refaults every held object of the entity:
    /// slower to read back, never stale.
    @Test func anUnreadableTableRefaultsEverythingOfTheEntity() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 50)
        let store = try PersistentStore(path: path)
        let worker = try ManagedObjectContext(store: store)
        let viewer = try ManagedObjectContext(store: store)
        let held = try viewer.fetchAll(FetchRequest(entityName: "n", predicate: try FetchPredicate("id <= 10")))
        let result = try worker.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id == 3"),
                                                           propertiesToUpdate: [("v", .constant(.integer(-3)))], resultType: .changes))
        let stored = try #require(result.changes?.stored.first)
        let keys = try #require(stored.keys as? SQLiteChangedKeys)
        try keys.queue.inDatabase { db in try db.execute(sql: "DROP TABLE temp.\(quoteIdentifier(keys.table))") }
        let report = viewer.mergeChanges(try #require(result.changes))
        #expect(report.updated.count == 10 && held.allSatisfy(\.isFault))
        #expect(try held[2].value(forKey: "v") == .integer(-3) && held[3].value(forKey: "v") == .integer(40))
    }
}
