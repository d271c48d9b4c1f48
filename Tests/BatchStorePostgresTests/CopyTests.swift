import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// `import` over PostgreSQL sends rows by COPY: each value must reach the table exactly as given,
/// whatever bytes it holds and whatever order a row's keys come in, and a row COPY cannot take
/// must go by INSERT in the same transaction.
@Suite("PostgreSQL import by COPY", .tags(.postgres), .timeLimit(slowTestLimit))
struct CopyTests {
    @Test("random text with backslashes, tabs, newlines, carriage returns and non-ASCII reaches the table exactly; rows with other keys or a number go by INSERT; a NUL is refused and nothing is written")
    func roundTrip() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("copytext", sql: "CREATE TABLE c(id text PRIMARY KEY, v text, w text, n int)")
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        var random = SplitMix64(seed: 35)
        let pieces = ["a", "Z", " ", "\\", "\\\\", "\t", "\n", "\r", "\r\n", "é", "Ōzu", "𝄞", "\"", ",", "\\N", "\\x41", "'"]
        func text() -> String {
            (0..<Int(random.next() % 12)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
        }
        var expected: [String: [SQLValue]] = [:]
        var rows: [[String: SQLValue]] = []
        for i in 0..<3_000 {
            let id = "r\(i)"
            let v: SQLValue = random.next() % 9 == 0 ? .null : .text(text())
            let w: SQLValue = random.next() % 5 == 0 ? .null : .text(text())
            var row: [String: SQLValue]
            switch i {
            case 1_500:
                // Other keys: from here the rows go by INSERT.
                row = ["id": .text(id), "v": v]
                expected[id] = [v, .null, .null]
            case 2_000:
                row = ["id": .text(id), "v": v, "w": w, "n": .integer(7)]
                expected[id] = [v, w, .integer(7)]
            default:
                row = ["w": w, "id": .text(id), "v": v]
                expected[id] = [v, w, .null]
            }
            rows.append(row)
        }
        let counts = try context.executeCounting(BatchInsertRequest(entityName: "c", objects: rows))
        #expect(counts.inserted == rows.count && counts.updated == 0)
        let session = try context.store.openSession()
        defer { session.close() }
        var found = 0
        for row in try session.query("SELECT id, v, w, n FROM c") {
            guard case .text(let id) = row[0] else { Issue.record("a key that is not text: \(row[0])"); continue }
            #expect(Array(row.dropFirst()) == expected[id], "row \(id): \(row.dropFirst()) where \(String(describing: expected[id])) was given")
            found += 1
        }
        #expect(found == rows.count)

        // A NUL in text: PostgreSQL text cannot hold it; the import is refused whole.
        let nul = [["id": SQLValue.text("x1"), "v": .text("ok"), "w": .null], ["id": .text("x2"), "v": .text("a\u{0}b"), "w": .null]]
        #expect(throws: BatchStoreError.self) { try context.executeCounting(BatchInsertRequest(entityName: "c", objects: nul)) }
        #expect(try session.query("SELECT count(*) FROM c").first?.first == .integer(Int64(rows.count)))
    }
}
