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
