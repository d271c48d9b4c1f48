import BatchStore
import Foundation
import Testing
import TestSupport

/// The command-line model test (``CLIModel``, one definition, as `ModelCLITests` runs it on a
/// SQLite file) against a PostgreSQL database given by URL: the same random verbs, the same
/// model, the table read back through psql after every step. Texts hold no NUL (PostgreSQL's
/// text cannot); a conflict is the server's `duplicate key value`.
@Suite(.serialized, .tags(.postgres, .slow), .timeLimit(slowTestLimit)) struct PostgresModelCLITests {
    static func engine(_ server: PostgresServer) throws -> CLIModel.Engine {
        let database = try server.makeDatabase("climodel", sql: "CREATE TABLE t(id bigint PRIMARY KEY, n bigint, s text, r float8)")
        func literal(_ s: String?) -> String { s.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL" }
        let query = """
            SELECT id || '|' || coalesce(n::text, 'NULL') || '|' || CASE WHEN s IS NULL THEN 'NULL' ELSE 'text:' || upper(encode(convert_to(s, 'UTF8'), 'hex')) END
              || '|' || CASE WHEN r IS NULL THEN 'NULL' ELSE round(r::numeric, 3)::text END FROM t ORDER BY id
            """
        return CLIModel.Engine(
            name: "PostgreSQL", target: server.url(database: database), texts: trickyTexts.filter { !$0.contains("\0") },
            conflictWords: "duplicate key value",
            environment: ["PATH": "/usr/bin:/bin", "PGPASSFILE": "/nonexistent", "HOME": NSTemporaryDirectory()],
            create: { model in
                guard !model.isEmpty else { return }
                let rows = model.map { id, row in "(\(id), \(row.n.map(String.init) ?? "NULL"), \(literal(row.s)), \(row.r.map { "\($0)" } ?? "NULL"))" }
                try server.psql("INSERT INTO t VALUES " + rows.joined(separator: ", "), database: database)
            },
            compare: { expected in
                let read = try server.psql(query, database: database).split(separator: "\n").map(String.init)
                guard read == expected else { return "the database differs from the model:\n\(read)\nexpected\n\(expected)" }
                return nil
            })
    }

    @Test("random update, delete, import (each policy, CSV and NDJSON) and export through a URL agree with the model after every step; a failure shrinks")
    func randomVerbsMatchAModel() throws {
        let server = try PostgresServer.require()
        if let failure = try CLIModel.check(seed: 0xC11, make: { try Self.engine(server) }) { Issue.record("\(failure)") }
    }
}
