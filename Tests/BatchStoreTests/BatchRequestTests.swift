import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct BatchRequestTests {
    @Test("edits through a collection touch only its rows: the same SQL counts and then changes them, other tables' IDs are refused")
    func editsWithinAResult() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 100)
        try direct(path) { db in try db.execute(sql: "CREATE TABLE other(id INTEGER PRIMARY KEY); INSERT INTO other VALUES (1), (2)") }
        let store = try PersistentStore(path: path)
        let context = try ManagedObjectContext(store: store)
        let rows = try context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate(format: "id <= 10")))
        // Rows that match the predicate but came after the fetch are not in the result.
        try direct(path) { db in try db.execute(sql: "UPDATE n SET id = id + 1000 WHERE id = 100; INSERT INTO n VALUES (0, 0, 'new')") }
        let all = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate(format: "id <= 10")), resultType: .count)
        #expect(try rows.count(forDelete: all) == 10)
        let otherID = ObjectID(entity: try store.entity(named: "other"), key: .rowid(1))
        #expect(throws: BatchStoreError.self) { try rows.execute(BatchDeleteRequest(objectIDs: [otherID])) }
        #expect(throws: BatchStoreError.self) { try rows.execute(BatchUpdateRequest(entityName: "other", propertiesToUpdate: [("id", .constant(.integer(9)))])) }
        let n = try store.entity(named: "n")
        let picked = [ObjectID(entity: n, key: .rowid(3)), ObjectID(entity: n, key: .rowid(0)), ObjectID(entity: n, key: .rowid(50))]
        #expect(try rows.members(of: picked + [otherID]) == [picked[0]])
        let markedDelete = BatchDeleteRequest(objectIDs: picked, resultType: .count)
        #expect(try rows.count(forDelete: markedDelete) == 1)
        #expect(try rows.execute(markedDelete).count == 1)
        let update = BatchUpdateRequest(entityName: "n", propertiesToUpdate: [("v", .constant(.integer(-1)))], resultType: .count)
        #expect(try rows.count(forUpdate: update) == 9)
        #expect(try rows.execute(update, undoable: true).count == 9)
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM n WHERE v = -1 ORDER BY id") } == [1, 2, 4, 5, 6, 7, 8, 9, 10])
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM other") } == [1, 2])
        #expect(try rows.execute(all).count == 9)
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM n WHERE id <= 10") } == [0])
    }

    @Test("a delete of no object IDs answers every result type as a delete that matched no row does, and writes nothing")
    func emptyDeleteAnswersLikeAnEditOfNoRows() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 10)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for type in [BatchResultType.statusOnly, .count, .objectIDs, .changes] {
            let none = try context.execute(BatchDeleteRequest(objectIDs: [], resultType: type))
            let noMatch = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate(format: "id < 0")), resultType: type))
            for result in [none, noMatch] {
                #expect(result.succeeded && result.count == (type == .statusOnly ? nil : 0), "\(type): \(String(describing: result.count))")
                #expect(result.objectIDs == (type == .objectIDs ? [] : nil), "\(type)")
                #expect((result.changes != nil) == (type == .objectIDs || type == .changes) && result.changes?.isEmpty != false, "\(type)")
            }
        }
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 10)
    }

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

struct DirectorRecord: Encodable, EncodableRecord {
    var id: Int64
    var name: String
}

@Suite struct BatchInsertTests {
    func fixture() throws -> BatchRequestTests.Fixture { try BatchRequestTests.Fixture() }

