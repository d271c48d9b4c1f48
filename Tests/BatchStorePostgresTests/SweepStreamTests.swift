import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// An iteration over a PostgreSQL result that goes on for a while reads the rest by one statement
/// (`PostgresSweepStream`), every row checked against the ID table: these tests hold it to what
/// faults would read, and to when it must give way to them.
@Suite("A sweep streams the rest of a PostgreSQL result, checked row by row against its ID table", .serialized, .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct SweepStreamTests {
    /// 30,000 rows: `grp` repeats (ties broken by the key), `v` names the row.
    static let rows = 30_000
    static let setup = """
        CREATE TABLE s (id int PRIMARY KEY, grp int NOT NULL, v text NOT NULL);
        INSERT INTO s SELECT g, (g * 7919) % 97, 'v' || g FROM generate_series(1, \(rows)) g;
        ANALYZE s;
        """
    static let batch = 500
    /// The pause a sweep may take and keep its stream, raised from half a second so that a loaded
    /// machine does not end a stream these tests count on (the pause test sets it back).
    static let pause = 10.0
    static let request = BatchStore.FetchRequest(entityName: "s", sortDescriptors: [SortDescriptor(key: "grp")], fetchBatchSize: batch)

    /// A database of ``setup``'s rows on the tests' server, and a store over it whose sweeps may
    /// pause ``pause`` seconds.
    static func open(_ prefix: String) throws -> (PostgresServer, String, PostgresStore) {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase(prefix, sql: setup)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        store.sweepStreamPause = pause
        return (server, database, store)
    }

    /// The keys in the request's order, as Swift computes it.
    static let order: [Int] = (1...rows).sorted { a, b in
        let (ga, gb) = ((a * 7919) % 97, (b * 7919) % 97)
        return ga != gb ? ga < gb : a < b
    }

    /// Each position's (id, v) as an iteration reads it; nil for a row gone.
    static func sweep(_ result: BatchFaultingCollection) throws -> [[SQLValue]?] {
        var seen: [[SQLValue]?] = []
        for object in result {
            seen.append(try object.map { [try $0.value(forKey: "id"), try $0.value(forKey: "v")] })
        }
        #expect(result.lastError == nil, "\(String(describing: result.lastError))")
        return seen
    }

    static func expected(values: [Int: String] = [:], gone: Set<Int> = []) -> [[SQLValue]?] {
        order.map { id in gone.contains(id) ? nil : [.integer(Int64(id)), .text(values[id] ?? "v\(id)")] }
    }

    /// The first position where two sweeps differ, for a message.
    static func firstDifference(_ a: [[SQLValue]?], _ b: [[SQLValue]?]) -> String {
        guard a.count == b.count else { return "\(a.count) rows against \(b.count)" }
        guard let i = a.indices.first(where: { a[$0] != b[$0] }) else { return "none" }
        return "position \(i): \(String(describing: a[i])) against \(String(describing: b[i]))"
    }

    @Test("an iteration streams the rest after reading four batches and reads what faults read; indexed reads, a loop that stops early and streamsSweeps = false fault every batch")
    func streamsWhatFaultsRead() throws {
        let (_, _, store) = try Self.open("sweep")
        let result = try store.fetchBatched(Self.request, residentBatches: 2)
        let swept = try Self.sweep(result)
        #expect(Self.firstDifference(swept, Self.expected()) == "none")
        let batches = Self.rows / Self.batch
        #expect(result.statistics.batchesFaulted == batches)
        #expect(result.statistics.batchesStreamed == batches - 5 && result.statistics.streamsStarted == 1, "\(result.statistics)")

        // Reading by index, as the browser does, is not an iteration: every batch is faulted.
        let indexed = try store.fetchBatched(Self.request, residentBatches: 2)
        var byIndex: [[SQLValue]?] = []
        for i in indexed.indices { byIndex.append(try indexed[i].map { [try $0.value(forKey: "id"), try $0.value(forKey: "v")] }) }
        #expect(Self.firstDifference(byIndex, swept) == "none")
        #expect(indexed.statistics.batchesStreamed == 0)

        // A loop that stops within four batches never starts a stream.
        let early = try store.fetchBatched(Self.request, residentBatches: 2)
        let found = early.first { ($0.flatMap { try? $0.value(forKey: "id") }) == .integer(Int64(Self.order[1_900])) }
        #expect(found != nil)
        #expect(early.statistics.batchesStreamed == 0 && early.statistics.streamsStarted == 0)

        // Sorted by text, descending: the stream's order is the fetch's.
        let byText = try store.fetchBatched(BatchStore.FetchRequest(entityName: "s", sortDescriptors: [SortDescriptor(key: "v", ascending: false)],
                                                                    fetchBatchSize: 1_000), residentBatches: 2)
        let texts = try byText.map { try $0?.value(forKey: "v").textValue ?? "" }
        let textOrder = Array((1...Self.rows).map { "v\($0)" }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.reversed())
        #expect(texts.count == textOrder.count && texts.indices.first { texts[$0] != textOrder[$0] } == nil)
        #expect(byText.statistics.batchesStreamed == Self.rows / 1_000 - 5)

        // With a limit and an offset the stream reads the same window.
        var window = Self.request
        window.fetchOffset = 1_234
        window.fetchLimit = 25_000
        let limited = try store.fetchBatched(window, residentBatches: 2)
        let limitedSweep = try Self.sweep(limited)
        #expect(Self.firstDifference(limitedSweep, Array(Self.expected()[1_234..<26_234])) == "none")
        #expect(limited.statistics.batchesStreamed == 50 - 5)

        // Off: every batch is faulted, the rows the same.
        store.streamsSweeps = false
        let off = try store.fetchBatched(Self.request, residentBatches: 2)
        #expect(Self.firstDifference(try Self.sweep(off), swept) == "none")
        #expect(off.statistics.batchesStreamed == 0)
    }

    @Test("rows changed between the fetch and the stream: a value changed in place streams as it is now; at a deleted, moved or inserted row the stream gives way to faults")
    func changesBeforeTheStream() throws {
        let (server, database, store) = try Self.open("sweepchanged")
        func psql(_ sql: String) throws { _ = try server.psql(sql, database: database) }
        let order = Self.order

        // In place at 10,000, a delete at 20,000: streamed up to the batch holding the deleted row.
        let first = try store.fetchBatched(Self.request, residentBatches: 2)
        try psql("UPDATE s SET v = 'changed' WHERE id = \(order[10_000]); DELETE FROM s WHERE id = \(order[20_000])")
        let swept = try Self.sweep(first)
        let expected = Self.expected(values: [order[10_000]: "changed"], gone: [order[20_000]])
        #expect(Self.firstDifference(swept, expected) == "none")
        #expect(first.statistics.batchesStreamed == 20_000 / Self.batch - 5, "\(first.statistics)")

        // A row moved in the order (its grp changed) and a row inserted where it sorts: each
        // result is swept beside the same fetch read by faults alone (a store with streamsSweeps
        // off), and must read the same; the stream gives way at the row that differs.
        let faultsOnly = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        faultsOnly.streamsSweeps = false
        faultsOnly.sweepStreamPause = Self.pause
        let rows = Self.rows - 1
        let ids = order.filter { $0 != order[20_000] }
        for (change, at) in [("UPDATE s SET grp = 1000 WHERE id = \(ids[15_000])", 15_000),
                             ("INSERT INTO s VALUES (100000, \((ids[12_000] * 7919) % 97), 'inserted')", 12_000)] {
            let streamed = try store.fetchBatched(Self.request, residentBatches: 2)
            let faulted = try faultsOnly.fetchBatched(Self.request, residentBatches: 2)
            #expect(streamed.count == rows && faulted.count == rows)
            try psql(change)
            let a = try Self.sweep(streamed), b = try Self.sweep(faulted)
            #expect(Self.firstDifference(a, b) == "none", "\(change)")
            #expect(a.compactMap { $0 }.count == rows, "\(change)")
            #expect(faulted.statistics.batchesStreamed == 0)
            // Streamed from batch 5 up to the batch where the row differs (the inserted row sorts
            // at the end of its group, at or after `at`).
            let streamedBatches = streamed.statistics.batchesStreamed
            #expect(streamedBatches >= at / Self.batch - 5 && streamedBatches < (rows + Self.batch - 1) / Self.batch - 5, "\(change): \(streamedBatches)")
        }
    }

    @Test("a sweep's stream stops for an edit through the result or the context, a merge, a pause; another session's commit during an unpaused sweep shows after a pause or with streamsSweeps off")
    func whatStopsAStream() throws {
        let (server, database, store) = try Self.open("sweepstops")
        let other = try server.session(database)
        defer { other.close() }
        let order = Self.order
        func value(_ object: ManagedObject??) throws -> String? { try object??.value(forKey: "v").textValue }

        // An edit through the context (not merged): the rest shows it.
        let context = PostgresContext(store: store)
        let viaContext = try context.fetchBatched(Self.request, residentBatches: 2, firstBatch: nil, progress: nil)
        var it = viaContext.makeIterator()
        for _ in 0..<5_000 { _ = it.next() }
        let streamedBefore = viaContext.statistics.batchesStreamed
        #expect(streamedBefore > 0)
        _ = try context.execute(BatchUpdateRequest(entityName: "s", predicate: try FetchPredicate("id == \(order[8_000])"),
                                                   propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'context'"), resultType: .count), undoable: false)
        for _ in 5_000..<8_000 { _ = it.next() }
        #expect(try value(it.next()) == "context")
        #expect(viaContext.statistics.batchesStreamed == streamedBefore, "no stream after the edit")

        // An edit through the result itself (its own session).
        let viaResult = try store.fetchBatched(Self.request, residentBatches: 2)
        var it2 = viaResult.makeIterator()
        for _ in 0..<5_000 { _ = it2.next() }
        #expect(viaResult.statistics.batchesStreamed > 0)
        _ = try viaResult.execute(BatchUpdateRequest(entityName: "s", predicate: try FetchPredicate("id == \(order[9_000])"),
                                                     propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'result'"), resultType: .count))
        for _ in 5_000..<9_000 { _ = it2.next() }
        #expect(try value(it2.next()) == "result")

        // A merge into the context drops the stream.
        let merged = try context.fetchBatched(Self.request, residentBatches: 2, firstBatch: nil, progress: nil)
        var it3 = merged.makeIterator()
        for _ in 0..<5_000 { _ = it3.next() }
        let streamedAtMerge = merged.statistics.batchesStreamed
        #expect(streamedAtMerge > 0)
        _ = try other.execute("UPDATE s SET v = 'merged' WHERE id = \(order[7_000])")
        context.merge(ChangeSet())
        for _ in 5_000..<7_000 { _ = it3.next() }
        #expect(try value(it3.next()) == "merged")
        #expect(merged.statistics.batchesStreamed == streamedAtMerge)

        // A pause of more than half a second: the rest is faulted, as it is now.
        store.sweepStreamPause = 0.5
        defer { store.sweepStreamPause = Self.pause }
        let paused = try store.fetchBatched(Self.request, residentBatches: 2)
        var it4 = paused.makeIterator()
        for _ in 0..<5_000 { _ = it4.next() }
        _ = try other.execute("UPDATE s SET v = 'paused' WHERE id = \(order[9_500])")
        Thread.sleep(forTimeInterval: 0.7)
        let streamedAtPause = paused.statistics.batchesStreamed
        for _ in 5_000..<9_500 { _ = it4.next() }
        #expect(try value(it4.next()) == "paused")
        #expect(paused.statistics.batchesStreamed == streamedAtPause)
        store.sweepStreamPause = Self.pause

        // A refreshed object reads its row as it is now, not from the stream.
        let refreshing = try context.fetchBatched(Self.request, residentBatches: 2, firstBatch: nil, progress: nil)
        // (Its ID read before the sweep: a read of the result's session would stop the stream.)
        let held = try context.existingObject(with: #require(try refreshing.objectID(at: 9_800)))
        var it6 = refreshing.makeIterator()
        for _ in 0..<5_000 { _ = it6.next() }
        #expect(refreshing.statistics.streamsStarted == 1)
        let streamedAtRefresh = refreshing.statistics.batchesStreamed
        _ = try other.execute("UPDATE s SET v = 'refreshed' WHERE id = \(order[9_800])")
        context.refresh(held, mergeChanges: false)
        for _ in 5_000..<9_800 { _ = it6.next() }
        let reached = try #require(it6.next() ?? nil)
        #expect(reached === held)
        #expect(try reached.value(forKey: "v") == .text("refreshed"))
        #expect(refreshing.statistics.batchesStreamed == streamedAtRefresh)

        // An edit through another context of the same store stops the stream too.
        let elsewhere = PostgresContext(store: store)
        let watched = try store.fetchBatched(Self.request, residentBatches: 2)
        var it7 = watched.makeIterator()
        for _ in 0..<5_000 { _ = it7.next() }
        #expect(watched.statistics.batchesStreamed > 0)
        _ = try elsewhere.execute(BatchUpdateRequest(entityName: "s", predicate: try FetchPredicate("id == \(order[9_900])"),
                                                     propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'elsewhere'"), resultType: .count), undoable: false)
        for _ in 5_000..<9_900 { _ = it7.next() }
        #expect(try value(it7.next()) == "elsewhere")

        // Another session's commit during a sweep that keeps going: the stream reads the rows as
        // its statement began (as one SELECT would), unless the sweep was slowed past half a
        // second; with streamsSweeps off, every batch is read as it is when faulted.
        for streams in [true, false] {
            store.streamsSweeps = streams
            let running = try store.fetchBatched(Self.request, residentBatches: 2)
            var it5 = running.makeIterator()
            for _ in 0..<5_000 { _ = it5.next() }
            let streamedAtCommit = running.statistics.batchesStreamed
            _ = try other.execute("UPDATE s SET v = 'during \(streams)' WHERE id = \(order[12_000])")
            for _ in 5_000..<12_000 { _ = it5.next() }
            let seen = try value(it5.next())
            if streams && running.statistics.batchesStreamed > streamedAtCommit + 10 {
                #expect(seen == "v\(order[12_000])", "the stream's snapshot")
            } else {
                #expect(seen == "during \(streams)")
            }
            if !streams { #expect(running.statistics.batchesStreamed == 0) }
        }
    }

    @Test("a loop that stops after its stream started leaves no statement or connection behind once the result goes")
    func earlyExitEndsTheStream() throws {
        let (server, database, store) = try Self.open("sweepexit")
        func connections() throws -> Int {
            Int(try server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'faultline'", database: "postgres")) ?? -1
        }
        func settle(at expected: Int) throws -> Int {
            var now = try connections()
            let deadline = Date().addingTimeInterval(15)
            while now != expected && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                now = try connections()
            }
            return now
        }
        let before = try connections()
        do {
            let result = try store.fetchBatched(Self.request, residentBatches: 2)
            var it = result.makeIterator()
            for _ in 0..<6_000 { _ = it.next() }
            #expect(result.statistics.batchesStreamed > 0)
            #expect(try connections() == before + 2, "the result's session and the stream's")
        }
        #expect(try settle(at: before) == before, "the result gone, its stream's connection goes")

        // A stream left alone while its result lives ends itself once its buffer has waited a
        // pause; the sweep then goes on by faults.
        store.sweepStreamPause = 0.5
        let kept = try store.fetchBatched(Self.request, residentBatches: 2)
        var it = kept.makeIterator()
        for _ in 0..<6_000 { _ = it.next() }
        #expect(kept.statistics.streamsStarted == 1)
        #expect(try settle(at: before + 1) == before + 1, "the result's session alone")
        var rest = 6_000
        while it.next() != nil { rest += 1 }
        #expect(rest == Self.rows && kept.lastError == nil)
    }

    @Test("a composite key of text and integer (an ID table numbered, not packed), the key not the first column, a [c] predicate: streamed as faults read them")
    func otherKeys() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("sweepkeys", sql: """
            CREATE TABLE c (v text NOT NULL, b int, a text, n float8, PRIMARY KEY (a, b));
            INSERT INTO c SELECT 'V' || (g % 1000), g % 7, 'k' || g, CASE WHEN g % 11 = 0 THEN NULL ELSE g / 3.0 END FROM generate_series(1, 25000) g;
            ANALYZE c;
            """)
        let url = server.url(database: database)
        let streaming = try PostgresStore(url: url, environment: noPasswordFile)
        streaming.sweepStreamPause = Self.pause
        let faulting = try PostgresStore(url: url, environment: noPasswordFile)
        faulting.streamsSweeps = false
        let request = BatchStore.FetchRequest(entityName: "c", predicate: try FetchPredicate("v BEGINSWITH[c] 'v'"),
                                              sortDescriptors: [SortDescriptor(key: "v"), SortDescriptor(key: "n", ascending: false)], fetchBatchSize: 400)
        func rows(_ store: PostgresStore) throws -> ([[SQLValue]?], BatchStatistics) {
            let result = try store.fetchBatched(request, residentBatches: 2)
            var seen: [[SQLValue]?] = []
            for object in result { seen.append(try object.map { o in try ["a", "b", "v", "n"].map { try o.value(forKey: $0) } }) }
            #expect(result.lastError == nil)
            return (seen, result.statistics)
        }
        let (streamed, statistics) = try rows(streaming)
        let (faulted, _) = try rows(faulting)
        #expect(streamed.count == 25_000)
        #expect(Self.firstDifference(streamed, faulted) == "none")
        #expect(statistics.idStorage.contains("numbered"), "\(statistics.idStorage)")
        #expect(statistics.batchesStreamed == (25_000 + 399) / 400 - 5, "\(statistics)")
    }
}

/// The keys a sweep checks its streamed rows against come as one `int8[]` text cell a run of
/// positions; its reader must take every integer PostgreSQL prints and refuse anything else (a
/// refused cell only sends the sweep back to faults; a misread one would pass a wrong row).
@Suite("An int8[]'s text is read exactly or not at all", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct ArrayTextTests {
    @Test("integers at the edges of Int64, in order; anything else refused")
    func integers() {
        #expect(PostgresArrayText.integers("{}") == [])
        #expect(PostgresArrayText.integers("{7}") == [7])
        #expect(PostgresArrayText.integers("{7,3,-1,0,42}") == [7, 3, -1, 0, 42])
        #expect(PostgresArrayText.integers("{9223372036854775807,-9223372036854775808}") == [Int64.max, Int64.min])
        for bad in ["", "{", "}", "7", "{7", "7}", "{,}", "{7,}", "{,7}", "{7,,3}", "{-}", "{--7}", "{7 ,3}", "{ 7}", "{NULL}",
                    "{7,NULL}", "{\"7\"}", "{1.5}", "{9223372036854775808}", "{-9223372036854775809}", "{99999999999999999999}", "{{1,2}}", "{1e3}"] {
            #expect(PostgresArrayText.integers(bad) == nil, "\(bad.debugDescription)")
        }
        // Random lists (a fixed seed) read back as written.
        var g = SplitMix64(seed: 15)
        for _ in 0..<200 {
            let values = (0..<Int.random(in: 1...50, using: &g)).map { _ in Int64.random(in: Int64.min...Int64.max, using: &g) }
            #expect(PostgresArrayText.integers("{" + values.map(String.init).joined(separator: ",") + "}") == values)
        }
    }
}
