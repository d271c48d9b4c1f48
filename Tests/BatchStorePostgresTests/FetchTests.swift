import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// `BatchFaultingCollection` over PostgreSQL: the ID fetch into a temp table of the result's own
/// session, faults by position range, rows deleted between fetch and fault, refresh with anchors,
/// search in place, membership, and the keys a table can have (primary key, composite, `ctid`, none).
@Suite("PostgreSQL batched fetches", .tags(.postgres), .timeLimit(slowTestLimit))
struct FetchTests {
    static let rows = 5_000

    /// `movie` with `rows` rows: a score no index serves, a title, a year with NULLs; `director`
    /// for a to-one key path; `pairs` with a composite key; `heap` with no key; `recent`, a view.
    static func store(_ server: PostgresServer) throws -> (PostgresStore, String) {
        let database = try server.makeDatabase("fetch", sql: """
            CREATE TABLE director (id int PRIMARY KEY, name text);
            INSERT INTO director SELECT g, 'director ' || g FROM generate_series(1, 50) g;
            CREATE TABLE movie (id bigint PRIMARY KEY, title text NOT NULL, score int, year smallint,
                                director_id int REFERENCES director, price numeric(8,2));
            INSERT INTO movie SELECT g, 'title ' || g, (g * 7919) % 1000, CASE WHEN g % 10 = 0 THEN NULL ELSE 1900 + g % 120 END,
                                     1 + g % 50, g / 100.0 FROM generate_series(1, \(rows)) g;
            CREATE TABLE pairs (a int, b text, v int, PRIMARY KEY (a, b));
            INSERT INTO pairs SELECT g % 7, 'b' || g, g FROM generate_series(1, 300) g;
            CREATE TABLE heap (v int, w text);
            INSERT INTO heap SELECT g, 'w' || g FROM generate_series(1, 300) g;
            CREATE VIEW recent AS SELECT id, title FROM movie WHERE year >= 2000;
            """)
        return (try PostgresStore(url: server.url(database: database), environment: noPasswordFile), database)
    }

    static func ints(_ result: BatchFaultingCollection, _ key: String) throws -> [Int64?] {
        try result.map { try $0?.value(forKey: key).integerValue }
    }

    @Test("reversesOrder with a limit gives the forward order's last rows, last first: NULLs, ties broken by key, a composite key, a filter, no sort (what G reads while the IDs load)")
    func reversedTail() throws {
        let server = try PostgresServer.require()
        let (store, _) = try Self.store(server)
        let context = PostgresContext(store: store)
        for (table, sort, filter) in [("movie", "year", ""), ("movie", "score desc, year", "year != nil"), ("movie", "", ""), ("pairs", "a", ""), ("pairs", "", "v > 10")] {
            let request = FetchRequest(entityName: table, predicate: filter.isEmpty ? nil : try FetchPredicate(format: filter),
                                       sortDescriptors: sort.isEmpty ? [] : try SortDescriptor.parse(sort), fetchBatchSize: 500)
            let all = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
            let forward = try (0..<all.count).compactMap { try all.objectID(at: $0) }
            var reversed = request
            reversed.reversesOrder = true
            reversed.fetchLimit = 19
            let tail = try context.fetchBatched(reversed, residentBatches: 2, firstBatch: nil, progress: nil)
            let last = try (0..<tail.count).compactMap { try tail.objectID(at: $0) }.reversed()
            #expect(Array(last) == Array(forward.suffix(19)), "\(table) sort \(sort) filter \(filter)")
        }
    }