    @Test func insertsFromDictionariesHandlersAndRecordsWithDefaults() throws {
        let f = try fixture()
        let r = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: [
            ["id": 1001, "title": "A", "year": 2001, "votes": 5],
            ["title": "B"],
        ], resultType: .objectIDs))
        #expect(r.count == 2)
        #expect(r.objectIDs?.first?.key == .rowid(1001))
        let b = try direct(f.path) { db in try Row.fetchOne(db, sql: "SELECT * FROM movie WHERE title = 'B'") }
        #expect(b?["year"] == nil as Int?, "missing keys take the default (NULL here)")
        var n = 0
        let streamed = try f.context.execute(BatchInsertRequest(entityName: "movie", resultType: .count) {
            n += 1
            return n <= 1000 ? ["title": .text("streamed \(n)"), "votes": .integer(Int64(n))] : nil
        })
        #expect(streamed.count == 1000)
        let records = try f.context.execute(BatchInsertRequest(entityName: "director", records: [DirectorRecord(id: 10, name: "Denis")], resultType: .count))
        #expect(records.count == 1)
        #expect(try direct(f.path) { db in try String.fetchOne(db, sql: "SELECT name FROM director WHERE id = 10") } == "Denis")
    }

    @Test("rows that change their keys midway (order, case, one fewer, one unknown) each go in as written; a failure names its row")
    func rowsWithChangingKeys() throws {
        let f = try fixture()
        var rows: [[String: SQLValue]] = (0..<50).map { ["id": .integer(Int64(2000 + $0)), "title": .text("t\($0)"), "votes": .integer(Int64($0))] }
        rows[10] = ["votes": 10, "title": "t10", "id": 2010]           // the same keys in another order
        rows[20] = ["ID": 2020, "Title": "t20", "votes": 20]           // the same columns spelled otherwise
        rows[30] = ["id": 2030, "title": "t30"]                        // one key fewer: votes takes its default
        rows[31] = ["id": 2031, "title": "t31", "year": 1999]          // as many keys, one of them another column
        let r = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: rows, resultType: .count))
        #expect(r.count == 50)
        let stored = try direct(f.path) { db in
            try Row.fetchAll(db, sql: "SELECT id, title, votes, year FROM movie WHERE id BETWEEN 2000 AND 2049 ORDER BY id")
        }
        #expect(stored.count == 50)
        for (i, row) in stored.enumerated() {
            #expect(row["id"] == Int64(2000 + i) && row["title"] == "t\(i)", "\(row)")
            let votes: Int64? = row["votes"]
            let year: Int64? = row["year"]
            switch i {
            case 30: #expect(votes == nil && year == nil, "\(row)")
            case 31: #expect(votes == nil && year == 1999, "\(row)")
            default: #expect(votes == Int64(i) && year == nil, "\(row)")
            }
        }
        // A failure in the tenth row, after nine that took the fast path: named, nothing written.
        var failing: [[String: SQLValue]] = (0..<20).map { ["id": .integer(Int64(3000 + $0)), "title": .text("f\($0)")] }
        failing[9]["title"] = .null
        do {
            _ = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: failing, resultType: .count))
            Issue.record("a NULL title was inserted")
        } catch let error as BatchStoreError {
            #expect(error.message.contains("row 10"), "\(error.message)")
        }
        #expect(try direct(f.path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE id >= 3000") } == 0)
    }

    @Test("rows by position go in as the same rows by name do; a bad column, a column given twice, a short row or a refused row is named and nothing is written")
    func rowsByPosition() throws {
        let f = try fixture()
        // The columns in another order than the table's, NULLs among them.
        let columns = ["title", "votes", "id", "director_id"]
        let values: [[SQLValue]] = (0..<60).map { (i: Int) -> [SQLValue] in
            let votes: SQLValue = i % 4 == 0 ? .null : .integer(Int64(i))
            let director: SQLValue = i % 3 == 0 ? .null : .integer(1)
            return [.text("p\(i)"), votes, .integer(Int64(4000 + i)), director]
        }
        var iterator = values.makeIterator()
        let r = try f.context.execute(BatchInsertRequest(entityName: "movie", columns: columns, resultType: .count) { iterator.next() })
        #expect(r.count == 60)
        // The same rows by name, 1,000 ids higher: every column must read back the same.
        let named: [[String: SQLValue]] = values.map { row in
            var byName = Dictionary(uniqueKeysWithValues: zip(columns, row))
            if case .integer(let id)? = byName["id"] { byName["id"] = .integer(id + 1000) }
            return byName
        }
        _ = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: named))
        let (positional, byName) = try direct(f.path) { db in
            (try Row.fetchAll(db, sql: "SELECT id - 4000 AS k, title, year, votes, director_id FROM movie WHERE id BETWEEN 4000 AND 4999 ORDER BY id"),
             try Row.fetchAll(db, sql: "SELECT id - 5000 AS k, title, year, votes, director_id FROM movie WHERE id BETWEEN 5000 AND 5999 ORDER BY id"))
        }
        #expect(positional.count == 60 && positional == byName)
        #expect(positional.first.map { $0[3] as Int64? } == .some(nil), "a NULL by position is NULL")

        // Asking for object IDs (another path) gives the same rows.
        var more = [[SQLValue.text("q"), .integer(1), .integer(6000), .null]].makeIterator()
        let ids = try f.context.execute(BatchInsertRequest(entityName: "movie", columns: columns, resultType: .objectIDs) { more.next() })
        #expect(ids.objectIDs?.count == 1)

        func refusal(_ columns: [String], _ rows: [[SQLValue]]) -> String {
            var iterator = rows.makeIterator()
            do {
                _ = try f.context.execute(BatchInsertRequest(entityName: "movie", columns: columns, resultType: .count) { iterator.next() })
                return "inserted"
            } catch let error as BatchStoreError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        let good: [SQLValue] = [.text("x"), .integer(1), .integer(7000), .null]
        #expect(refusal(["title", "votes", "id", "nope"], [good]).hasPrefix("row 1: movie has no column named \"nope\""))
        #expect(refusal(["title", "votes", "id", "id"], [good]) == "row 1: the column \"id\" is given twice")
        #expect(refusal(["title", "votes", "id", "ID"], [good]).hasPrefix("row 1: two keys name the same column"))
        let rows = (0..<5).map { [SQLValue.text("r"), .integer(1), .integer(Int64(7100 + $0)), .null] }
        #expect(refusal(columns, rows[..<2] + [[.text("short"), .integer(1)]] + rows[2...]) == "row 3: 2 values for 4 columns")
        var notNull = rows
        notNull[3][0] = .null
        #expect(refusal(columns, notNull).contains("row 4"))
        var dangling = rows
        dangling[4][3] = .integer(999)
        #expect(refusal(columns, dangling).hasPrefix("row 5: movie.director_id = 999 names no row of director"), "\(refusal(columns, dangling))")
        #expect(try direct(f.path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE id >= 7000") } == 0, "nothing was written")
        // No row: nothing to check, nothing written.
        #expect(refusal(["nope"], []) == "inserted")
    }

    @Test func conflictPolicies() throws {
        let f = try fixture()
        let rows: [[String: SQLValue]] = [["id": 1, "name": "Kurosawa Akira"], ["id": 9, "name": "Ozu"], ["id": 11, "name": "Sembène"]]
        // fail: the second row conflicts on name, the first on id: nothing is written.
        do { _ = try f.context.execute(BatchInsertRequest(entityName: "director", objects: rows)); Issue.record("inserted") } catch let e as BatchStoreError {
            #expect(e.code == .constraint)
            #expect(e.message.hasPrefix("row 1: "))
        }
        #expect(try direct(f.path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM director") } == 3)
        let ignored = try f.context.execute(BatchInsertRequest(entityName: "director", objects: rows, conflictPolicy: .ignore, resultType: .count))
        #expect(ignored.count == 1)
        #expect(try direct(f.path) { db in try String.fetchAll(db, sql: "SELECT name FROM director ORDER BY id") } == ["Kurosawa", "Varda", "Ozu", "Sembène"])
        // upsert changes only the given columns of the existing row.
        try direct(f.path) { db in try db.execute(sql: "ALTER TABLE director ADD COLUMN born INTEGER; UPDATE director SET born = 1910 WHERE id = 1") }
        let g = try ManagedObjectContext(store: try PersistentStore(path: f.path))
        let upserted = try g.execute(BatchInsertRequest(entityName: "director", objects: [["id": 1, "name": "Akira Kurosawa"]], conflictPolicy: .upsert, resultType: .count))
        #expect(upserted.count == 1)
        let row = try direct(f.path) { db in try Row.fetchOne(db, sql: "SELECT name, born FROM director WHERE id = 1") }
        #expect(row?["name"] as String? == "Akira Kurosawa")
        #expect(row?["born"] as Int? == 1910, "a column the caller did not give keeps its value")
    }

    @Test func unknownKeysAndHandlerErrorsWriteNothing() throws {
        let f = try fixture()
        do {
            _ = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: [["title": "ok"], ["title": "x", "colour": "red"]]))
            Issue.record("inserted")
        } catch let e as BatchStoreError {
            #expect(e.code == .noSuchAttribute)
            #expect(e.message.contains("row 2") && e.message.contains("\"colour\""))
        }
        struct Stop: Error {}
        var n = 0
        #expect(throws: Stop.self) {
            _ = try f.context.execute(BatchInsertRequest(entityName: "movie") {
                n += 1
                if n == 50 { throw Stop() }
                return ["title": .text("t\(n)")]
            })
        }
        #expect(try direct(f.path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") } == 300)
    }
}

