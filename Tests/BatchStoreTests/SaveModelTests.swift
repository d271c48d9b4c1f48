import BatchStore
import Foundation
import Testing
import TestSupport

/// The unsaved-changes and saving suite (``SaveModel``, one definition) over SQLite; the same
/// suite runs over PostgreSQL in `PostgresSaveModelTests`.
@Suite("Saving agrees with the model: pending changes, saves all or nothing, rollbacks, merge policies (SQLite)", .tags(.slow), .timeLimit(slowTestLimit))
struct SaveModelTests {
    @Test("random setValue, inserts, deletes, saves, rollbacks, refreshes, another connection's writes and merged batch edits agree with the model; a failure shrinks")
    func randomSequences() throws {
        let (failure, kinds) = try SaveModel.check(sequences: 24, length: 30, seed: ContextModelTests.seed, make: ContextModelTests.engine)
        #expect(failure == nil, "\(failure ?? "")")
        #expect(kinds.isSuperset(of: SaveModel.kinds), "\(kinds)")
    }

    @Test("one contract per operation on both engines: another context's object is refused by delete and left alone by refresh; a merged-deleted object cannot be deleted")
    func contracts() throws {
        let failure = try SaveModel.contracts(make: ContextModelTests.engine)
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test("the model notices a save that succeeds where it should fail, and passes the same steps on a true engine")
    func modelBites() throws {
        // An update of a row another connection deleted must fail the save and write nothing;
        // a key taken twice fails it too.
        let gone: [SaveModel.Step] = [.set(id: 3, v: 7), .insert(key: 120, v: 1), .external(id: 3, v: nil, delete: true), .save, .read(3), .rollback, .save]
        let twice: [SaveModel.Step] = [.insert(key: 120, v: 1), .insert(key: 120, v: 2), .save, .read(120)]
        #expect(try SaveModel.run(gone, seed: ContextModelTests.seed, make: ContextModelTests.engine) == nil)
        #expect(try SaveModel.run(twice, seed: ContextModelTests.seed, make: ContextModelTests.engine) == nil)
        // An engine whose other connection writes nothing, and whose file is read as if it had
        // deleted row 3: the save the model expects to fail succeeds, and the model says so.
        let deaf = {
            let engine = try ContextModelTests.engine()
            var told = false
            // The original's closure keeps its folder alive.
            return ContextModel.Engine(name: engine.name, context: engine.context, id: engine.id, external: { _ in _ = engine.external; told = true },
                                       fileRows: { try engine.fileRows().filter { !told || $0.key != 3 } })
        }
        let failure = try SaveModel.run(gone, seed: ContextModelTests.seed, make: deaf)
        #expect(failure?.contains("the save succeeded, it should fail with objectNotFound") == true, "\(failure ?? "nil")")
    }
}