    @Test("sorted by an unindexed column: the server's order, faulted a batch at a time, memory bounded")
    func sortedFetch() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        let request = BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "score"), SortDescriptor(key: "title", ascending: false)],
                                              fetchBatchSize: 100)
        let result = try store.fetchBatched(request, residentBatches: 4)
        #expect(result.count == Self.rows)
        #expect(result.statistics.batchesFaulted == 0)
        #expect(result.statistics.idStorage.hasPrefix("PostgreSQL temp table"))
        let expected = try server.psql("SELECT id FROM movie ORDER BY score, title COLLATE \"C\" DESC, id", database: database)
            .split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        #expect(expected.count == Self.rows)
        // Touching one row faults its batch only.
        #expect(try result[4_321]?.value(forKey: "id").integerValue == expected[4_321])
        #expect(result.statistics.batchesFaulted == 1)
        var peakResident = 0
        var ids: [Int64] = []
        for object in result {
            ids.append(try #require(object?.value(forKey: "id").integerValue))
            peakResident = max(peakResident, result.statistics.batchesResident)
        }
        #expect(ids == expected)
        #expect(peakResident <= 4)
        #expect(result.statistics.batchesFaulted == 1 + Self.rows / 100)
        // Values read as their kinds: numeric as the server writes it.
        let first = try #require(result[0])
        #expect(try first.value(forKey: "price").textValue != nil)
        #expect(first.managedObjectContext == nil)
    }

    @Test("a predicate with a key path through a to-one relationship, with limit and offset")
    func predicateLimitOffset() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        var request = BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("director.name ENDSWITH '7' AND year != nil AND score < 500"),
                                              sortDescriptors: [SortDescriptor(key: "year", ascending: false)], fetchLimit: 40, fetchOffset: 5)
        request.fetchBatchSize = 16
        let result = try store.fetchBatched(request)
        let expected = try server.psql("""
            SELECT m.id FROM movie m JOIN director d ON d.id = m.director_id WHERE d.name LIKE '%7' AND m.year IS NOT NULL AND m.score < 500
            ORDER BY m.year DESC, m.id LIMIT 40 OFFSET 5
            """, database: database).split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        #expect(expected.count == 40)
        #expect(try Self.ints(result, "id") == expected)
    }

    @Test("batch faults run as statements prepared on the result's session: one whose table's column changed type since reads the rows at once (sent again unprepared); a server error in one is the server's one line")
    func preparedFaults() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("prepared", sql: """
            CREATE TABLE p (id int PRIMARY KEY, v int, w text);
            INSERT INTO p SELECT g, g * 10, 'w' || g FROM generate_series(1, 1000) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "p", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 50))
        // Prepared at the first fault, then used by each.
        #expect(try result.object(at: 100)?.value(forKey: "v") == .integer(1010))
        #expect(try result.object(at: 200)?.value(forKey: "w") == .text("w201"))
        // Another session changes v's type (and rewrites the table: every row has moved).
        _ = try server.psql("ALTER TABLE p ALTER COLUMN v TYPE bigint", database: database)
        #expect(try result.object(at: 300)?.value(forKey: "v") == .integer(3010))
        #expect(try result.object(at: 400)?.value(forKey: "v") == .integer(4010))
        #expect(result.lastError == nil)
        // A server error in a prepared fault: its SQLSTATE's code and the server's words (the older
        // postgres-nio API it goes through wraps errors in another type).
        _ = try server.psql("DROP TABLE p", database: database)
        #expect {
            _ = try result.object(at: 500)
        } throws: { error in
            guard let error = error as? BatchStoreError else { return false }
            return error.code == .noSuchEntity && error.message.contains("does not exist") && !error.message.contains("\n")
        }
    }

    @Test("faults over a packed ID table keep the prepared statement's generic plan (the server does not plan each one again), and read the same rows")
    func faultsKeepGenericPlan() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("genericplan", sql: """
            CREATE TABLE g (id bigint PRIMARY KEY, v int, w text);
            INSERT INTO g SELECT n, (n * 7919) % 100000, 'w' || n FROM generate_series(1, 100000) n;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "g", sortDescriptors: [SortDescriptor(key: "v")], fetchBatchSize: 100))
        #expect(result.statistics.idStorage.contains("by tuple"))
        #expect(try result.postgresFaultPlans() == nil)
        // v = (n * 7919) % 100000 is a permutation of 0..<100000 (7919 is prime to 100000), so
        // position p holds v == p. 24 batches at scattered places, each once, from the end
        // backwards (no batch follows the one before: none is read ahead). With no statistics
        // the planner guesses a range of two unknown bounds at 0.5% of the ID table (500 rows
        // here), enough to keep custom plans for a range; fewer rows would not tell.
        var g = SplitMix64(seed: 7)
        for i in 0..<24 {
            let position = (999 - i * 40 - Int(g.next() % 40)) * 100 + Int(g.next() % 100)
            #expect(try result.object(at: position)?.value(forKey: "v") == .integer(Int64(position)))
        }
        let plans = try #require(try result.postgresFaultPlans())
        #expect(plans.generic + plans.custom == 24)
        // PostgreSQL tries five custom plans before it compares them with the generic one.
        #expect(plans.custom <= 5, "custom plans: \(plans.custom), generic: \(plans.generic)")
        #expect(result.lastError == nil)
    }

    @Test("a sweep whose faults turn from records to rows partway (a domain's first non-NULL value) reads every row: with the next batch read ahead as records, and on the fault that starts the stream, which still streams the rest")
    func recordsToRowsInASweep() throws {
        let server = try PostgresServer.require()
        // A record's NULL field has no type to refuse: the first non-NULL domain value, at
        // position 2,500 in one table and 4,500 in the other, sends the faults back to rows.
        let database = try server.makeDatabase("recordsweep", sql: """
            CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
            CREATE TABLE early (id bigint PRIMARY KEY, p positive, v text);
            INSERT INTO early SELECT g, CASE WHEN g > 2500 THEN g END, 'v' || g FROM generate_series(1, 30000) g;
            CREATE TABLE late (id bigint PRIMARY KEY, p positive, v text);
            INSERT INTO late SELECT g, CASE WHEN g > 4500 THEN g END, 'v' || g FROM generate_series(1, 30000) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        for table in ["early", "late"] {
            let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: table, sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 1_000),
                                                residentBatches: 2)
            var seen: [[SQLValue]] = []
            for object in result {
                let object = try #require(object)
                seen.append(try ["id", "p", "v"].map { try object.value(forKey: $0) })
            }
            let threshold = table == "early" ? 2500 : 4500
            let expected: [[SQLValue]] = (1...30000).map { [.integer(Int64($0)), $0 > threshold ? .integer(Int64($0)) : .null, .text("v\($0)")] }
            #expect(seen == expected, "\(table): first difference at \(String(describing: seen.indices.first { $0 >= expected.count || seen[$0] != expected[$0] }))")
            #expect(result.postgresFaultsAsRecords == false, "\(table)")
            #expect(result.statistics.streamsStarted == 1 && result.statistics.batchesStreamed == 25, "\(table): \(result.statistics)")
            #expect(result.lastError == nil)
        }
    }

    @Test("every kind of column a prepared fault reads (binary cells its description calls text) equals the same row read by a plain statement")
    func preparedFaultKinds() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("preparedkinds", sql: """
            CREATE TYPE mood AS ENUM ('sad', 'happy');
            CREATE TABLE k (id bigint PRIMARY KEY, s smallint, i integer, r real, d double precision, n numeric(12,2), dt date,
                            ts timestamp, tz timestamptz, tm time, js json, jb jsonb, u uuid, b bytea, ok boolean, tags text[],
                            nums integer[], m mood, c char(3), v varchar(20), span interval, o oid, t text);
            INSERT INTO k SELECT g, g % 300, g * 7, g / 4.0, g / 3.0, g / 8.0, DATE '2000-01-01' + g, TIMESTAMP '2000-01-01' + g * INTERVAL '1 hour',
                                 TIMESTAMPTZ '2000-01-01 00:00+00' + g * INTERVAL '1 minute', TIME '00:00' + g * INTERVAL '1 second',
                                 json_build_object('g', g), jsonb_build_object('g', g, 's', 'x' || g), md5(g::text)::uuid,
                                 decode(lpad(to_hex(g), 8, '0'), 'hex'), g % 2 = 0, ARRAY['a' || g, NULL], ARRAY[g, -g],
                                 CASE WHEN g % 2 = 0 THEN 'happy' ELSE 'sad' END::mood, 'c' || (g % 10), 'v' || g, g * INTERVAL '1 day', g,
                                 CASE WHEN g % 5 = 0 THEN NULL ELSE 'é ' || g END
                           FROM generate_series(1, 120) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let table = try store.table(named: "k")
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "k", sortDescriptors: [SortDescriptor(key: "id", ascending: false)], fetchBatchSize: 16))
        let session = try store.openSession()
        defer { session.close() }
        let plain = try session.query("SELECT \(table.columns.map { $0.selectExpression() }.joined(separator: ", ")) FROM k AS t ORDER BY id DESC")
        #expect(plain.count == 120)
        // Positions past the first batch are faulted (prepared); each twice (prepared from the second on).
        for position in Array(16..<120) + Array(16..<40) {
            let object = try #require(try result.object(at: position))
            let values = try table.columns.indices.map { try object.value(at: $0) }
            #expect(values == plain[position], "position \(position)")
        }
        #expect(result.statistics.batchesFaulted >= 7)
        #expect(result.postgresFaultsAsRecords == true, "every kind read from a record array")
        #expect(result.lastError == nil)
    }

    @Test("faults whose rows cannot come as one record array (a domain's field, which a record names by the domain) read them as rows, from the first on, with the same values; so do faults after an array over 4 MB, and a store told not to")
    func faultsAsRowsWhenRecordsCannot() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("recordsfallback", sql: """
            CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
            CREATE DOMAIN label AS text;
            CREATE TABLE d (id bigint PRIMARY KEY, p positive, l label, v int);
            INSERT INTO d SELECT g, g, 'l' || g, g * 3 FROM generate_series(1, 300) g;
            CREATE TABLE plain (id bigint PRIMARY KEY, v int);
            INSERT INTO plain SELECT g, g * 3 FROM generate_series(1, 300) g;
            CREATE TABLE wide (id bigint PRIMARY KEY, t text);
            INSERT INTO wide SELECT g, repeat(chr(65 + g % 26), 100000) FROM generate_series(1, 200) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "d", sortDescriptors: [SortDescriptor(key: "id", ascending: false)], fetchBatchSize: 20))
        #expect(result.postgresFaultsAsRecords == true)
        for position in stride(from: 280, through: 20, by: -20) + [299, 0] {
            let object = try #require(try result.object(at: position))
            let id = 300 - position
            #expect(try [object.value(forKey: "id"), object.value(forKey: "p"), object.value(forKey: "l"), object.value(forKey: "v")]
                    == [.integer(Int64(id)), .integer(Int64(id)), .text("l\(id)"), .integer(Int64(id * 3))], "position \(position)")
        }
        #expect(result.postgresFaultsAsRecords == false, "the domain's fields sent it back to rows")
        #expect(result.lastError == nil)
        // A table of plain types keeps records; a store told not to reads rows.
        let plain = try store.fetchBatched(BatchStore.FetchRequest(entityName: "plain", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 20))
        #expect(try plain.object(at: 150)?.value(forKey: "v") == .integer(453))
        #expect(plain.postgresFaultsAsRecords == true)
        // Rows of 100 kB: a batch of 50 is a 5 MB array, over the 4 MB after which faults read rows.
        let wide = try store.fetchBatched(BatchStore.FetchRequest(entityName: "wide", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 50))
        #expect(try wide.object(at: 60)?.value(forKey: "t") == .text(String(repeating: "J", count: 100000)))
        #expect(wide.postgresFaultsAsRecords == false)
        #expect(try wide.object(at: 160)?.value(forKey: "t") == .text(String(repeating: "F", count: 100000)))
        store.faultsAsRecords = false
        let rows = try store.fetchBatched(BatchStore.FetchRequest(entityName: "plain", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 20))
        #expect(rows.postgresFaultsAsRecords == false)
        #expect(try rows.object(at: 150)?.value(forKey: "v") == .integer(453))
    }

    @Test("a row deleted between fetch and fault is nil; refresh keeps the anchor's row in view")
    func deletedAndRefreshed() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 50))
        let id300 = try #require(try result.objectID(at: 299))
        _ = try server.psql("DELETE FROM movie WHERE id IN (10, 11, 12)", database: database)
        #expect(result[9] == nil)
        #expect(result[12] != nil)
        #expect(result.lastError == nil)
        #expect(result.count == Self.rows)
        _ = try server.psql("DELETE FROM movie WHERE id <= 100", database: database)
        let anchored = try result.refresh(keeping: [299])
        #expect(result.count == Self.rows - 100)
        #expect(anchored == 199)
        #expect(try result.objectID(at: 199) == id300)
        #expect(try result[199]?.value(forKey: "id").integerValue == 300)
        #expect(try result.members(of: [id300]) == [id300])
    }

    @Test("a fault reads each row where the fetch found it, checked by key: a row updated since (moved) reads with its new values; a row deleted whose tuple another row took reads as gone, never as that row; a text key too")
    func rowsFoundByPlace() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("place", sql: """
            CREATE TABLE small (id int PRIMARY KEY, v text);
            INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, 100) g;
            CREATE TABLE named (k text PRIMARY KEY, v int);
            INSERT INTO named SELECT 'k' || lpad(g::text, 3, '0'), g FROM generate_series(1, 100) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "small", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 10))
        // The fault's SQL reads by place (and falls back on the key).
        let fault = try result.statements(faultingBatchAt: 0).batchFault
        #expect(fault.contains("t.ctid = ids.loc_tid"), "\(fault)")
        let place10 = try psql("SELECT ctid FROM small WHERE id = 10"), place20 = try psql("SELECT ctid FROM small WHERE id = 20")
        _ = try psql("UPDATE small SET v = 'moved' WHERE id = 10")
        #expect(try psql("SELECT ctid FROM small WHERE id = 10") != place10, "the update moved the row")
        _ = try psql("DELETE FROM small WHERE id = 20")
        _ = try psql("VACUUM small")
        _ = try psql("INSERT INTO small VALUES (1000, 'intruder')")
        let intruderPlace = try psql("SELECT ctid FROM small WHERE id = 1000")
        #expect(intruderPlace == place20, "the intruder took the deleted row's tuple (\(intruderPlace), \(place20)): what this test is about")
        #expect(try result[9]?.value(forKey: "v") == .text("moved"))
        #expect(try result[9]?.value(forKey: "id") == .integer(10))
        #expect(result[19] == nil, "\(String(describing: result[19]))")
        #expect(try result[20]?.value(forKey: "v") == .text("v21"))
        #expect(result.lastError == nil)
        let values = try result.compactMap { try $0?.value(forKey: "v").textValue }
        #expect(values.count == 99 && !values.contains("intruder") && values.contains("moved"))

        // A sweep sends the next batch ahead; an edit through the result in between (a statement
        // sent after it, in the same session) makes the batch sent ahead stale: it is read again.
        let sweep = try store.fetchBatched(BatchStore.FetchRequest(entityName: "small", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 10))
        #expect(try sweep[0]?.value(forKey: "id") == .integer(1))
        #expect(try sweep[10]?.value(forKey: "id") == .integer(11))   // batch 2 (rows 21–30) is sent now
        let edit = BatchUpdateRequest(entityName: "small", predicate: try FetchPredicate("id == 25"),
                                      propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'edited'"), resultType: .count)
        #expect(try sweep.execute(edit).count == 1)
        #expect(try sweep[23]?.value(forKey: "v") == .text("edited"))
        #expect(try sweep[24]?.value(forKey: "v") == .text("v26"))
        // A sweep through the rest reads every row (batches read ahead on the way).
        #expect(try sweep.compactMap { try $0?.value(forKey: "v").textValue }.count == 100)

        // Changes the result's session does not see: an edit through a context's own session, then
        // its merge; another session's update, then refreshAllObjects; another session's update
        // and a pause. Each time the batch read ahead is not used.
        let context = PostgresContext(store: store)
        let viaContext = try context.fetchBatched(BatchStore.FetchRequest(entityName: "small", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 10),
                                                  residentBatches: 4, firstBatch: nil, progress: nil)
        func readAhead(_ first: Int) throws {
            _ = viaContext[first]
            _ = viaContext[first + 10]   // the batch after this one is sent ahead
        }
        try readAhead(30)
        let changed = try context.execute(BatchUpdateRequest(entityName: "small", predicate: try FetchPredicate("id == 55"),
                                                             propertiesToUpdate: try UpdateExpression.parseAssignments("v = 'merged'"), resultType: .objectIDs), undoable: false)
        context.merge(ChangeSet(updated: changed.objectIDs ?? []))
        #expect(try viaContext[53]?.value(forKey: "v") == .text("merged"))   // id 55 (id 20 is gone)
        try readAhead(60)
        _ = try psql("UPDATE small SET v = 'refreshed' WHERE id = 85")
        context.refreshAllObjects()
        #expect(try viaContext[83]?.value(forKey: "v") == .text("refreshed"))
        try readAhead(0)
        _ = try psql("UPDATE small SET v = 'later' WHERE id = 25")
        usleep(700_000)
        #expect(try viaContext[23]?.value(forKey: "v") == .text("later"), "a batch read ahead half a second before is not used")

        // A text key (a numbered ID table) is found by place too.
        let named = try store.fetchBatched(BatchStore.FetchRequest(entityName: "named", sortDescriptors: [SortDescriptor(key: "v", ascending: false)], fetchBatchSize: 10))
        _ = try psql("UPDATE named SET v = v + 1000 WHERE k = 'k050'")
        #expect(try named[50]?.value(forKey: "v") == .integer(1050))
        #expect(try named.compactMap { try $0?.value(forKey: "v").integerValue }.count == 100)
    }

    @Test("search in place finds the next and previous matching positions")
    func searchInPlace() throws {
        let server = try PostgresServer.require()
        let (store, _) = try Self.store(server)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "id")]))
        let predicate = try FetchPredicate("title ENDSWITH '77'")
        #expect(try result.firstPosition(matching: predicate, after: 100, backwards: false, progress: nil) == 176)
        #expect(try result.firstPosition(matching: predicate, after: 176, backwards: true, progress: nil) == 76)
        #expect(try result.firstPosition(matching: try FetchPredicate("title == 'none'"), after: 0, backwards: false, progress: nil) == nil)
        // An empty result: nothing to search, either way, from any position.
        let empty = try store.fetchBatched(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("id < 0"), sortDescriptors: [SortDescriptor(key: "id")]))
        #expect(empty.count == 0)
        for (after, backwards) in [(0, false), (-1, false), (0, true), (5, true)] {
            #expect(try empty.firstPosition(matching: predicate, after: after, backwards: backwards, progress: nil) == nil)
        }
    }

    /// An integer key is addressed by its place in the heap (TID ranges, searched in growing
    /// windows); a text key by a numbered, indexed `pos`. Both must give the same rows at every
    /// position, across page boundaries, and the same search answers, near and far.
    /// A primary key does not bind a table's inheritance children: a child's NULL key column makes
    /// its rows shorter, pages of the ID table hold different numbers of them (twenty short rows
    /// together make room for more on their page), and the tuple
    /// arithmetic would show rows one place off. The layout check sees it and numbers them instead.
    @Test("uneven ID rows (a NULL key in an inheritance child) are numbered, not packed, and every position holds its row")
    func unevenRowsAreNumbered() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("uneven", sql: """
            CREATE TABLE par (a bigint, b bigint, PRIMARY KEY (a, b));
            CREATE TABLE chi () INHERITS (par);
            ALTER TABLE chi ALTER b DROP NOT NULL;
            INSERT INTO par SELECT g, 0 FROM generate_series(0, 607) g WHERE NOT (g IN (10, 20) OR g BETWEEN 380 AND 399);
            INSERT INTO chi SELECT g, NULL FROM generate_series(0, 607) g WHERE g IN (10, 20) OR g BETWEEN 380 AND 399;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "par", sortDescriptors: [SortDescriptor(key: "a")], fetchBatchSize: 50))
        #expect(result.count == 608)
        #expect(result.statistics.idStorage.hasSuffix("(numbered)"), "\(result.statistics.idStorage)")
        // The rows with a NULL key cannot be looked up by it (a key lookup is `=`, which a NULL
        // never satisfies): they read as gone. Every other position holds its own row.
        let nullKeys = Set([10, 20] + Array(380...399))
        #expect(try Self.ints(result, "a") == (0..<608).map { nullKeys.contains($0) ? nil : Int64($0) })
    }

    @Test("an integer key (packed ID table) and a text key (numbered) give the same rows and the same searches, near and far")
    func packedAndNumbered() throws {
        let server = try PostgresServer.require()
        // Past the first 20,000 positions a search reads the matches once (the far query).
        let rows = 60_000
        let hits = [3, 4_100, 9_000, 19_999, 20_500, 41_000, 59_999]
        let database = try server.makeDatabase("layout", sql: """
            CREATE TABLE wide (id bigint PRIMARY KEY, score int, tag text);
            INSERT INTO wide SELECT g, (g * 7919) % 997, CASE WHEN g IN (\(hits.map { String($0 + 1) }.joined(separator: ", "))) THEN 'hit' END
                FROM generate_series(1, \(rows)) g;
            CREATE TABLE wide_text AS SELECT lpad(id::text, 6, '0') AS id, score, tag FROM wide;
            ALTER TABLE wide_text ADD PRIMARY KEY (id);
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let byID = try store.fetchBatched(BatchStore.FetchRequest(entityName: "wide", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 100))
        let byText = try store.fetchBatched(BatchStore.FetchRequest(entityName: "wide_text", sortDescriptors: [SortDescriptor(key: "id")], fetchBatchSize: 100))
        #expect(byID.count == rows && byText.count == rows)
        // A bigint key and the row's place (ctid): 185 ID rows a page.
        #expect(byID.statistics.idStorage.hasSuffix("(by tuple, 185 a page)"), "\(byID.statistics.idStorage)")
        #expect(byText.statistics.idStorage.hasSuffix("(numbered)"), "\(byText.statistics.idStorage)")
        // A search with no match goes through every window; a cancel between two of them stops it.
        var calls = 0
        let stopped = #expect(throws: BatchStoreError.self) {
            try byID.firstPosition(matching: try FetchPredicate("tag == 'none'"), after: 0, backwards: false, progress: { _ in
                calls += 1
                return calls >= 2 ? .cancel : .proceed
            })
        }
        #expect(stopped?.code == .cancelled)
        let hit = try FetchPredicate("tag == 'hit'")
        for result in [byID, byText] {
            // Forward from before each hit, and backward from after it: the next window only
            // answers when the near ones find nothing.
            var answers: [Int?] = []
            var position = -1
            repeat {
                let next = try result.firstPosition(matching: hit, after: position, backwards: false, progress: nil)
                answers.append(next)
                position = next.map { $0 > position ? $0 : rows } ?? rows
            } while position < rows
            #expect(answers == hits.map { Optional($0) } + [nil])
            answers = []
            position = rows
            repeat {
                let previous = try result.firstPosition(matching: hit, after: position, backwards: true, progress: nil)
                answers.append(previous)
                position = previous.map { $0 < position ? $0 : -1 } ?? -1
            } while position >= 0
            #expect(answers == hits.reversed().map { Optional($0) } + [nil])
            let cancelled = #expect(throws: BatchStoreError.self) {
                try result.firstPosition(matching: hit, after: 4_099, backwards: false, progress: { _ in .cancel })
            }
            #expect(cancelled?.code == .cancelled)
        }
        // Sorted by an unindexed column with ties: the same key at every position, read across
        // page boundaries (a heap page holds 226 bigint keys), and single rows at the edges.
        let sorted = [SortDescriptor(key: "score", ascending: false)]
        let a = try store.fetchBatched(BatchStore.FetchRequest(entityName: "wide", sortDescriptors: sorted, fetchBatchSize: 113))
        let b = try store.fetchBatched(BatchStore.FetchRequest(entityName: "wide_text", sortDescriptors: sorted, fetchBatchSize: 77))
        let expected = try server.psql("SELECT id FROM wide ORDER BY score DESC, id", database: database)
            .split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        #expect(expected.count == rows)
        #expect(try a.map { try $0?.value(forKey: "id").integerValue } == expected)
        #expect(b.map { $0.flatMap { try? $0.value(forKey: "id").textValue }.flatMap { Int64($0) } } == expected)
        for position in [0, 225, 226, 227, 451, 452, rows - 1] {
            #expect(try a.object(at: position)?.value(forKey: "id").integerValue == expected[position])
            #expect(try a.objectID(at: position) == a[position]?.objectID)
        }
    }

    @Test("composite keys, ctid for a table without a key (read-only), and a view without one")
    func keys() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        let pairs = try store.fetchBatched(BatchStore.FetchRequest(entityName: "pairs", predicate: try FetchPredicate("a == 3"), sortDescriptors: [SortDescriptor(key: "v", ascending: false)]))
        #expect(pairs.count == 43)
        let id = try #require(try pairs.objectID(at: 0))
        #expect(id.uriRepresentation.hasSuffix("/pairs/ki3,tb297"))
        #expect(try pairs.members(of: [id]) == [id])

        let heap = try store.fetchBatched(BatchStore.FetchRequest(entityName: "heap", predicate: try FetchPredicate("v > 290")))
        #expect(try Self.ints(heap, "v") == Array(291...300).map { Int64($0) })
        #expect(heap.entity.isReadOnly)
        let key = try server.psql("SELECT tableoid::int8, ctid FROM heap WHERE v = 291", database: database).split(separator: "|")
        #expect(try heap.objectID(at: 0)?.keyValues == [.integer(Int64(key[0]) ?? -1), .text(String(key[1]))])

        let recent = try store.fetchBatched(BatchStore.FetchRequest(entityName: "recent", sortDescriptors: [SortDescriptor(key: "id")]))
        let titles = try server.psql("SELECT title FROM recent ORDER BY id", database: database).split(separator: "\n").map { SQLValue.text(String($0)) }
        #expect(recent.count == titles.count)
        #expect(try recent.map { try $0?.value(forKey: "title") } == titles)
        #expect(try recent.objectID(at: 0)?.isAddressable == false)
    }

    @Test("a table without a key whose rows are also in inheritance children: each row once (ctid with the table's OID)")
    func inheritance() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("inherit", sql: """
            CREATE TABLE par (v int); CREATE TABLE chi () INHERITS (par);
            INSERT INTO par VALUES (1), (2); INSERT INTO chi VALUES (10), (20);
            CREATE TABLE flags (id int, on_ boolean, PRIMARY KEY (id, on_));
            INSERT INTO flags SELECT g / 2, g % 2 = 0 FROM generate_series(1, 40) g;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let par = try store.fetchBatched(BatchStore.FetchRequest(entityName: "par", sortDescriptors: [SortDescriptor(key: "v")]))
        #expect(try Self.ints(par, "v") == [1, 2, 10, 20])
        #expect(try par.members(of: [try #require(try par.objectID(at: 2))]).count == 1)
        // A boolean in a composite key: refresh finds the anchor again, membership works.
        let flags = try store.fetchBatched(BatchStore.FetchRequest(entityName: "flags", sortDescriptors: [SortDescriptor(key: "id", ascending: false)]))
        let id = try #require(try flags.objectID(at: 5))
        _ = try server.psql("DELETE FROM flags WHERE id = 20", database: database)
        #expect(try flags.refresh(keeping: [5]) == 4)
        #expect(try flags.objectID(at: 4) == id)
        #expect(try flags.members(of: [id]) == [id])
    }

    @Test("a text key breaks ties by code point whatever the column's collation, as SQLite orders it")
    func textKeyOrder() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("textkey", sql: """
            CREATE TABLE word (w text COLLATE "und-x-icu" PRIMARY KEY, n int);
            INSERT INTO word VALUES ('a', 1), ('B', 1), ('é', 1), ('Z', 1), ('b', 2);
            """)
        // ICU's order is a, b, B, é, Z; code points give B, Z, a, b, é.
        #expect(try server.psql("SELECT string_agg(w, ',' ORDER BY w) FROM word", database: database) == "a,b,B,é,Z")
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let all = try store.fetchBatched(BatchStore.FetchRequest(entityName: "word"))
        #expect(try all.map { try $0?.value(forKey: "w").textValue } == ["B", "Z", "a", "b", "é"])
        let ties = try store.fetchBatched(BatchStore.FetchRequest(entityName: "word", sortDescriptors: [SortDescriptor(key: "n", ascending: false)]))
        #expect(try ties.map { try $0?.value(forKey: "w").textValue } == ["b", "B", "Z", "a", "é"])
    }

    @Test("edits through a result touch its rows only (not one inserted since); a merge drops the stale batches of open results; undo works after the result is gone, in the session that kept its journal")
    func editsThroughAResult() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        let context = PostgresContext(store: store)
        let sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'faultline'"
        let before = try psql("SELECT sum(score), count(*) FROM movie")
        var counted = 0
        do {
        let rows = try context.fetchBatched(
            BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 2000"), sortDescriptors: [SortDescriptor(key: "score")]),
            residentBatches: 4, firstBatch: nil, progress: nil)
        let n = rows.count
        #expect(try psql("SELECT count(*) FROM movie WHERE year >= 2000") == "\(n)")
        // A row the result's filter matches, inserted after the fetch: no edit through the result may touch it.
        try psql("INSERT INTO movie VALUES (900001, 'late', 5, 2020, 1, 1.00)")
        #expect(rows[0] != nil)
        let update = BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate("score < 500"),
                                        propertiesToUpdate: try UpdateExpression.parseAssignments("score = score + 1000"), resultType: .changes)
        counted = try rows.count(forUpdate: update)
        #expect(try psql("SELECT count(*) FROM movie WHERE year >= 2000 AND score < 500 AND id <> 900001") == "\(counted)")
        let done = try rows.execute(update, undoable: true)
        #expect(done.count == counted && context.canUndo)
        #expect(try psql("SELECT score FROM movie WHERE id = 900001") == "5")
        #expect(try psql("SELECT count(*) FROM movie WHERE score >= 1000") == "\(counted)")
        // The change set lives on the server: asked about the first batch's rows, then merged.
        let stored = try #require(done.changes?.stored.first)
        #expect(stored.count == counted && stored.description.contains("PostgreSQL temp table"))
        let firstBatch = (0..<min(100, n)).compactMap { rows[$0]?.objectID }
        let changedThere = try stored.matching(firstBatch)
        let below = try (0..<min(100, n)).filter { (try rows[$0]?.value(forKey: "score").integerValue ?? 1000) < 500 }.count
        #expect(changedThere.count == below && below > 0)
        #expect(rows.statistics.batchesResident >= 1)
        context.merge(try #require(done.changes))
        // The batches that held changed rows are read again: the cursor's row shows its new score.
        #expect(try rows[0]?.value(forKey: "score").integerValue.map { $0 >= 1000 } == true)
        var listed = 0
        try stored.forEachObjectID { _ in listed += 1 }
        #expect(listed == counted)

        // A delete of marked rows, through the result; the result goes; both undo in order.
        let marked = [try #require(rows[1]?.objectID), try #require(rows[2]?.objectID)]
        let deleted = try rows.execute(BatchDeleteRequest(objectIDs: marked, resultType: .count), undoable: true)
        #expect(deleted.count == 2)
        #expect(try psql("SELECT count(*) FROM movie") == "\(Self.rows - 1)")
        }
        // The result is gone, and its ID table with it; its session stays while its journals do
        // (the context's own session was never opened).
        var idTables = ""
        for _ in 0..<50 {
            idTables = try psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'bs_ids%'")
            if idTables == "0" { break }
            usleep(100_000)
        }
        #expect(idTables == "0")
        #expect(try psql(sessions) == "1")
        let restored = try context.undo()
        #expect(restored.insertedCount == 2)
        #expect(try psql("SELECT count(*) FROM movie") == "\(Self.rows + 1)")
        let back = try context.undo()
        #expect(back.updatedCount == counted && !context.canUndo)
        #expect(try psql("SELECT sum(score), count(*) FROM movie WHERE id <> 900001") == before)
        #expect(try psql("SELECT score FROM movie WHERE id = 900001") == "5")

        // 2,500 marked rows: one transaction of several statements (PostgreSQL takes 65,535 parameters a statement).
        do {
            let all = try context.fetchBatched(BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "id")]),
                                               residentBatches: 4, firstBatch: nil, progress: nil)
            let marked = try (0..<2_500).map { try #require(all[$0]?.objectID) }
            let bump = BatchUpdateRequest(entityName: "movie", propertiesToUpdate: try UpdateExpression.parseAssignments("score = score + 5000"), resultType: .count)
            #expect(try all.count(forUpdate: bump, objectIDs: marked) == 2_500)
            #expect(try all.execute(bump, objectIDs: marked, undoable: true).count == 2_500)
            #expect(try psql("SELECT count(*) FROM movie WHERE score >= 5000") == "2500")
            #expect(try psql("SELECT min(id), max(id) FROM movie WHERE score >= 5000") == "1|2500")
            try context.undo()
            #expect(try psql("SELECT count(*) FROM movie WHERE score >= 5000") == "0")
        }

        // A result from the store itself keeps no undo: refused before anything runs.
        let bare = try store.fetchBatched(BatchStore.FetchRequest(entityName: "movie"))
        do {
            _ = try bare.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "movie")), undoable: true)
            Issue.record("an undoable delete through a store's result ran")
        } catch let error as BatchStoreError {
            #expect(error.code == .undoRefused && !error.message.contains("\n"))
        }
        // A view's result refuses edits in one line.
        let view = try context.fetchBatched(BatchStore.FetchRequest(entityName: "recent"), residentBatches: 2, firstBatch: nil, progress: nil)
        #expect(throws: BatchStoreError.self) { _ = try view.count(forDelete: BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "recent"))) }
        #expect(try psql("SELECT count(*) FROM movie") == "\(Self.rows + 1)")
    }

    @Test("bad requests: one line naming the problem, and no session left behind")
    func badRequests() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        func error(_ request: BatchStore.FetchRequest) -> BatchStoreError? {
            do { _ = try store.fetchBatched(request); return nil } catch { return error as? BatchStoreError }
        }
        #expect(error(BatchStore.FetchRequest(entityName: "nope"))?.code == .noSuchEntity)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("titel == 'x'")))?.message.contains("did you mean \"title\"") == true)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("year < 'x'")))?.code == .invalidQuery)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", sortDescriptors: [SortDescriptor(key: "nope")]))?.code == .noSuchAttribute)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES '\\\\bx'")))?.code == .invalidQuery)
        // The test server's character type is C: \w would match ASCII only, so it is refused by name.
        #expect(store.characterType == "C")
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES[c] 'x.*'")))?.message.contains("MATCHES[c]") == true)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES 'a\\\\vb'")))?.code == .invalidQuery)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES 'ab$\\\\n'")))?.code == .invalidQuery)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES '[:alpha:]+'")))?.code == .invalidQuery)
        let ascii = error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES '\\\\w+'")))
        #expect(ascii?.code == .invalidQuery)
        #expect(ascii?.message.contains("ASCII only") == true)
        #expect(error(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("title MATCHES '[[:alpha:]]+'")))?.message.contains("[:alpha:]") == true)
        // Every session a failed fetch opened is closed again.
        func sessions() throws -> String {
            try server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'faultline'", database: database)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try waitUntil(timeout: 5) { try sessions() == "0" }
        #expect(try sessions() == "0")
    }
}
