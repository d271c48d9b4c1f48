import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// A text literal compared with a typed column (timestamps, dates, intervals, numeric, uuid,
/// inet, jsonb) is read by the column's type, as psql reads it: a predicate means what psql means,
/// and a delete through it removes exactly psql's rows. A literal the type cannot read is one line.
@Suite("PostgreSQL literals compare in the column's type", .tags(.postgres), .timeLimit(slowTestLimit))
struct TypedLiteralTests {
    @Test("time_hour < '2013-1-2', time_hour == '2013-01-01T11:10:00Z', dates, intervals, numeric, uuid, inet and jsonb count what psql counts; the same delete removes psql's rows; a bad literal is .invalidQuery")
    func typedLiterals() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("typed", sql: """
            SET TIME ZONE 'UTC';
            CREATE TABLE flights(id int PRIMARY KEY, time_hour timestamptz, day date, at_local timestamp, took interval, fare numeric(8,2),
                                 tag uuid, host inet, doc jsonb, carrier text);
            INSERT INTO flights
            SELECT g, timestamptz '2013-01-01 05:00:00+00' + (g * interval '37 minutes'), date '2013-01-01' + (g / 40), timestamp '2013-01-01 05:00' + (g * interval '37 minutes'),
                   (g % 5) * interval '30 minutes', (g % 300) / 4.0, ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid,
                   ('10.0.' || (g % 4) || '.' || (g % 250))::inet, jsonb_build_object('k', g % 3), CASE WHEN g % 2 = 0 THEN 'HA' ELSE 'UA' END
            FROM generate_series(1, 600) g;
            """)
        func psql(_ sql: String) throws -> String { try server.psql("SET TIME ZONE 'UTC'; " + sql, database: database).split(separator: "\n").last.map(String.init) ?? "" }
        // The sessions read timestamptz literals in the server's time zone, as psql's do.
        try server.psql("ALTER DATABASE \(database) SET timezone = 'UTC'", database: database)
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        func count(_ predicate: String) throws -> Int {
            try context.count(for: BatchStore.FetchRequest(entityName: "flights", predicate: try FetchPredicate(format: predicate)))
        }
        let cases: [(String, String)] = [
            (#"time_hour < "2013-1-2""#, "time_hour < '2013-1-2'"),
            (#"time_hour == "2013-01-01T11:10:00Z""#, "time_hour = '2013-01-01T11:10:00Z'"),
            (#"time_hour >= "2013-01-05 03:00+02""#, "time_hour >= '2013-01-05 03:00+02'"),
            (#"day == "2013-1-3""#, "day = '2013-1-3'"),
            (#"day BETWEEN {"2013-01-02", "2013-1-4"}"#, "day BETWEEN '2013-01-02' AND '2013-1-4'"),
            (#"at_local > "Jan 3 2013""#, "at_local > 'Jan 3 2013'"),
            (#"took == "1 hour""#, "took = '1 hour'"),
            (#"took >= "90 minutes""#, "took >= '90 minutes'"),
            (#"fare == "12.5""#, "fare = '12.5'"),
            // The column's precision does not round the literal: 12.245 is no fare of numeric(8,2).
            (#"fare != "12.245""#, "fare <> '12.245'"),
            (#"tag == "00000000-0000-0000-0000-000000000007""#, "tag = '00000000-0000-0000-0000-000000000007'"),
            (#"host == "10.0.1.5""#, "host = '10.0.1.5'"),
            (#"doc == "{\"k\": 1}""#, #"doc = '{"k": 1}'"#),
            (#""2013-01-03" < day"#, "'2013-01-03' < day"),
            (#"day IN {"2013-01-02", "2013-1-3"}"#, "day IN ('2013-01-02', '2013-1-3')"),
            (#"carrier == "HA" AND time_hour < "2013-01-03""#, "carrier = 'HA' AND time_hour < '2013-01-03'"),
        ]
        for (ours, theirs) in cases {
            let expected = try psql("SELECT count(*) FROM flights WHERE \(theirs)")
            #expect(String(try count(ours)) == expected, "\(ours): psql counts \(expected)")
            #expect(Int(expected) ?? 0 > 0, "\(theirs) should match some rows")
        }
        #expect(try count(#"fare == "12.245""#) == 0 && (try count(#"fare == "12.25""#)) > 0)
        // The issue's numbers: compared as text, time_hour < "2013-1-2" matched almost every row.
        #expect(try count(#"time_hour < "2013-1-2""#) < 40)
        // A delete through such a predicate removes exactly psql's rows.
        let before = try psql("SELECT count(*) FROM flights")
        let doomed = try psql("SELECT count(*) FROM flights WHERE time_hour < '2013-1-2'")
        let deleted = try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "flights", predicate: try FetchPredicate(format: #"time_hour < "2013-1-2""#)),
                                                             resultType: .count), undoable: false)
        #expect(String(deleted.count ?? -1) == doomed)
        #expect(try psql("SELECT count(*) FROM flights") == String(Int(before)! - Int(doomed)!))
        // [c] and [d] compare text, as they do everywhere.
        #expect(try count(#"time_hour BEGINSWITH "2013-01-03""#) > 0)
        // A literal the type cannot read: one line, .invalidQuery (exit 2 from the command line).
        for bad in [#"time_hour < "late""#, #"day == "2013-02-30""#, #"tag == "nope""#] {
            do {
                _ = try count(bad)
                Issue.record("\(bad) was accepted")
            } catch let error as BatchStoreError {
                #expect(error.code == .invalidQuery && !error.message.contains("\n"), "\(bad): \(error.code) \(error.message)")
            }
        }
        let cli = try CLI.run(["delete", server.url(database: database), "--table", "flights", "--where", #"time_hour < "late""#],
                              environment: ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()])
        #expect(cli.status == 2 && cli.stderr.split(separator: "\n").count == 1 && cli.stderr.contains("timestamp with time zone"), "\(cli.stderr)")
    }
}
