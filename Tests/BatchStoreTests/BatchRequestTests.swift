import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct BatchRequestTests {
    static let sql = """
        CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER, votes INTEGER CHECK (votes >= 0),
                           director_id INTEGER REFERENCES director(id) ON DELETE CASCADE);
        INSERT INTO director VALUES (1, 'Kurosawa'), (2, 'Varda'), (3, 'Ozu');
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)
          INSERT INTO movie SELECT i, 'Film ' || i, 1900 + i % 100, i * 10, 1 + i % 3 FROM c;
        """

    /// Holds the directory for the test's whole life (a dropped TempDir deletes the file).
    final class Fixture {
        let dir = TempDir()
        let path: String
        let context: ManagedObjectContext
        init() throws {
            path = try makeDatabase(dir, sql: BatchRequestTests.sql)
            context = try ManagedObjectContext(store: try PersistentStore(path: path))
        }
    }

    @Test func updateResultTypesAndExpressions() throws {
        let f = try Fixture(); let path = f.path, context = f.context
        let assignments = try UpdateExpression.parseAssignments("votes = votes + 1, title = uppercase(title) || ' (' || year || ')'")
        var request = BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("year < 1905"), propertiesToUpdate: assignments, resultType: .count)
        #expect(try context.count(forUpdate: request) == 15)
        #expect(try context.execute(request).count == 15)
        let row = try direct(path) { db in try Row.fetchOne(db, sql: "SELECT title, votes FROM movie WHERE id = 101") }
        #expect(row?["title"] as String? == "FILM 101 (1901)")
        #expect(row?["votes"] as Int? == 1011)
        request.resultType = .objectIDs
        request.predicate = try FetchPredicate("director.name == 'Ozu' AND year == 1902")
        let ids = try #require(try context.execute(request).objectIDs)
        let expected = try direct(path) { db in try Int64.fetchAll(db, sql: "SELECT m.id FROM movie m JOIN director d ON d.id = m.director_id WHERE d.name = 'Ozu' AND m.year = 1902 ORDER BY m.id") }
        #expect(!expected.isEmpty)
        #expect(ids.count == expected.count)
        #expect(Set(ids.map(\.key)) == Set(expected.map { ObjectKey.rowid($0) }))
        request.resultType = .statusOnly
        let status = try context.execute(request)
        #expect(status.succeeded && status.count == nil && status.objectIDs == nil)
    }

    @Test func aConstraintFailureRollsBackAndLeavesTheFileUnchanged() throws {
        let f = try Fixture(); let path = f.path, context = f.context
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // Rows 1…300 get votes - 50: rows with votes < 50 break the CHECK, so nothing may change.
        let request = BatchUpdateRequest(entityName: "movie", predicate: nil, propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes - 50"))
        do { _ = try context.execute(request); Issue.record("updated") } catch let e as BatchStoreError {
            #expect(e.code == .constraint)
            #expect(e.message.contains("CHECK constraint failed"))
        }
        let dup = BatchUpdateRequest(entityName: "director", propertiesToUpdate: [("name", .constant("same"))])
        do { _ = try context.execute(dup); Issue.record("updated") } catch let e as BatchStoreError {
            #expect(e.message.contains("UNIQUE constraint failed: director.name"))
        }
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie") } == 451_500)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file is byte-for-byte unchanged")
    }

    @Test func deleteByPredicateBySortAndLimitAndByIDs() throws {
        let f = try Fixture(); let path = f.path, context = f.context
        let first = FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 1990"), sortDescriptors: [SortDescriptor(key: "votes", ascending: false)], fetchLimit: 2)
        let top = try context.execute(BatchDeleteRequest(fetchRequest: first, resultType: .objectIDs))
        #expect(Set(top.objectIDs?.map(\.key) ?? []) == [.rowid(299), .rowid(298)])
        let entity = try context.store.entity(named: "movie")
        let byIDs = try context.execute(BatchDeleteRequest(objectIDs: [1, 2, 3, 999].map { ObjectID(entity: entity, key: .rowid($0)) }, resultType: .count))
        #expect(byIDs.count == 3)
        let count = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate("title ENDSWITH '0'")), resultType: .count))
        #expect(count.count == 30, "ids 10, 20, …, 300")
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") } == 300 - 2 - 3 - 30)
        #expect(try context.temporaryTableNames().isEmpty)
    }

    @Test func theStoresOwnForeignKeyActionsApply() throws {
        let f = try Fixture(); let path = f.path, context = f.context
        let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director", predicate: try FetchPredicate("name == 'Varda'")), resultType: .count))
        #expect(result.count == 1)
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE director_id = 2") } == 0, "ON DELETE CASCADE ran")
        #expect(try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") } == 200)
    }

    @Test func badRequestsAreRefusedBeforeAnythingRuns() throws {
        let f = try Fixture(); let context = f.context
        #expect(throws: BatchStoreError.self) { try UpdateExpression.parseAssignments("votes = ") }
        #expect(throws: BatchStoreError.self) { try UpdateExpression.parseAssignments("votes + 1") }
        #expect(throws: BatchStoreError.self) { try context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("nope = 1"))) }
        #expect(throws: BatchStoreError.self) { try context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = 1, votes = 2"))) }
        #expect(throws: BatchStoreError.self) { try context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = director.id"))) }
        #expect(throws: BatchStoreError.self) { try context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = frobnicate(1)"))) }
    }
}
