import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct UndoTests {
    func dump(_ path: String, _ table: String = "movie") throws -> [[DatabaseValue]] {
        try direct(path) { db in try Row.fetchAll(db, sql: "SELECT rowid, * FROM \(table) ORDER BY rowid").map { Array($0.databaseValues) } }
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
            #expect(throws: BatchStoreError(.invalidArgument, "nothing to undo")) { try context.undo() }
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

    @Test func undoRefusesWhatItCouldNotRestoreAndSaysWhy() throws {
        let f = try BatchRequestTests.Fixture()
        let before = try dump(f.path, "director")
        do {
            try f.context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "director", predicate: try FetchPredicate("id == 1"))), undoable: true)
            Issue.record("deleted")
        } catch let e as BatchStoreError {
            #expect(e.message.contains("movie") && e.message.contains("foreign-key actions"))
        }
        #expect(try dump(f.path, "director") == before, "nothing was written")
        f.context.undoLimit = 100
        do {
            try f.context.execute(BatchUpdateRequest(entityName: "movie", propertiesToUpdate: [("votes", .constant(1))]), undoable: true)
            Issue.record("updated")
        } catch let e as BatchStoreError {
            #expect(e.message.contains("300 rows, more than the undo limit of 100"))
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
