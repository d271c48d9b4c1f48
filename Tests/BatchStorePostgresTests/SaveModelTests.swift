import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// The unsaved-changes and saving suite (``SaveModel``, one definition) over PostgreSQL, as
/// `SaveModelTests` runs it over SQLite: the same steps, the same model, the same checks.
@Suite("Saving agrees with the model: pending changes, saves all or nothing, rollbacks, merge policies (PostgreSQL)", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct PostgresSaveModelTests {
    @Test("random setValue, inserts, deletes, saves, rollbacks, refreshes, another session's writes and merged batch edits agree with the model; a failure shrinks")
    func randomSequences() throws {
        let server = try PostgresServer.require()
        let (failure, kinds) = try SaveModel.check(sequences: 24, length: 30, seed: PostgresContextModelTests.seed) { try PostgresContextModelTests.engine(server) }
        #expect(failure == nil, "\(failure ?? "")")
        #expect(kinds.isSuperset(of: SaveModel.kinds), "\(kinds)")
    }

    @Test("one contract per operation on both engines: another context's object is refused by delete and left alone by refresh; a merged-deleted object cannot be deleted")
    func contracts() throws {
        let server = try PostgresServer.require()
        let failure = try SaveModel.contracts { try PostgresContextModelTests.engine(server) }
        #expect(failure == nil, "\(failure ?? "")")
    }
}
