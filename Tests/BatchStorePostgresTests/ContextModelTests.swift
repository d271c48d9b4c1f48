import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// The identity-map and merging suite (``ContextModel``, one definition) over PostgreSQL, as
/// `ContextModelTests` runs it over SQLite: the same steps, the same model, the same checks.
@Suite("Contexts agree with the model: identity, staleness, merges (PostgreSQL)", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct PostgresContextModelTests {
    static let seed: UInt64 = 2511

    /// A fresh database holding the model's rows, and a context on it; another session is psql.
    static func engine(_ server: PostgresServer) throws -> ContextModel.Engine {
        let database = try server.makeDatabase("ctx", sql: ContextModel.tableSQL + "; " + ContextModel.insertSQL(ContextModel.rows(seed: seed)))
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let context = PostgresContext(store: store)
        let entity = try store.entity(named: "m")
        return ContextModel.Engine(
            name: "PostgreSQL", context: context, id: { ObjectID(entity: entity, key: .primaryKey([.integer($0)])) },
            external: { sql in _ = try server.psql(sql, database: database) },
            fileRows: {
                let lines = try server.psql("SELECT id, coalesce(v::text, 'NULL') FROM m", database: database).split(separator: "\n")
                return Dictionary(uniqueKeysWithValues: lines.compactMap { line -> (Int64, Int64?)? in
                    let parts = line.split(separator: "|")
                    guard parts.count == 2, let id = Int64(parts[0]) else { return nil }
                    return (id, Int64(parts[1]))
                })
            })
    }

    @Test("random fetches, lookups, held objects, merged and unmerged batch edits, another session's writes and refreshes agree with the model; a failure shrinks")
    func randomSequences() throws {
        let server = try PostgresServer.require()
        let (failure, kinds) = try ContextModel.check(sequences: 16, length: 30, seed: Self.seed) { try Self.engine(server) }
        #expect(failure == nil, "\(failure ?? "")")
        #expect(kinds.isSuperset(of: ContextModel.kinds), "\(kinds)")
    }

    @Test("a row of a table without a primary key is named by its place, which another row may take after a delete and a vacuum: its objects stay out of the identity map")
    func placesAreNotRows() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("ctid", sql: "CREATE TABLE k(v int); INSERT INTO k VALUES (1), (2), (3);")
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let context = PostgresContext(store: store)
        let request = BatchStore.FetchRequest(entityName: "k", fetchBatchSize: 10)
        let first = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
        let held = try #require(first[0])
        #expect(try held.value(forKey: "v") == .integer(1))
        #expect(context.registeredObjectCount == 0)
        _ = try server.psql("DELETE FROM k WHERE v = 1; VACUUM k; INSERT INTO k VALUES (9);", database: database)
        // The new row took the deleted row's place.
        #expect(try server.psql("SELECT ctid FROM k WHERE v = 9", database: database) == "(0,1)")
        let second = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
        let taker = try #require(second[0])
        #expect(taker.objectID == held.objectID, "the same place")
        #expect(taker !== held)
        #expect(try taker.value(forKey: "v") == .integer(9), "the row now at the place, not the held object's values")
        let looked = try context.existingObject(with: held.objectID)
        #expect(looked !== held)
        #expect(try looked.value(forKey: "v") == .integer(9))
        #expect(context.object(with: held.objectID) !== context.object(with: held.objectID), "a place gets a new fault each time")
    }
}
