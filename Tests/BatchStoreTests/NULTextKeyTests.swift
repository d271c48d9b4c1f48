import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// Text with an embedded NUL as a primary key: every path that binds or reads a key keeps all its
/// bytes (GRDB binds and reads text only up to a NUL, so these paths go through SQLite's C API).
@Suite struct NULTextKeyTests {
    static let sql = """
        CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
        INSERT INTO kv VALUES (CAST(x'6100' AS TEXT), 'a-nul'), ('a', 'plain a'), (CAST(x'610062' AS TEXT), 'a-nul-b'), ('b', 'plain b');
        """

    func stored(_ path: String) throws -> [String] {
        try direct(path) { try String.fetchAll($0, sql: "SELECT hex(k) || '=' || v FROM kv ORDER BY k") }
    }

    @Test("fetch, fault, batches, save, batch update and delete, merge and undo keep NUL keys apart")
    func everyKeyPath() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: Self.sql)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        // Four distinct keys, four distinct objects, each with its own row's values.
        let all = try context.fetchAll(FetchRequest(entityName: "kv", sortDescriptors: [SortDescriptor(key: "k")]))
        #expect(try all.map { try $0["v"] } == [.text("plain a"), .text("a-nul"), .text("a-nul-b"), .text("plain b")])
        #expect(Set(all.map(\.objectID)).count == 4)
        #expect(all[1].objectID.key == .primaryKey([.text("a\0")]))
        let batched = try context.fetchBatched(FetchRequest(entityName: "kv", sortDescriptors: [SortDescriptor(key: "k")], fetchBatchSize: 2))
        #expect(try (0..<batched.count).map { try batched[$0]?["v"] } == [.text("plain a"), .text("a-nul"), .text("a-nul-b"), .text("plain b")])
        // A fresh context faults one object by its NUL key.
        let other = try ManagedObjectContext(store: try PersistentStore(path: path))
        #expect(try other.existingObject(with: all[2].objectID)["v"] == .text("a-nul-b"))
        // Save through the object path.
        try all[1].setValue("changed", forKey: "v")
        try context.save()
        #expect(try stored(path) == ["61=plain a", "6100=changed", "610062=a-nul-b", "62=plain b"])
        // Batch update with stored changes, merged into a context that holds the objects.
        let update = try context.execute(BatchUpdateRequest(entityName: "kv", predicate: try FetchPredicate("k BEGINSWITH %@", .value(.text("a\0"))),
                                                            propertiesToUpdate: try UpdateExpression.parseAssignments("v = v || '!'"), resultType: .changes), undoable: true)
        #expect(update.count == 2)
        #expect(try stored(path) == ["61=plain a", "6100=changed!", "610062=a-nul-b!", "62=plain b"])
        let held = try other.fetchAll(FetchRequest(entityName: "kv", sortDescriptors: [SortDescriptor(key: "k")]))
        _ = try held.map { try $0["v"] }
        if let changes = update.changes { other.mergeChanges(changes) }
        #expect(try held.map { try $0["v"] } == [.text("plain a"), .text("changed!"), .text("a-nul-b!"), .text("plain b")])
        try context.undo()
        #expect(try stored(path) == ["61=plain a", "6100=changed", "610062=a-nul-b", "62=plain b"])
        // Delete by object ID: exactly the NUL row, not 'a'.
        let deleted = try context.execute(BatchDeleteRequest(objectIDs: [all[1].objectID], resultType: .objectIDs))
        #expect(deleted.objectIDs == [all[1].objectID])
        #expect(try stored(path) == ["61=plain a", "610062=a-nul-b", "62=plain b"])
        // Search in an open result locates the NUL key's position.
        let again = try context.fetchBatched(FetchRequest(entityName: "kv", sortDescriptors: [SortDescriptor(key: "k")], fetchBatchSize: 2))
        #expect(try again.firstPosition(matching: FetchPredicate.matching([all[2].objectID]), after: -1) == 1)
    }
}
