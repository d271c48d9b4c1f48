@testable import BatchStore
import Foundation
import GRDB
import Testing

@Suite("Several stores behind one coordinator")
struct CoordinatorTests {
    /// Three stores with the same `movie` shape and overlapping ids 1…n.
    func makeStores(_ dir: TempDir, rows: Int = 300) throws -> [String] {
        try ["a", "b", "c"].enumerated().map { i, name in
            let path = dir.path("\(name).sqlite")
            let q = try DatabaseQueue(path: path)
            try q.write { db in
                try db.execute(sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER, votes INTEGER NOT NULL DEFAULT 0)")
                let s = try db.makeStatement(sql: "INSERT INTO movie VALUES (?, ?, ?, ?)")
                var rng = SplitMix64(seed: UInt64(i + 1))
                for id in 1...rows { try s.execute(arguments: [id, "title \(rng.below(1000))", 1950 + rng.below(70), rng.below(100)]) }
            }
            return path
        }
    }

    func coordinator(_ paths: [String], readOnly: Set<Int> = []) throws -> CoordinatedContext {
        let stores = try paths.enumerated().map { try PersistentStore(path: $1, options: .init(readOnly: readOnly.contains($0))) }
        return try CoordinatedContext(coordinator: try PersistentStoreCoordinator(stores: stores))
    }

