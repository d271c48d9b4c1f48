import BatchStore
import Foundation
import GRDB
import Testing

/// The statements BatchStore runs, recorded on the context's connection: the costs and the safety
/// its documentation promises, pinned by statement shape (verbs, counts, targets), not by text.
@Suite struct SQLShapeTests {
    final class Fixture {
        let dir = TempDir()
        let path: String
        let context: ManagedObjectContext
        init(rows: Int = 1_000) throws {
            path = try makeNumbers(dir, count: rows)
            context = try ManagedObjectContext(store: try PersistentStore(path: path))
        }
    }

    @Test("the recorder reads statement shapes: verbs, writes, and the temp schema, however the SQL is spelled")
    func recorderReadsShapes() {
        let temp = ["CREATE TEMP TABLE \"bs_ids_1\" (pos INTEGER PRIMARY KEY, key)", "create temporary table x(a)",
                    "INSERT INTO temp.\"bs_ids_1\"(key) SELECT t.rowid FROM main.\"n\" AS t", "insert or ignore into \"temp\".x select 1",
                    "DROP TABLE IF EXISTS temp.\"bs_ids_1\"", "DELETE FROM temp.x WHERE key IN (SELECT key FROM main.n)",
                    "WITH c(x) AS (SELECT 1) INSERT INTO temp.t SELECT x FROM c"]
        let main = ["UPDATE main.\"n\" AS t SET \"v\" = ? WHERE t.rowid IN (SELECT key FROM temp.ids)", "update \"n\" set v = 1",
                    "INSERT INTO main.n (v) VALUES (?)", "  /* c */ DELETE  FROM\n\"n\" WHERE name = 'temp.x'", "REPLACE INTO n VALUES (1)",
                    "CREATE TABLE \"temp_like\" (a)", "CREATE INDEX i ON n(v)", "WITH c AS (SELECT 1) DELETE FROM n WHERE id IN c",
                    "ALTER TABLE n ADD COLUMN z"]
        let reads = ["SELECT count(*) FROM main.\"n\" AS t WHERE ('insert' = ?)", "-- a comment\nselect 1", "PRAGMA data_version",
                     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", "BEGIN IMMEDIATE TRANSACTION", "COMMIT TRANSACTION"]
        for sql in temp { #expect(SQLStatement(sql).isWrite && SQLStatement(sql).isTempWrite, "\(sql)") }
        for sql in main { #expect(SQLStatement(sql).isWrite && !SQLStatement(sql).isTempWrite, "\(sql)") }
        for sql in reads { #expect(!SQLStatement(sql).isWrite, "\(sql)") }
        #expect(reads.map { SQLStatement($0).verb } == ["SELECT", "SELECT", "PRAGMA", "SELECT", "BEGIN", "COMMIT"])
        #expect(SQLStatement(temp[6]).verb == "INSERT" && SQLStatement(main[7]).verb == "DELETE")
    }

    /// One read of the table per batch: the join through the ID table, or, for a batch of a result
    /// in rowid order that is one unbroken range of keys, the range read, after a lookup of end
    /// keys in the ID table (temp only: no lock on the file). Here the whole result has no gap,
    /// so that lookup runs once, for the first and last key, and later batches need none.
    @Test("a batch fault of a BatchFaultingCollection reads the table with exactly one SELECT; a resident batch runs none")
    func batchFaultIsOneSelect() throws {
        let f = try Fixture()
        func expectOneTableRead(_ recording: SQLRecording, range: Bool, lookups: Int = 0) {
            let table = recording.statements.filter { $0.sql.contains("main.") }
            let idTable = recording.statements.filter { !$0.sql.contains("main.") }
            #expect(recording.count("SELECT") == recording.statements.count, "\(recording.statements)")
            #expect(table.count == 1, "\(recording.statements)")
            #expect(table.first?.sql.contains("CROSS JOIN") == !range, "\(recording.statements)")
            #expect(idTable.count == (range ? lookups : 0) && idTable.allSatisfy { $0.sql.contains("bs_ids") }, "\(recording.statements)")
        }
        for sorted in [false, true] {
            var request = FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 100"), fetchBatchSize: 50)
            if sorted { request.sortDescriptors = [SortDescriptor(key: "v", ascending: false)] }
            let rows = try f.context.fetchBatched(request)
            let (object, fault) = try recordSQL(on: f.context) { try rows.object(at: 420) }
            #expect(object?.isFault == false)
            expectOneTableRead(fault, range: !sorted, lookups: 1)
            let (_, resident) = try recordSQL(on: f.context) { try (400..<450).map { try rows.object(at: $0) } }
            #expect(resident.statements.isEmpty, "\(resident.statements)")
            let (_, next) = try recordSQL(on: f.context) { try rows.object(at: 450) }
            expectOneTableRead(next, range: !sorted)
        }
    }

    @Test("a batch update runs one UPDATE inside one transaction (BEGIN … COMMIT), with undo too")
    func batchUpdateIsOneUpdateInOneTransaction() throws {
        let f = try Fixture()
        for undoable in [false, true] {
            for resultType in [BatchResultType.count, .objectIDs, .changes] {
                let request = BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id <= 300"),
                                                 propertiesToUpdate: try UpdateExpression.parseAssignments("v = v + 1"), resultType: resultType)
                let (result, recording) = try recordSQL(on: f.context) { try f.context.execute(request, undoable: undoable) }
                let what = "undoable \(undoable), \(resultType): \(recording.verbs)"
                #expect(result.count == nil || result.count == 300, "\(what)")
                // One UPDATE of the table; with undo, one more of the journal (its after-image), in temp.
                #expect(recording.with(verb: "UPDATE").filter { !$0.isTempWrite }.count == 1, "\(what)")
                #expect(recording.with(verb: "UPDATE").filter(\.isTempWrite).count == (undoable ? 1 : 0), "\(what)")
                #expect(recording.count("BEGIN") == 1 && recording.count("COMMIT") == 1 && recording.count("ROLLBACK") == 0, "\(what)")
                let verbs = recording.verbs
                let begin = verbs.firstIndex(of: "BEGIN") ?? -1, commit = verbs.firstIndex(of: "COMMIT") ?? -1
                let update = verbs.firstIndex(of: "UPDATE") ?? -1
                #expect(begin < update && update < commit, "\(what)")
                // Nothing but the temp schema is written outside the transaction.
                let outside = recording.statements.enumerated().filter { ($0.offset < begin || $0.offset > commit) && $0.element.isWrite && !$0.element.isTempWrite }
                #expect(outside.isEmpty, "\(what): \(outside.map(\.element))")
            }
        }
        #expect(try direct(f.path) { try Int.fetchOne($0, sql: "SELECT sum(v) FROM n WHERE id <= 300") } == 451_500 + 6 * 300)
    }

    @Test("counting for a delete (count(forDelete:)) runs no write to the file; by predicate it runs no write at all")
    func countForDeleteWritesNothing() throws {
        let f = try Fixture()
        let before = try Data(contentsOf: URL(fileURLWithPath: f.path))
        let rows = try f.context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("id <= 500")))
        let byPredicate = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v % 20 == 0")))
        let (count, recording) = try recordSQL(on: f.context) { try rows.count(forDelete: byPredicate) }
        #expect(count == 250)
        #expect(recording.writes.isEmpty, "\(recording.statements)")
        #expect(recording.count("SELECT") >= 1)
        let n = try f.context.store.entity(named: "n")
        let byIDs = BatchDeleteRequest(objectIDs: [1, 7, 700].map { ObjectID(entity: n, key: .rowid($0)) })
        let (marked, idRecording) = try recordSQL(on: f.context) { try rows.count(forDelete: byIDs) }
        #expect(marked == 2)
        #expect(idRecording.writesOutsideTemp.isEmpty, "\(idRecording.statements)")
        #expect(idRecording.count("BEGIN") == 0, "no write transaction on the file")
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.path)) == before)
    }

    @Test("opening a fetch with batching writes only to temp, never to main")
    func batchedFetchWritesOnlyTemp() throws {
        let f = try Fixture()
        let before = try Data(contentsOf: URL(fileURLWithPath: f.path))
        let requests = [
            FetchRequest(entityName: "n"),
            FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 100 AND name CONTAINS '1'"), sortDescriptors: try SortDescriptor.parse("name desc"), fetchBatchSize: 40),
            FetchRequest(entityName: "n", sortDescriptors: try SortDescriptor.parse("v"), fetchLimit: 10, fetchOffset: 5),
        ]
        for request in requests {
            let (rows, recording) = try recordSQL(on: f.context) { try f.context.fetchBatched(request) }
            #expect(rows.count > 0)
            #expect(recording.writesOutsideTemp.isEmpty, "\(recording.statements)")
            #expect(recording.writes.contains { $0.isTempWrite }, "the IDs go to a temp table: \(recording.statements)")
            let (_, progressive) = try recordSQL(on: f.context) {
                let fetch = try f.context.beginFetch(request)
                return try fetch.finish()
            }
            #expect(progressive.writesOutsideTemp.isEmpty, "\(progressive.statements)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.path)) == before)
    }

    @Test("statements(faultingBatchAt:) gives the very ID fetch and batch fault the result ran, and their bound values")
    func statementsAreTheOnesRun() throws {
        let f = try Fixture()
        let request = FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 100 AND name CONTAINS 'row'"),
                                   sortDescriptors: [SortDescriptor(key: "v", ascending: false)], fetchBatchSize: 50)
        let (rows, fetch) = try recordSQL(on: f.context) { try f.context.fetchBatched(request) }
        let sql = try rows.statements(faultingBatchAt: 420)
        #expect(fetch.statements.map(\.sql).contains(sql.idFetch), "\(sql.idFetch) not among \(fetch.statements)")
        #expect(sql.idFetch.hasPrefix("INSERT INTO temp.") && sql.idFetch.contains("ORDER BY"))
        #expect(sql.idFetchArguments == [.integer(100), .text("row")])
        let (_, fault) = try recordSQL(on: f.context) { try rows.object(at: 420) }
        #expect(fault.statements.map(\.sql) == [sql.batchFault])
        #expect(sql.batchFaultArguments == [.integer(401), .integer(450)])
        // The last batch ends at the result's last row.
        #expect(try rows.statements(faultingBatchAt: rows.count - 1).batchFaultArguments == [.integer(Int64(rows.count / 50 * 50 + 1)), .integer(Int64(rows.count))])
    }

    @Test("a frequency table's statements(readingAt:pageSize:) are the GROUP BY it ran and its page read, with their values")
    func frequencyStatementsAreTheOnesRun() throws {
        let f = try Fixture()
        let rows = try f.context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("v > 100"), fetchBatchSize: 50))
        let (counted, group) = try recordSQL(on: f.context) { try rows.frequencies(of: "name", rows: .matchingNow) }
        let sql = counted.statements(readingAt: 10, pageSize: 20)
        #expect(group.statements.map(\.sql).contains(sql.idFetch), "\(sql.idFetch) not among \(group.statements)")
        #expect(sql.idFetch.contains("GROUP BY value") && sql.idFetchArguments == [.integer(100)])
        let (_, page) = try recordSQL(on: f.context) { try counted.values(in: 10..<30) }
        #expect(page.statements.map(\.sql) == [sql.batchFault])
        #expect(sql.batchFaultArguments == [.integer(11), .integer(30)])
    }
}