@Suite struct ValidationTests {
    @Test func validationCountsFailingRowsAndNamesOneWithTheReason() throws {
        let f = try BatchRequestTests.Fixture()
        let before = try Data(contentsOf: URL(fileURLWithPath: f.path))
        // votes = id * 10: votes - 50 < 0 for ids 1…4.
        let check = try f.context.validate(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes - 50")))
        #expect(check.rowsMatched == 300 && check.rowsFailing == 4 && !check.isValid)
        #expect(check.example?.reason.contains("CHECK constraint failed") == true)
        #expect([1, 2, 3, 4].map { ObjectKey.rowid($0) }.contains(check.example?.id.key ?? .rowid(0)))
        let notNull = try f.context.validate(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("id <= 10"),
                                                                propertiesToUpdate: try UpdateExpression.parseAssignments("title = nil")))
        #expect(notNull.rowsMatched == 10 && notNull.rowsFailing == 10)
        #expect(notNull.example?.reason.contains("NOT NULL constraint failed: movie.title") == true)
        let unique = try f.context.validate(BatchUpdateRequest(entityName: "director", propertiesToUpdate: [("name", .constant("same"))]))
        #expect(unique.rowsMatched == 3 && unique.rowsFailing == 2, "the first row could take the name; the other two conflict")
        #expect(unique.example?.reason.contains("UNIQUE constraint failed: director.name") == true)
        let fine = try f.context.validate(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("year > 1990"), propertiesToUpdate: [("votes", .constant(1))]))
        #expect(fine.isValid && fine.rowsMatched > 0 && fine.example == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.path)) == before, "validation writes nothing")
        #expect(try f.context.temporaryTableNames().isEmpty)
        // A failed update names a row that broke it.
        do {
            _ = try f.context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes - 50")))
            Issue.record("updated")
        } catch let e as BatchStoreError {
            #expect(e.code == .constraint)
            #expect(e.message.contains("4 of 300 rows would fail, e.g. x-batchstore://test/movie/r"))
        }
    }
}