    @Test("one sorted result across stores, in the order SQLite gives over the same rows")
    func sortOrder() throws {
        let dir = TempDir()
        let paths = try makeStores(dir)
        let context = try coordinator(paths)
        let request = FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 1980"),
                                   sortDescriptors: try SortDescriptor.parse("title desc, year"), fetchBatchSize: 25)
        var firstBatch: [String] = []
        let rows = try context.fetchBatched(request, residentBatches: 2,
                                            firstBatch: { firstBatch = $0.map { "\($0.objectID.entity.storeName):\((try? $0.value(forKey: "id")) ?? .null)" } },
                                            progress: { _ in .proceed })
        let q = try DatabaseQueue(path: paths[0])
        let expected: [String] = try q.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS b; ATTACH DATABASE ? AS c", arguments: [paths[1], paths[2]])
            return try String.fetchAll(db, sql: """
                SELECT s || ':' || id FROM (SELECT 'a' AS s, 0 AS n, * FROM main.movie UNION ALL SELECT 'b', 1, * FROM b.movie UNION ALL SELECT 'c', 2, * FROM c.movie)
                WHERE year >= 1980 ORDER BY title DESC, year, n, id
                """)
        }
        #expect(rows.count == expected.count && rows.count > 100)
        var got: [String] = []
        for i in 0..<rows.count {
            let o = try #require(rows[i])
            got.append("\(o.objectID.entity.storeName):\(try o.value(forKey: "id"))")
        }
        #expect(got == expected)
        #expect(firstBatch == Array(expected.prefix(25)), "the first batch comes before the ID fetch, in result order")
        // Memory stays bounded while sweeping: at most two batches of objects alive.
        #expect(rows.statistics.batchesResident <= 2)
        #expect(context.contexts.reduce(0) { $0 + $1.registeredObjectCount } <= 2 * 25)
        // The IDs live in SQLite: the temp table the statistics name holds every one, in order.
        let table = try #require(rows.statistics.idStorage.split(separator: " ").dropFirst(3).first.map(String.init))
        let held = try context.connection.queue.inDatabase { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.\(quoteIdentifier(table)) WHERE pos BETWEEN 1 AND ?", arguments: [rows.count])
        }
        #expect(held == rows.count)
    }

    @Test("the same key in two stores is two objects, with IDs that say their store")
    func sameKeys() throws {
        let dir = TempDir()
        let context = try coordinator(try makeStores(dir, rows: 5))
        let rows = try context.fetchBatched(FetchRequest(entityName: "movie", predicate: try FetchPredicate("id == 3")))
        #expect(rows.count == 3)
        let objects = (0..<3).compactMap { rows[$0] }
        #expect(Set(objects.map(\.objectID)).count == 3)
        #expect(objects.map(\.objectID.uriRepresentation) == ["x-batchstore://a/movie/r3", "x-batchstore://b/movie/r3", "x-batchstore://c/movie/r3"])
        #expect(try rows.storeName(at: 1) == "b")
    }

    @Test("batch update and delete take affectedStores; insert goes to one store")
    func affectedStores() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 50)
        let context = try coordinator(paths)
        func votes(_ i: Int) throws -> Int { try DatabaseQueue(path: paths[i]).read { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") ?? 0 } }
        let before = try (0..<3).map(votes)
        let update = BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes + 1"), resultType: .count)
        let results = try context.execute(update, affectedStores: ["b", "c"])
        #expect(results.byStore.mapValues { $0.count } == ["b": 50, "c": 50])
        #expect(try (0..<3).map(votes) == [before[0], before[1] + 50, before[2] + 50])
        _ = try context.execute(update)
        #expect(try (0..<3).map(votes) == [before[0] + 50, before[1] + 100, before[2] + 100])

        let delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate("id <= 10")), resultType: .count)
        #expect(try context.execute(delete, affectedStores: ["a"]).byStore.mapValues { $0.count } == ["a": 10])
        let counts = try paths.map { p in try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie") ?? 0 } }
        #expect(counts == [40, 50, 50])

        let insert = BatchInsertRequest(entityName: "movie", objects: [["id": 1000, "title": "new"]], resultType: .objectIDs)
        let inserted = try context.execute(insert, into: "c")
        #expect(inserted.objectIDs?.first?.uriRepresentation == "x-batchstore://c/movie/r1000")
        #expect(try DatabaseQueue(path: paths[2]).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE id = 1000") } == 1)
        #expect(throws: BatchStoreError.self) { try context.execute(update, affectedStores: ["nope"]) }
    }

    @Test("merging and undo work per store; open results drop stale batches")
    func mergeAndUndo() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 20)
        let context = try coordinator(paths)
        let rows = try context.fetchBatched(FetchRequest(entityName: "movie", sortDescriptors: try SortDescriptor.parse("id"), fetchBatchSize: 10))
        let first = try #require(rows[0])   // store a, id 1
        #expect(try first.value(forKey: "votes") != .integer(-1))
        let update = BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("id == 1"),
                                        propertiesToUpdate: try UpdateExpression.parseAssignments("votes = -1"), resultType: .objectIDs)
        let results = try context.execute(update, affectedStores: ["a"], undoable: true)
        context.mergeChanges(ChangeSet(updated: results.byStore["a"]?.objectIDs ?? []))
        #expect(try rows[0]?.value(forKey: "votes") == .integer(-1))
        #expect(try rows[1]?.value(forKey: "votes") != .integer(-1))   // id 1 in store b is untouched
        try context.undo(store: "a")
        #expect(try rows[0]?.value(forKey: "votes") != .integer(-1))
    }

    @Test("stores whose schemas differ are refused, naming the difference")
    func schemaDifferences() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 3)
        let odd = dir.path("odd.sqlite")
        try DatabaseQueue(path: odd).write { try $0.execute(sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year TEXT, votes INTEGER NOT NULL DEFAULT 0)") }
        let context = try coordinator([paths[0], odd])
        let error = #expect(throws: BatchStoreError.self) { _ = try context.fetchBatched(FetchRequest(entityName: "movie")) }
        #expect(error?.message == "movie differs between stores a and odd: column \"year\" is INTEGER in a, TEXT in odd")
        #expect(error?.code == .invalidQuery)
        let fewer = dir.path("fewer.sqlite")
        try DatabaseQueue(path: fewer).write { try $0.execute(sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER)") }
        let e2 = #expect(throws: BatchStoreError.self) { _ = try coordinator([paths[0], fewer]).fetchBatched(FetchRequest(entityName: "movie")) }
        #expect(e2?.message.contains("column \"votes\" is only in a") == true)
        // Same names twice, or no stores: refused up front.
        #expect(throws: BatchStoreError.self) { _ = try PersistentStoreCoordinator(stores: [try PersistentStore(path: paths[0]), try PersistentStore(path: paths[0])]) }
        #expect(throws: BatchStoreError.self) { _ = try PersistentStoreCoordinator(stores: []) }
    }

    @Test("a missing store file is an error and is not created; a read-only store refuses the whole batch up front")
    func missingAndReadOnly() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 10)
        let missing = dir.path("gone.sqlite")
        #expect(throws: BatchStoreError.self) { _ = try coordinator([paths[0], missing]) }
        #expect(!FileManager.default.fileExists(atPath: missing))
        let context = try coordinator(paths, readOnly: [1])
        let update = BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = 0"))
        let error = #expect(throws: BatchStoreError.self) { try context.execute(update) }
        #expect(error?.message.hasPrefix("store b is read-only; nothing was changed") == true)
        #expect(try DatabaseQueue(path: paths[0]).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE votes = 0") } != 10)
        _ = try context.execute(update, affectedStores: ["a", "c"])
        #expect(try DatabaseQueue(path: paths[0]).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE votes = 0") } == 10)
        // Reading across mixed stores works.
        #expect(try context.fetchBatched(FetchRequest(entityName: "movie")).count == 30)
    }

    @Test("a failure in a later store puts the earlier stores back: all or nothing across stores")
    func atomicAcrossStores() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 10)
        try DatabaseQueue(path: paths[2]).write { try $0.execute(sql: "CREATE TRIGGER no BEFORE UPDATE ON movie WHEN new.votes > 1000 BEGIN SELECT RAISE(ABORT, 'votes too high'); END") }
        let context = try coordinator(paths)
        let before = try paths.map { p in try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") ?? 0 } }
        let update = BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes + 5000"))
        #expect(throws: BatchStoreError.self) { try context.execute(update) }
        let after = try paths.map { p in try DatabaseQueue(path: p).read { try Int.fetchOne($0, sql: "SELECT sum(votes) FROM movie") ?? 0 } }
        #expect(after == before)
    }

    @Test("edits on a result across stores touch only the result's rows: not rows inserted since the fetch, not rows of other stores")
    func editsWithinAResultAcrossStores() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 50)
        let context = try coordinator(paths)
        let result = try context.fetchBatched(FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 2000"), fetchBatchSize: 10))
        func count(_ path: String, _ sql: String) throws -> Int { try direct(path) { try Int.fetchOne($0, sql: sql) ?? -1 } }
        let before = try paths.map { try count($0, "SELECT count(*) FROM movie WHERE year >= 2000") }
        #expect(result.count == before.reduce(0, +) && result.count > 0)
        // Another program adds a matching row to b after the fetch: the result does not hold it.
        try direct(paths[1]) { try $0.execute(sql: "INSERT INTO movie VALUES (1000, 'new', 2010, 0)") }
        let update = BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("year >= 2000"),
                                        propertiesToUpdate: try UpdateExpression.parseAssignments("votes = -1"), resultType: .count)
        #expect(try result.count(forUpdate: update) == result.count, "the count is of the result's rows only")
        let updated = try result.execute(update, undoable: true)
        let updatedCount: Int = updated.byStore.values.compactMap(\.count).reduce(0, +)
        #expect(updatedCount == result.count)
        #expect(try paths.map { try count($0, "SELECT count(*) FROM movie WHERE votes = -1") } == before)
        #expect(try count(paths[1], "SELECT votes FROM movie WHERE id = 1000") == 0, "the row inserted since the fetch is untouched")
        // Marked rows: only those, store by store; a row of another entity or outside the result is refused.
        let marked = [try result.object(at: 0), try result.object(at: result.count - 1)].compactMap { $0?.objectID }
        #expect(try result.count(forUpdate: update, objectIDs: marked) == 2)
        let delete = BatchDeleteRequest(objectIDs: marked, resultType: .count)
        #expect(try result.count(forDelete: delete) == 2)
        _ = try result.execute(delete)
        let left: Int = try paths.map { try count($0, "SELECT count(*) FROM movie WHERE year >= 2000") }.reduce(0, +)
        let expectedLeft: Int = before.reduce(0, +) - 1
        #expect(left == expectedLeft, "two marked rows gone, the new row still there")
        // The whole result, deleted: the new row survives.
        let all = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 2000")), resultType: .count)
        #expect(try result.count(forDelete: all) == result.count - 2)
        _ = try result.execute(all)
        #expect(try paths.map { try count($0, "SELECT count(*) FROM movie WHERE year >= 2000") } == [0, 1, 0])
        #expect(throws: BatchStoreError.self) {
            try result.execute(BatchUpdateRequest(entityName: "nope", propertiesToUpdate: try UpdateExpression.parseAssignments("votes = 1")))
        }
    }

    @Test("a context over several stores answers as FetchingContext does for one: counts with limit and offset once, undo of every undoable edit made through it")
    func oneContractForSeveralStores() throws {
        let dir = TempDir()
        let paths = try makeStores(dir, rows: 20)
        let context = try coordinator(paths)
        let request = BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 1980"), fetchLimit: 7, fetchOffset: 25, fetchBatchSize: 5)
        #expect(try context.count(for: request) == context.fetchBatched(request).count, "limit and offset apply once, to the whole result")
        var deep = request
        deep.fetchOffset = 1000
        #expect(try context.count(for: deep) == 0)
        // An undoable insert through the coordinated context is undone by its undo().
        #expect(!context.canUndo)
        let insert = BatchInsertRequest(entityName: "movie", objects: [["id": 1000, "title": "new"]], resultType: .count)
        _ = try context.execute(insert, into: "b", undoable: true)
        #expect(context.canUndo)
        try context.undo()
        #expect(!context.canUndo)
        #expect(try DatabaseQueue(path: paths[1]).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE id = 1000") } == 0)
        #expect(throws: BatchStoreError(.nothingToUndo, "nothing to undo")) { try context.undo() }
    }
}
