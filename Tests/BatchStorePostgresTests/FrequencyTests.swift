import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// Frequencies, bins and summaries over PostgreSQL for every kind of column (what SQLite has no
/// equivalent of: json, uuid, arrays, enums, points, intervals), views and keyless tables, and
/// the life of a frequency table: in the result's session, cancelled on the server, dropped when
/// it goes.
@Suite("PostgreSQL frequencies and summaries", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresFrequencyTests {
    static func store(_ server: PostgresServer) throws -> (PostgresStore, String) {
        let database = try server.makeDatabase("freq", sql: """
            CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
            CREATE TABLE t (
              id int PRIMARY KEY, i int, r real, n numeric(8,2), b boolean, y bytea, ts timestamptz, d date, j json, jb jsonb,
              u uuid, a int[], e mood, p point, iv interval, c char(3), o oid);
            INSERT INTO t SELECT g,
              CASE WHEN g % 7 = 0 THEN NULL ELSE g % 5 - 2 END,
              CASE WHEN g % 11 = 0 THEN 'NaN'::real WHEN g % 13 = 0 THEN NULL ELSE (g % 9) / 4.0 - 1 END,
              (g % 6) * 1.25 - 3,
              CASE WHEN g % 5 = 0 THEN NULL ELSE g % 3 = 0 END,
              decode(lpad(to_hex(g % 4), 2, '0'), 'hex'),
              timestamptz '2024-01-01 00:00:00+00' + (g % 3) * interval '1 hour',
              date '2020-02-28' + g % 4,
              json_build_object('k', g % 3, 'z', 1),
              jsonb_build_object('z', 1, 'k', g % 3),
              ('00000000-0000-0000-0000-00000000000' || (g % 3))::uuid,
              ARRAY[g % 2, 1],
              (ARRAY['sad', 'ok', 'happy'])[1 + g % 3]::mood,
              point(g % 2, 0),
              (g % 3) * interval '1 day',
              CASE WHEN g % 2 = 0 THEN 'ab' ELSE 'abc' END,
              (g % 4)::oid
            FROM generate_series(1, 600) g;
            CREATE TABLE heap (v int, w text);
            INSERT INTO heap SELECT g % 10, 'w' || (g % 3) FROM generate_series(1, 300) g;
            CREATE VIEW odd AS SELECT id, i, j FROM t WHERE id % 2 = 1;
            CREATE TABLE slow (id int PRIMARY KEY, v int);
            INSERT INTO slow SELECT g, g % 3 FROM generate_series(1, 1500) g;
            CREATE FUNCTION dawdle(v int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN v; END $$;
            CREATE VIEW dawdling AS SELECT id, dawdle(v) AS v FROM slow;
            """)
        return (try PostgresStore(url: server.url(database: database), environment: noPasswordFile), database)
    }

    @Test("every kind of column: F's counts are psql's GROUP BY's, I's figures its aggregates, and an edit of each value counts exactly its rows")
    func everyKind() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "t", fetchBatchSize: 50))
        let delete = BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "t"))
        for column in ["i", "r", "n", "b", "y", "ts", "d", "j", "jb", "u", "a", "e", "p", "iv", "c", "o"] {
            for rows in [ResultRows.fetched, .matchingNow, .sample(40)] {
                let f = try result.frequencies(of: column, rows: rows)
                let values = try f.values(in: 0..<f.count)
                #expect(values.reduce(0) { $0 + $1.count } == f.total && f.total == (rows == .sample(40) ? 40 : 600), "\(column) \(rows)")
                guard rows != .sample(40) else { continue }
                // The counts, in order, are psql's (grouped as text where the type has no equality).
                let grouped = ["j", "a", "p"].contains(column) ? "\(column)::text" : column
                let expected = try server.psql("SELECT count(*) FROM t GROUP BY \(grouped) ORDER BY count(*) DESC", database: database)
                    .split(separator: "\n").map { Int($0)! }
                #expect(values.map(\.count) == expected, "\(column) \(rows): \(values)")
                #expect(values.first?.count == f.maxCount)
                // Each value's rows, through an edit's count, are exactly its count.
                for p in 0..<f.count {
                    let selection = try f.selection(at: [p])
                    #expect(try result.count(forDelete: delete, values: selection) == values[p].count, "\(column): \(values[p])")
                    #expect(try f.position(of: selection) == p, "\(column): \(values[p])")
                }
            }
            let s = try result.summary(of: column)
            let nulls = try server.psql("SELECT count(*) FILTER (WHERE \(column) IS NULL) FROM t", database: database)
            #expect(s.rows == 600 && "\(s.nulls)" == nulls, "\(column): \(s)")
            let all = try result.frequencies(of: column)
            let allValues = try all.values(in: 0..<all.count)
            #expect(s.distinct == allValues.filter { !$0.value.isNull }.count, "\(column): \(s)")
            #expect(s.mostFrequent == allValues.first, "\(column): \(s)")
            #expect(s.min != nil && s.max != nil, "\(column): \(s)")
        }
        // Figures that are the column's own.
        let i = try result.summary(of: "i")
        #expect(i.min == .integer(-2) && i.max == .integer(2) && i.storageClasses == ["integer"])
        let b = try result.summary(of: "b")
        #expect(b.min == .integer(0) && b.max == .integer(1) && b.mean.map { abs($0 - 1.0 / 3) < 1e-9 } == true, "\(b)")
        let y = try result.summary(of: "y")
        #expect(y.min == .blob(Data([0])) && y.max == .blob(Data([3])) && y.storageClasses == ["blob"], "\(y)")
        let c = try result.summary(of: "c")
        #expect(c.shortest == 2 && c.longest == 3, "\(c)")
        // avg(float8) overflows on squares past 1e154; the mean comes through numeric then.
        _ = try server.psql("CREATE TABLE huge(id int PRIMARY KEY, x float8); INSERT INTO huge VALUES (1, 1e300), (2, 1), (3, -1e300), (4, 3e300)", database: database)
        let hugeResult = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
            .fetchBatched(BatchStore.FetchRequest(entityName: "huge", fetchBatchSize: 10), residentBatches: 1)
        let huge = try hugeResult.summary(of: "x")
        #expect(huge.mean.map { abs($0 - 7.5e299) < 1e285 } == true && huge.max == .real(3e300), "\(huge)")
        let r = try result.numericRange(of: "r")
        #expect(r == -1.0...1.0, "NaN is left out of the range: \(String(describing: r))")
        #expect(try result.numericRange(of: "j") == nil)
        // Bins: integers, reals (NaN its own bin, after the numbers), numeric; integral bounds read as integers.
        let bins = try result.frequencies(of: "r", binWidth: 1).values(in: 0..<10)
        #expect(bins.prefix(4).map(\.value) == [.null, .integer(-1), .integer(0), .integer(1)] && bins.count == 5, "\(bins)")
        if case .real(let nan) = bins.last?.value { #expect(nan.isNaN) } else { Issue.record("NaN is a bin of its own, last: \(bins)") }
        let nbins = try result.frequencies(of: "n", binWidth: 2)
        let nvalues = try nbins.values(in: 0..<nbins.count)
        #expect(nvalues.map(\.value) == [.integer(-4), .integer(-2), .integer(0), .integer(2)], "\(nvalues)")
        for p in 0..<nbins.count {
            let expected = try server.psql("SELECT count(*) FROM t WHERE floor(n / 2) * 2 = \(nvalues[p].value)", database: database)
            #expect("\(try result.count(forDelete: delete, values: try nbins.selection(at: [p])))" == expected)
        }
        #expect(throws: BatchStoreError.self) { try result.frequencies(of: "nope") }
    }

    @Test("values read back exactly: doubles whatever extra_float_digits the database sets, numeric bins without rounding, intervals by their text as == compares them")
    func exactValues() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("exact", sql: """
            CREATE TABLE f (id int PRIMARY KEY, x float8, n numeric, d interval);
            INSERT INTO f VALUES (1, 0.1::float8 + 0.2::float8, 19.99999999999999999999, '1 day'), (2, 0.3, 20, '24 hours'), (3, 0.3, -0.00000000000000000001, '24 hours');
            """)
        _ = try server.psql("ALTER DATABASE \(database) SET extra_float_digits = 0", database: database)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "f", fetchBatchSize: 10))
        let delete = BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "f"))
        // 0.30000000000000004 and 0.3: two values, each selecting its own rows.
        let x = try result.frequencies(of: "x")
        let xs = try x.values(in: 0..<x.count)
        #expect(xs.map(\.count) == [2, 1] && xs.last?.value == .real(0.1 + 0.2), "\(xs)")
        #expect(try result.count(forDelete: delete, values: try x.selection(at: [1])) == 1)
        #expect(try x.position(of: try x.selection(at: [1])) == 1)
        // A numeric bin is the exact floor: 19.999… is in 10 – 20, -0.000…1 in -10 – 0.
        let n = try result.frequencies(of: "n", binWidth: 10)
        let bins = try n.values(in: 0..<n.count)
        #expect(bins.map(\.value) == [.integer(-10), .integer(10), .integer(20)], "\(bins)")
        for p in 0..<n.count { #expect(try result.count(forDelete: delete, values: try n.selection(at: [p])) == 1) }
        // '1 day' and '24 hours' are equal intervals but not equal text: the sheet counts them
        // apart (by their text), and its values select their own rows; a literal in a predicate is
        // read as an interval, as psql reads it, so d == '1 day' matches both.
        let d = try result.frequencies(of: "d")
        #expect(try d.values(in: 0..<d.count).map(\.count) == [2, 1])
        let day = try store.fetchBatched(BatchStore.FetchRequest(entityName: "f", predicate: try FetchPredicate(format: "d == '1 day'"), fetchBatchSize: 10))
        #expect(day.count == 3)
        _ = try result.execute(delete, values: try d.selection(at: [1]))
        #expect(try server.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM f", database: database) == "2,3")
    }

    @Test("a view and a table without a key count from their ID tables; a cancelled count stops on the server and leaves no table; a frequency table goes with its value, in the result's session")
    func viewsCancelAndLife() throws {
        let server = try PostgresServer.require()
        let (store, database) = try Self.store(server)
        func freqTables() throws -> String {
            try server.psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'bs_freq%' AND relkind = 'r' AND relpersistence = 't'", database: database)
        }
        let view = try store.fetchBatched(BatchStore.FetchRequest(entityName: "odd", fetchBatchSize: 50))
        do {
            let f = try view.frequencies(of: "i")
            #expect(try f.values(in: 0..<f.count).map(\.count) == (try server.psql("SELECT count(*) FROM odd GROUP BY i ORDER BY count(*) DESC", database: database)
                .split(separator: "\n").map { Int($0)! }))
            #expect(try view.summary(of: "j").rows == 300)
            #expect(f.location.hasPrefix("PostgreSQL temp table bs_freq_"))
            #expect(try freqTables() == "1")
        }
        let deadline = Date() + 5
        while try freqTables() != "0", Date() < deadline { usleep(50_000) }
        #expect(try freqTables() == "0", "the table went with its value")
        let heap = try store.fetchBatched(BatchStore.FetchRequest(entityName: "heap", fetchBatchSize: 50))
        #expect(try heap.frequencies(of: "w").values(in: 0..<3).map(\.count) == [100, 100, 100])
        #expect(try heap.summary(of: "v").distinct == 10)

        // A GROUP BY that takes seconds (a view that sleeps per row, read as it matches now) is
        // cancelled on the server at the first progress call.
        let dawdling = try store.fetchBatched(BatchStore.FetchRequest(entityName: "dawdling", fetchBatchSize: 50))
        let started = Date()
        var calls = 0
        #expect(throws: BatchStoreError.self) {
            try dawdling.frequencies(of: "v", rows: .matchingNow) { _ in calls += 1; return .cancel }
        }
        #expect(calls >= 1 && Date().timeIntervalSince(started) < 2.5, "\(calls) calls in \(Date().timeIntervalSince(started)) s")
        try waitUntil(timeout: 5) { try freqTables() == "0" }
        #expect(try freqTables() == "0")
        // The session is still good: the next count runs.
        #expect(try dawdling.frequencies(of: "v").values(in: 0..<3).map(\.count) == [500, 500, 500])
    }
}
