import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// The command-line model test (``CLIModel``, one definition) on a real SQLite file with NULLs
/// and non-ASCII text (NULs included): after every step the file is read twice, through SQLite
/// directly (text as bytes) and through the sqlite3 shell (text as hex, reals as fixed-point).
/// The same run goes against PostgreSQL in `PostgresModelCLITests`.
@Suite(.serialized, .tags(.slow), .timeLimit(slowTestLimit)) struct ModelCLITests {
    static func engine() throws -> CLIModel.Engine {
        let scratch = TempDir()
        let path = scratch.path("m.sqlite")
        let query = "SELECT id || '|' || ifnull(n, 'NULL') || '|' || CASE WHEN s IS NULL THEN 'NULL' ELSE typeof(s) || ':' || hex(s) END || '|' || CASE WHEN r IS NULL THEN 'NULL' ELSE printf('%.3f', r) END FROM t ORDER BY id"
        return CLIModel.Engine(
            name: "SQLite", target: path, texts: trickyTexts, conflictWords: "UNIQUE constraint failed",
            create: { model in
                try DatabaseQueue(path: path).write { db in
                    try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, s TEXT, r REAL)")
                    let insert = try db.makeStatement(sql: "INSERT INTO t VALUES (?, ?, ?, ?)")
                    for (id, row) in model {
                        try insert.execute(arguments: [id, row.n, row.s.map { Data($0.utf8) }, row.r])
                    }
                    try db.execute(sql: "UPDATE t SET s = CAST(s AS TEXT)") // bound as blobs so NULs survive GRDB's binding
                }
            },
            compare: { expected in
                _ = scratch
                let read = try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: query) }
                guard read == expected else { return "the file differs from the model:\n\(read)\nexpected\n\(expected)" }
                let lines = try sqlite3(path, query, readOnly: true).split(separator: "\n").map(String.init)
                guard lines == expected else { return "the sqlite3 shell differs from the model:\n\(lines)\nexpected\n\(expected)" }
                return nil
            })
    }

    @Test func randomVerbsMatchAModelAndTheSQLiteShell() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") || FileManager.default.isExecutableFile(atPath: "/usr/local/bin/sqlite3") else {
            Issue.record("the sqlite3 shell is needed (apt-get install sqlite3)")
            return
        }
        if let failure = try CLIModel.check(seed: 0xC11, make: Self.engine) { Issue.record("\(failure)") }
    }
}
