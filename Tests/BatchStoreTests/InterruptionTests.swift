import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// Cancelling a batch delete, update or undo part way (``ManagedObjectContext/interruptible(_:_:)``):
/// on a real file of 300,000 rows, stopped from the progress handler at its first report inside
/// the write transaction (deterministic: no sleep), the file, the undo stack and the connection's
/// temp tables must be exactly as before, and the store still usable.
@Suite("Interrupting batch edits", .serialized, .tags(.slow), .timeLimit(slowTestLimit))
struct InterruptionTests {
    static let rows = 300_000

    func makeFile(_ dir: TempDir) throws -> String { try makeIndexedNumbers(dir, count: Self.rows) }

    func checksum(_ path: String) throws -> String { try rowChecksum(path) }

    /// A handler that cancels at its first report inside the write transaction, and records the
    /// phases it saw.
    final class CancelWhileWriting: @unchecked Sendable {
        var phases: [EditProgress.Phase] = []
        func handle(_ p: EditProgress) -> IDFetchDecision {
            phases.append(p.phase)
            return p.phase == .writing ? .cancel : .proceed
        }
    }

    @Test("a delete of 150,000 rows cancelled in its transaction changes nothing, and the same delete then runs")
    func deleteCancelled() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 500")))
        let before = try checksum(path)
        let temps = try context.temporaryTableNames()
        let request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 500")), resultType: .changes)
        let handler = CancelWhileWriting()
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible(handler.handle) { try result.execute(request, undoable: true) }
        }
        #expect(handler.phases.last == .writing, "stopped inside the transaction: \(handler.phases)")
        #expect(try checksum(path) == before)
        #expect(!context.canUndo, "no undo entry for an edit that did not happen")
        #expect(try context.temporaryTableNames() == temps, "no journal, change or ID table left behind")

        // The store is still usable: the same delete runs to the end, and undo brings the rows back.
        let done = try context.interruptible({ _ in .proceed }) { try result.execute(request, undoable: true) }
        #expect(done.count == Self.rows / 2)
        #expect(try checksum(path).hasPrefix("\(Self.rows / 2) rows,"))
        try context.undo()
        #expect(try checksum(path) == before)
    }

    @Test("an update cancelled in its transaction changes nothing and leaves the earlier undo entry as it was")
    func updateCancelled() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let original = try checksum(path)
        // An earlier edit, so the undo stack has an entry the cancelled update must not disturb.
        _ = try context.execute(BatchUpdateRequest(entityName: "n", predicate: try FetchPredicate("id <= 10"),
                                               propertiesToUpdate: try UpdateExpression.parseAssignments("name = 'first'")), undoable: true)
        let before = try checksum(path)
        let result = try context.fetchBatched(FetchRequest(entityName: "n"))
        let temporaryWithResult = try context.temporaryTableNames()
        let update = BatchUpdateRequest(entityName: "n", propertiesToUpdate: try UpdateExpression.parseAssignments("v = v + 1, name = name || '!'"), resultType: .changes)
        let handler = CancelWhileWriting()
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible(handler.handle) { try result.execute(update, undoable: true) }
        }
        #expect(handler.phases.last == .writing, "\(handler.phases)")
        #expect(try checksum(path) == before)
        #expect(try context.temporaryTableNames() == temporaryWithResult)
        // One undo: the earlier update's, exactly.
        try context.undo()
        #expect(try checksum(path) == original)
        #expect(!context.canUndo)
    }

    @Test("an undo cancelled in its transaction changes nothing: the edit stays, and undo works later")
    func undoCancelled() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let original = try checksum(path)
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v >= 400"))), undoable: true)
        let deleted = try checksum(path)
        #expect(deleted.hasPrefix("\(Self.rows * 2 / 5) rows,"))
        let temps = try context.temporaryTableNames()
        let handler = CancelWhileWriting()
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible(handler.handle) { try context.undo() }
        }
        #expect(handler.phases.last == .writing, "\(handler.phases)")
        #expect(try checksum(path) == deleted)
        #expect(context.canUndo, "the entry stays")
        #expect(try context.temporaryTableNames() == temps, "the journal is still there, nothing else is")
        try context.undo()
        #expect(try checksum(path) == original)
    }

    @Test("a cancel during the count before the transaction (reading) changes nothing either")
    func cancelWhileCounting() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let before = try checksum(path)
        var phases: [EditProgress.Phase] = []
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible({ p in phases.append(p.phase); return .cancel }) {
                try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("name CONTAINS '7'"))), undoable: true)
            }
        }
        #expect(phases == [.reading], "the undo count is read before the transaction")
        #expect(try checksum(path) == before && !context.canUndo)
    }

    @Test("a cancel that comes after the commit does not stop the call: the edit stands and the call returns")
    func cancelAfterCommit() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        var sawWriting = false, askedAfter = 0
        let counted = try context.interruptible({ p in
            if p.phase == .writing { sawWriting = true; return .proceed }
            if sawWriting { askedAfter += 1; return .cancel }
            return .proceed
        }) { () -> Int in
            let deleted = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 100")), resultType: .count), undoable: true)
            // Work after the commit, long enough to be asked again: the cancel does not stop it.
            _ = try context.count(for: FetchRequest(entityName: "n", predicate: try FetchPredicate("name CONTAINS 'x'")))
            return deleted.count ?? -1
        }
        #expect(sawWriting)
        #expect(counted == Self.rows / 10)
        #expect(try checksum(path).hasPrefix("\(Self.rows * 9 / 10) rows,"))
        #expect(context.canUndo)
        #expect(askedAfter >= 1, "the handler was asked after the commit, and its cancel did nothing")
    }

    @Test("several stores: a delete cancelled in the first store's transaction changes no store")
    func severalStores() throws {
        let dir = TempDir()
        let paths = try ["a", "b"].map { name -> String in
            let sub = TempDir()
            let path = try makeFile(sub)
            let target = dir.path("\(name).sqlite")
            try FileManager.default.copyItem(atPath: path, toPath: target)
            return target
        }
        let stores = try paths.map { try PersistentStore(path: $0) }
        let context = try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: stores))
        let before = try paths.map(checksum)
        let result = try context.fetchBatched(FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 300")), residentBatches: 8, firstBatch: nil, progress: nil)
        let handler = CancelWhileWriting()
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible(handler.handle) {
                try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 300")), resultType: .changes), undoable: true)
            }
        }
        #expect(try paths.map(checksum) == before)
        #expect(!context.canUndo)
        let done = try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 300")), resultType: .count), undoable: true)
        #expect(done.count == Self.rows * 3 / 10 * 2)
    }

    /// Two stores, each a copy of the 300,000-row file, behind one coordinated context.
    func twoStores(_ dir: TempDir) throws -> ([String], CoordinatedContext) {
        let made = TempDir()
        let path = try makeFile(made)
        let paths = try ["a", "b"].map { name -> String in
            let target = dir.path("\(name).sqlite")
            try FileManager.default.copyItem(atPath: path, toPath: target)
            return target
        }
        let stores = try paths.map { try PersistentStore(path: $0) }
        return (paths, try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: stores)))
    }

    @Test("several stores: a cancel once the first store committed changes nothing: both stores are deleted from, and undo restores both")
    func severalStoresTooLate() throws {
        let dir = TempDir()
        let (paths, context) = try twoStores(dir)
        let before = try paths.map(checksum)
        // Cancel at the first report inside the second store's transaction.
        var transactions = 0, last = EditProgress.Phase.reading, cancelsAsked = 0
        let done = try context.interruptible({ p in
            if p.phase == .writing && last == .reading { transactions += 1 }
            last = p.phase
            guard transactions >= 2 else { return .proceed }
            cancelsAsked += 1
            return .cancel
        }) {
            try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 300")), resultType: .count), undoable: true)
        }
        #expect(transactions == 2 && cancelsAsked >= 1, "asked to cancel in the second store's transaction")
        #expect(done.count == Self.rows * 3 / 10 * 2, "all or nothing: both stores ran")
        #expect(try paths.map { try checksum($0).hasPrefix("\(Self.rows * 7 / 10) rows,") } == [true, true])
        try context.undo()
        #expect(try paths.map(checksum) == before)
    }

    @Test("several stores: an undo cancelled in the first store it undoes changes nothing; then it undoes both")
    func severalStoresUndoCancelled() throws {
        let dir = TempDir()
        let (paths, context) = try twoStores(dir)
        let before = try paths.map(checksum)
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "n", predicate: try FetchPredicate("v >= 500"))), undoable: true)
        let deleted = try paths.map(checksum)
        let handler = CancelWhileWriting()
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            try context.interruptible(handler.handle) { try context.undo() }
        }
        #expect(handler.phases.last == .writing)
        #expect(try paths.map(checksum) == deleted && context.canUndo)
        try context.undo()
        #expect(try paths.map(checksum) == before && !context.canUndo)
    }
}
