import Foundation
import GRDB
import Testing

/// The command line's side of predicate limits and checked assignments: one line, exit 2.
@Suite("Limits and assignments on the command line")
struct LimitsCLITests {
    func file(_ dir: TempDir) throws -> String {
        try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, d REAL);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 6000)
            INSERT INTO t SELECT x, x, x / 4.0 FROM c;
            """)
    }

    @Test("the CLI: each refusal is one line and exit 2")
    func commandLine() throws {
        let dir = TempDir()
        let path = try file(dir)
        for args in [["update", path, "--table", "t", "--all", "--set", "d = d / 0"],
                     ["update", path, "--table", "t", "--all", "--set", "d = \"late\""],
                     ["export", path, "--table", "t", "--where", "a == " + Array(repeating: "1", count: 3_000).joined(separator: " + ")]] {
            let r = try CLI.run(args)
            #expect(r.status == 2, "\(args.last ?? ""): \(r.stderr)")
            #expect(r.stderr.hasPrefix("faultline: ") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        }
        let r = try CLI.run(["export", path, "--table", "t", "--format", "tsv", "--where", (0..<5_000).map { "a == \($0 * 2)" }.joined(separator: " OR ")])
        #expect(r.status == 0 && r.stdout.split(separator: "\n").count == 3_001, "a header and 3,000 rows")
    }
}

/// `import` of rows with dangling foreign keys, as real files hold them and `export` writes them.
@Suite("Import and foreign keys")
struct ImportForeignKeyTests {
    @Test("import refuses a row whose foreign key names no parent row, naming the row, the column and the value; --foreign-keys off loads back what export wrote")
    func danglingKeys() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE planes(tailnum TEXT PRIMARY KEY, seats INTEGER);
            CREATE TABLE flights(id INTEGER PRIMARY KEY, tailnum TEXT REFERENCES planes(tailnum), carrier TEXT, dep_delay REAL);
            INSERT INTO planes VALUES ('N10156', 55), ('N102UW', 182);
            """)
        // A dangling key, as real files hold them (written with the checks off, as most SQLite tools write).
        var config = Configuration()
        config.foreignKeysEnabled = false
        try DatabaseQueue(path: path, configuration: config).writeWithoutTransaction {
            try $0.execute(sql: "INSERT INTO flights VALUES (1, 'N10156', 'EV', 3), (2, 'N999XX', 'UA', NULL), (3, NULL, 'HA', -2.5), (4, 'N102UW', 'US', 0)")
        }
        func rows() throws -> String { try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(id || ':' || ifnull(tailnum, 'null'), ' ') FROM flights") ?? "" } }
        let exported = try CLI.run(["export", path, "--table", "flights", "--format", "csv"])
        #expect(exported.status == 0)
        let csv = dir.path("flights.csv")
        try exported.stdout.write(toFile: csv, atomically: true, encoding: .utf8)
        try direct(path) { try $0.execute(sql: "DELETE FROM flights") }
        let refused = try CLI.run(["import", path, "--table", "flights", csv])
        #expect(refused.status != 0)
        #expect(refused.stderr == "faultline: row 2: flights.tailnum = \"N999XX\" names no row of planes (by tailnum); nothing was written (--foreign-keys off imports such rows as they are)\n", "\(refused.stderr)")
        #expect(try rows() == "", "nothing was written")
        let dry = try CLI.run(["import", path, "--table", "flights", csv, "--foreign-keys", "off", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == "4\n", "\(dry.stderr)")
        #expect(try rows() == "")
        let loaded = try CLI.run(["import", path, "--table", "flights", csv, "--foreign-keys", "off"])
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(try rows() == "1:N10156 2:N999XX 3:null 4:N102UW")
        #expect(try CLI.run(["export", path, "--table", "flights", "--format", "csv"]).stdout == exported.stdout, "byte for byte what export wrote")
        // The checks are back on for the next import on the same file.
        try direct(path) { try $0.execute(sql: "DELETE FROM flights") }
        #expect(try CLI.run(["import", path, "--table", "flights", csv]).status != 0)
        let bad = try CLI.run(["import", path, "--table", "flights", csv, "--foreign-keys", "maybe"])
        #expect(bad.status == 2 && bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
    }
}
