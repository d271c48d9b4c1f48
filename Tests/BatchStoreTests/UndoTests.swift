import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct UndoTests {
    @Test("undo leaves alone the rows another connection changed since the edit, says how many before it runs (undoSummary) and after (changedSince), and restores the rest")
    func undoLeavesRowsChangedSince() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, w TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) INSERT INTO n SELECT x, x * 10, 'w' || x FROM c;
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func rows() throws -> String { try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(id || ':' || ifnull(v, 'null') || ':' || w, ' ') FROM n") ?? "" } }
        let original = try rows()
        try context.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id <= 5"),
                                               propertiesToUpdate: try UpdateExpression.parseAssignments("v = v + 1")), undoable: true)
        // Another program: row 1's v changed, row 2 deleted, row 3's v set back to what the update
        // wrote (unchanged as undo sees it), row 4's w (a column the update did not assign).
        try direct(path) { try $0.execute(sql: "UPDATE n SET v = 999 WHERE id = 1; DELETE FROM n WHERE id = 2; UPDATE n SET v = 31 WHERE id = 3; UPDATE n SET w = 'other' WHERE id = 4") }
        #expect(try context.undoSummary() == UndoSummary(kind: .update(columns: ["v"]), table: "n", rows: 5, changedSince: 2))
        let changes = try context.undo()
        #expect(changes.changedSince == 2 && changes.updatedCount == 3)
        #expect(try rows() == "1:999:w1 3:30:w3 4:40:other 5:50:w5 6:60:w6 7:70:w7 8:80:w8 9:90:w9 10:100:w10")
        // A delete whose key names a row again since: that row stays; the others come back.
        try direct(path) { try $0.execute(sql: "DELETE FROM n; INSERT INTO n VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')") }
        try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n")), undoable: true)
        try direct(path) { try $0.execute(sql: "INSERT INTO n VALUES (2, 22, 'new')") }
        #expect(try context.undoSummary() == UndoSummary(kind: .delete, table: "n", rows: 3, changedSince: 1))
        let back = try context.undo()
        #expect(back.changedSince == 1 && back.insertedCount == 2)
        #expect(try rows() == "1:1:a 2:22:new 3:3:c")
        // Nothing changed since: everything comes back and nothing is said.
        try context.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: try UpdateExpression.parseAssignments("v = nil")), undoable: true)
        #expect(try context.undoSummary()?.changedSince == 0)
        #expect(try context.undo().changedSince == 0)
        #expect(try rows() == "1:1:a 2:22:new 3:3:c")
        _ = original
    }

    @Test("a change since the edit is seen byte for byte and class for class: 'abc' → 'ABC' in a NOCASE column, integer 1 → real 1.0 in a column without affinity; such rows are left alone")
    func changedSinceIsExact() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, w TEXT COLLATE NOCASE, x);
            INSERT INTO n VALUES (1, 'p', 0), (2, 'q', 0), (3, 'r', 0);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        try context.execute(BatchUpdateRequest(entityName: "n", propertiesToUpdate: try UpdateExpression.parseAssignments("w = \"abc\", x = 1")), undoable: true)
        try direct(path) { try $0.execute(sql: "UPDATE n SET w = 'ABC' WHERE id = 1; UPDATE n SET x = 1.0 WHERE id = 2") }
        #expect(try context.undoSummary()?.changedSince == 2)
        #expect(try context.undo().changedSince == 2)
        let rows = try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(id || ':' || w || ':' || quote(x), ' ') FROM n") }
        #expect(rows == "1:ABC:1 2:abc:1.0 3:r:0")
    }

    @Test("a delete that grows the WAL past 64 MiB, and its undo, leave it truncated to nothing: the file holds the rows, no -wal as big as the edit stays beside it")
    func largeEditTruncatesWAL() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, pad TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 120000) INSERT INTO n SELECT x, printf('%.800c', 'x') FROM c;
            """)
        try DatabaseQueue(path: path).writeWithoutTransaction { db in
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal")
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        func walBytes() -> Int { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0 }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n")), undoable: true)
        #expect(walBytes() == 0, "after the delete: \(walBytes()) bytes of WAL")
        try context.undo()
        #expect(walBytes() == 0, "after its undo: \(walBytes()) bytes of WAL")
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 120_000)
        // A small edit leaves SQLite's own checkpointing alone.
        try context.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id == 1"), propertiesToUpdate: try UpdateExpression.parseAssignments("pad = 'y'")))
        #expect(walBytes() > 0)
    }

    func dump(_ path: String, _ table: String = "movie") throws -> [[DatabaseValue]] {
        try direct(path) { db in try Row.fetchAll(db, sql: "SELECT rowid, * FROM \(table) ORDER BY rowid").map { Array($0.databaseValues) } }
    }

    @Test("an undoable update that assigns the key its rows are found again by (the INTEGER PRIMARY KEY, the rowid) is refused undo before it runs; without undo it runs")
    func keyAssigningUpdateRefusesUndo() throws {
        let f = try BatchRequestTests.Fixture()
        let original = try dump(f.path)
        let request = BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("id <= 3"),
                                         propertiesToUpdate: try UpdateExpression.parseAssignments("id = id + 100000, votes = 0"), resultType: .count)
        do {
            _ = try f.context.execute(request, undoable: true)
            Issue.record("an undoable update of the key ran")
        } catch let error as BatchStoreError {
            #expect(error.code == .undoRefused && error.message.contains("movie.id"), "\(error)")
        }
        #expect(try dump(f.path) == original && !f.context.canUndo)
        #expect(try f.context.execute(request, undoable: false).count == 3)
    }

    @Test func updateDeleteAndInsertUndoInReverseOrderToTheExactRows() throws {
        let f = try BatchRequestTests.Fixture()
        let context = f.context
        let original = try dump(f.path)
        try context.execute(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("year < 1950"),
                                               propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes * 2, title = 'x'")), undoable: true)
        let afterUpdate = try dump(f.path)
        try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate("votes > 2000"))), undoable: true)
        let afterDelete = try dump(f.path)
        try context.execute(BatchInsertRequest(entityName: "movie", objects: [["title": "new 1"], ["title": "new 2"]]), undoable: true)
        #expect(try dump(f.path).count == afterDelete.count + 2)
        #expect(try context.temporaryTableNames().filter { $0.hasPrefix("bs_undo") }.count == 3, "the journals live in SQLite")

        do {
            let undoneInsert = try context.undo()
            #expect(undoneInsert.deletedCount == 2 && undoneInsert.deleted.isEmpty, "the undone keys stay in SQLite")
            #expect(try undoneInsert.stored.first?.objectIDs().count == 2)
            #expect(try dump(f.path) == afterDelete)
            let undoneDelete = try context.undo()
            #expect(undoneDelete.insertedCount == original.count - afterDelete.count)
            #expect(try dump(f.path) == afterUpdate)
            let undoneUpdate = try context.undo()
            #expect(undoneUpdate.updatedCount == afterUpdate.indices.filter { afterUpdate[$0] != original[$0] }.count)
            #expect(try dump(f.path) == original)
            #expect(!context.canUndo)
            #expect(throws: BatchStoreError(.nothingToUndo, "nothing to undo")) { try context.undo() }
            #expect(try context.temporaryTableNames().filter { $0.hasPrefix("bs_undo") }.isEmpty, "journals are dropped as they are undone")
            #expect(try context.temporaryTableNames().filter { $0.hasPrefix("bs_changes") }.count == 3)
        }
        #expect(try context.temporaryTableNames().isEmpty, "the change tables go with the change sets")
    }

    @Test func undoIsMergedIntoTheContextAndItsCollections() throws {
        let f = try BatchRequestTests.Fixture()
        let rows = try f.context.fetchBatched(FetchRequest(entityName: "movie", fetchBatchSize: 25))
        #expect(try rows[0]?.value(forKey: "title") == .text("Film 1"))
        let result = try f.context.execute(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("id <= 10"),
                                                              propertiesToUpdate: [("title", .constant("changed"))], resultType: .objectIDs), undoable: true)
        f.context.mergeChanges(ChangeSet(updated: result.objectIDs ?? []))
        #expect(try rows[0]?.value(forKey: "title") == .text("changed"))
        try f.context.undo()
        #expect(try rows[0]?.value(forKey: "title") == .text("Film 1"), "undo merged itself")
    }

    /// The code `body` throws with (nil when it does not throw, or throws something else).
    func code(_ body: () throws -> Any) -> BatchStoreError.Code? {
        do { _ = try body(); return nil } catch let error as BatchStoreError { return error.code } catch { return nil }
    }

    @Test("every undo refusal has its own code, on one store and on several; nothing is written")
    func refusalsCarryCodes() throws {
        let f = try BatchRequestTests.Fixture()
        let context = f.context
        let before = try dump(f.path)
        let directors = try dump(f.path, "director")
        // movie.director_id has ON DELETE CASCADE: undo could not bring the movies back.
        #expect(code { try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director", predicate: try FetchPredicate("id == 1"))), undoable: true) } == .undoRefused)
        var rules = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate("id == 1")))
        rules.appliesDeleteRules = true
        #expect(code { try context.execute(rules, undoable: true) } == .undoRefused, "delete rules change rows the journal does not hold")
        context.undoLimit = 100
        #expect(code { try context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: [("votes", .constant(1))]), undoable: true) } == .tooBigToUndo)
        #expect(code { try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie")), undoable: true) } == .tooBigToUndo)
        var n = 0
        #expect(code { try context.execute(BatchInsertRequest(entityName: "movie") { n += 1; return n <= 150 ? ["title": "t"] : nil }, undoable: true) } == .tooBigToUndo)
        let upsert = BatchInsertRequest(entityName: "movie", objects: (1...150).map { ["id": .integer(Int64($0)), "votes": 1] }, conflictPolicy: .upsert)
        #expect(code { try context.execute(upsert, undoable: true) } == .tooBigToUndo)
        #expect(code { try context.undo() } == .nothingToUndo)
        #expect(try dump(f.path) == before && dump(f.path, "director") == directors, "no refusal wrote anything")

        // Several stores: the same codes come through the coordinated context.
        let dir = TempDir()
        let paths = try ["a.sqlite", "b.sqlite"].map { try makeDatabase(dir, $0, sql: BatchRequestTests.sql) }
        let several = try CoordinatedContext(coordinator: PersistentStoreCoordinator(stores: paths.map { try PersistentStore(path: $0) }))
        #expect(code { try several.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director")), undoable: true) } == .undoRefused)
        for context in several.contexts { context.undoLimit = 100 }
        #expect(code { try several.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: [("votes", .constant(1))]), undoable: true) } == .tooBigToUndo)
        #expect(code { try several.undo(store: "a") } == .nothingToUndo)
        for path in paths { #expect(try dump(path) == before) }
    }

    @Test func undoRefusesWhatItCouldNotRestoreAndSaysWhy() throws {
        let f = try BatchRequestTests.Fixture()
        let before = try dump(f.path, "director")
        do {
            try f.context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director", predicate: try FetchPredicate("id == 1"))), undoable: true)
            Issue.record("deleted")
        } catch let e as BatchStoreError {
            #expect(e.message.contains("movie") && e.message.contains("foreign-key actions"))
            #expect(e.code == .undoRefused)
        }
        #expect(try dump(f.path, "director") == before, "nothing was written")
        f.context.undoLimit = 100
        do {
            try f.context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: [("votes", .constant(1))]), undoable: true)
            Issue.record("updated")
        } catch let e as BatchStoreError {
            #expect(e.message.contains("300 rows, more than the undo limit of 100"))
            #expect(e.code == .tooBigToUndo)
        }
        var n = 0
        #expect(throws: BatchStoreError.self) {
            try f.context.execute(BatchInsertRequest(entityName: "movie") { n += 1; return n <= 150 ? ["title": "t"] : nil }, undoable: true)
        }
        #expect(try direct(f.path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE votes = 1 OR title = 't'") } == 0)
        #expect(!f.context.canUndo)
        // Without undo the same changes run.
        #expect(try f.context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: [("votes", .constant(1))], resultType: .count)).count == 300)
    }
}