@Suite struct DeleteRuleTests {
    static let sql = """
        CREATE TABLE studio(id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT, studio_id INTEGER REFERENCES studio(id) ON DELETE CASCADE);
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT,
                           director_id INTEGER REFERENCES director(id) ON DELETE CASCADE,
                           editor_id INTEGER REFERENCES director(id) ON DELETE SET NULL);
        CREATE TABLE award(id INTEGER PRIMARY KEY, movie_id INTEGER REFERENCES movie(id) ON DELETE RESTRICT);
        INSERT INTO studio VALUES (1, 'Toho'), (2, 'Shochiku');
        INSERT INTO director VALUES (1, 'Kurosawa', 1), (2, 'Honda', 1), (3, 'Ozu', 2);
        INSERT INTO movie VALUES (1, 'Ikiru', 1, 3), (2, 'Godzilla', 2, 1), (3, 'Tokyo Story', 3, 1), (4, 'Late Spring', 3, 2);
        INSERT INTO award VALUES (1, 1);
        """

    @Test func cascadeNullifyAndDenyInOneTransaction() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.sql)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        var request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "studio", predicate: try FetchPredicate("name == 'Toho'")), resultType: .count)
        request.appliesDeleteRules = true
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do { _ = try context.execute(request); Issue.record("deleted") } catch let e as BatchStoreError {
            #expect(e.code == .constraint)
            #expect(e.message == "delete rule deny on award.movie: award row 1 still refers to a row being deleted; nothing was written")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(throws: BatchStoreError.self) { try context.execute(request, undoable: true) }

        try direct(path) { db in try db.execute(sql: "DELETE FROM award") }
        #expect(try context.execute(request).count == 1)
        let state = try direct(path) { db in
            (try Int64.fetchAll(db, sql: "SELECT id FROM director ORDER BY id"),
             try Row.fetchAll(db, sql: "SELECT id, editor_id FROM movie ORDER BY id").map { [$0["id"] as Int64?, $0["editor_id"] as Int64?] })
        }
        #expect(state.0 == [3], "Toho's directors cascaded")
        #expect(state.1 == [[3, nil], [4, nil]], "their movies cascaded; Ozu's movies edited by them were nullified")
    }

    @Test func batchInsertKeepsEveryValueExactly() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE v(id INTEGER PRIMARY KEY, x)")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let values: [SQLValue] = [.text(""), .text("a\u{0}b"), .text("é東😀"), .blob(Data()), .blob(Data([0, 1, 255])), .null, .real(-0.5), .integer(Int64.min)]
        let rows = values.enumerated().map { ["id": SQLValue.integer(Int64($0 + 1)), "x": $1] }
        let result = try context.execute(BatchInsertRequest(entityName: "v", objects: rows, resultType: .count))
        #expect(result.count == values.count)
        let back = try direct(path) { db in try Row.fetchAll(db, sql: "SELECT x, typeof(x) FROM v ORDER BY id") }
        #expect(back.map { $0[1] as String } == ["text", "text", "text", "blob", "blob", "null", "real", "integer"])
        // GRDB's String stops at a NUL, so the embedded NUL is checked in hex.
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT hex(x) FROM v WHERE id = 2") } == "610062")
        #expect(back[2][0] as String == "é東😀")
        #expect(back[3][0] as Data == Data() && back[4][0] as Data == Data([0, 1, 255]))
        #expect(back[6][0] as Double == -0.5 && back[7][0] as Int64 == Int64.min)
    }
}
