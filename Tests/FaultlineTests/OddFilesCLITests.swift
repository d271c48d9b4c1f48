import Foundation
import GRDB
import Testing

/// The verbs on files that break naive tools.
@Suite("Odd files from the command line")
struct OddFilesCLITests {
    @Test("reserved words, non-ASCII names, WITHOUT ROWID, generated columns, views, huge values and a thousand columns: export and edit")
    func verbs() throws {
        let scratch = TempDir()
        let db = scratch.path("odd.sqlite")
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: """
                CREATE TABLE "order" ("group" INTEGER PRIMARY KEY, "値" TEXT);
                INSERT INTO "order" VALUES (1, 'α'), (2, 'β');
                CREATE TABLE pairs (a TEXT, b INTEGER, note TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
                INSERT INTO pairs VALUES ('x', 1, 'p'), ('x', 2, 'q');
                CREATE TABLE g (id INTEGER PRIMARY KEY, n INTEGER, twice INTEGER GENERATED ALWAYS AS (n * 2) VIRTUAL);
                INSERT INTO g (id, n) VALUES (1, 21);
                CREATE VIEW gv AS SELECT twice FROM g;
                CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT, data BLOB);
                """)
            try db.execute(sql: "INSERT INTO blobs VALUES (1, ?, ?)", arguments: [String(repeating: "z", count: 10_000_000), Data(repeating: 1, count: 1_000_000)])
            try db.execute(sql: "CREATE TABLE wide (id INTEGER PRIMARY KEY, " + (1...1000).map { "c\($0)" }.joined(separator: ", ") + ")")
            try db.execute(sql: "INSERT INTO wide (id, c1000) VALUES (1, 'last')")
        }
        func run(_ args: [String]) throws -> CLI.Result {
            let r = try CLI.run(args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            return r
        }
        #expect(try run(["export", db, "--table", "order", "--where", "値 == 'β'"]).stdout == "group\t値\n2\tβ\n")
        #expect(try run(["export", db, "--table", "pairs", "--sort", "b desc"]).stdout == "a\tb\tnote\nx\t2\tq\nx\t1\tp\n")
        #expect(try run(["export", db, "--table", "gv"]).stdout == "twice\n42\n")
        let big = try run(["export", db, "--table", "blobs", "--format", "ndjson"]).stdout
        #expect(big.utf8.count > 11_000_000 && big.contains(String(repeating: "z", count: 1000)))
        let wide = try run(["export", db, "--table", "wide", "--format", "csv"]).stdout.split(whereSeparator: \.isNewline)
        #expect(wide.count == 2 && wide[0].hasSuffix(",c1000") && wide[1].hasSuffix(",last"))

        _ = try run(["update", db, "--table", "order", "--where", "group == 1", "--set", "値 = 値 || '!'"])
        _ = try run(["delete", db, "--table", "pairs", "--where", "b == 1"])
        _ = try run(["update", db, "--table", "g", "--all", "--set", "n = n + 1"])
        let check = try DatabaseQueue(path: db).read { db in
            (try String.fetchAll(db, sql: "SELECT \"値\" FROM \"order\" ORDER BY 1"),
             try String.fetchAll(db, sql: "SELECT note FROM pairs"),
             try Int.fetchOne(db, sql: "SELECT twice FROM gv"))
        }
        #expect(check.0 == ["α!", "β"] && check.1 == ["q"] && check.2 == 44)
        let view = try CLI.run(["delete", db, "--table", "gv", "--all"])
        #expect(view.status != 0 && view.stderr.split(separator: "\n").count == 1)
        let generated = try CLI.run(["update", db, "--table", "g", "--all", "--set", "twice = 1"])
        #expect(generated.status != 0 && generated.stderr.split(separator: "\n").count == 1, "\(generated.stderr)")
    }
}
