import BatchStore
import Foundation
import Testing
import TestSupport

/// The unsaved-changes and saving suite (``SaveModel``, one definition) over SQLite; the same
/// suite runs over PostgreSQL in `PostgresSaveModelTests`.
@Suite("Saving agrees with the model: pending changes, saves all or nothing, rollbacks, merge policies (SQLite)")
struct SaveModelTests {
    @Test("random setValue, inserts, deletes, saves, rollbacks, refreshes, another connection's writes and merged batch edits agree with the model; a failure shrinks")
    func randomSequences() throws {
        let (failure, kinds) = try SaveModel.check(sequences: 24, length: 30, seed: ContextModelTests.seed, make: ContextModelTests.engine)
        #expect(failure == nil, "\(failure ?? "")")
        #expect(kinds.isSuperset(of: SaveModel.kinds), "\(kinds)")
    }

    @Test("the model notices a save that fails where it should not, or writes what it should not")
    func modelBites() throws {
        // An update of a row another connection deleted must fail the save, and write nothing.
        let gone: [SaveModel.Step] = [.set(id: 3, v: 7), .insert(key: 120, v: 1), .external(id: 3, v: nil, delete: true), .save]
        #expect(try SaveModel.run(gone, seed: ContextModelTests.seed, make: ContextModelTests.engine) == nil)
        // The same steps, read by a model that forgets the other connection's delete, must fail.
        let unseen: [SaveModel.Step] = [.set(id: 3, v: 7), .insert(key: 120, v: 1), .save, .external(id: 3, v: nil, delete: true), .read(120)]
        #expect(try SaveModel.run(unseen, seed: ContextModelTests.seed, make: ContextModelTests.engine) == nil)
        // A key taken twice fails the save.
        let twice: [SaveModel.Step] = [.insert(key: 120, v: 1), .insert(key: 120, v: 2), .save, .read(120)]
        #expect(try SaveModel.run(twice, seed: ContextModelTests.seed, make: ContextModelTests.engine) == nil)
    }
}
