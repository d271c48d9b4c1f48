@testable import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// `firstPosition(matching:after:backwards:)` against a plain Swift model of the result's order:
/// near matches (found position by position) and far ones or none (found by one scan of the
/// table's matches), forwards and backwards, on a sorted result with ties, a text key and rows
/// deleted since the fetch.
@Suite("Search in result order, against a model", .tags(.slow), .timeLimit(slowTestLimit))
struct SearchModelTests {
    @Test("60,000 rows sorted with ties: every search from random positions, both ways, gives the model's first match; rows deleted since the fetch are never found")
    func searchAgainstModel() throws {
        let dir = TempDir()
        let path = dir.path("s.sqlite")
        let n = 60_000
        var rng = SplitMix64(seed: 42)
        var rows: [(id: Int, v: Int, name: String)] = []
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, name TEXT); CREATE TABLE k(code TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID")
            let insert = try db.makeStatement(sql: "INSERT INTO t VALUES (?, ?, ?)")
            let keyed = try db.makeStatement(sql: "INSERT INTO k VALUES (?, ?)")
            for id in 1...n {
                let v = rng.below(500)
                // Rare names: a few near the start of the order, most far from anywhere.
                let name = rng.below(4000) == 0 ? "needle \(id)" : "hay \(id % 97)"
                rows.append((id, v, name))
                try insert.execute(arguments: [id, v, name])
                try keyed.execute(arguments: ["c\(id)", v])
            }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "t", sortDescriptors: [SortDescriptor(key: "v", ascending: false)], fetchBatchSize: 100))
        // The model: sorted by v descending, ties by id.
        var order = rows.sorted { $0.v != $1.v ? $0.v > $1.v : $0.id < $1.id }
        // Another program deletes two needles after the fetch: a search must not land on them.
        let gone = order.filter { $0.name.hasPrefix("needle") }.prefix(2).map(\.id)
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "DELETE FROM t WHERE id IN (\(gone.map(String.init).joined(separator: ",")))") }
        order = order.map { gone.contains($0.id) ? (id: $0.id, v: $0.v, name: "(deleted)") : $0 }
        func model(_ text: String, after: Int, backwards: Bool) -> Int? {
            let hit = { (i: Int) in order[i].name.lowercased().contains(text.lowercased()) }
            return backwards ? (0..<max(0, min(after, n))).reversed().first(where: hit) : ((after + 1)..<n).first(where: hit)
        }
        for _ in 0..<40 {
            let after = rng.below(n + 1) - 1
            for text in ["needle", "NEEDLE 5", "no such text", "hay 3"] {
                for backwards in [false, true] {
                    let start = backwards ? max(0, after) : after
                    let found = try result.firstPosition(matching: try FetchPredicate(format: "string(name) CONTAINS[c] %@", arguments: [.value(.text(text))]), after: start, backwards: backwards)
                    #expect(found == model(text, after: start, backwards: backwards), "\(text) after \(start) \(backwards ? "backwards" : "forwards")")
                }
            }
        }
        // A table keyed by text without a rowid: the same.
        let keyed = try context.fetchBatched(BatchStore.FetchRequest(entityName: "k", sortDescriptors: [SortDescriptor(key: "v")], fetchBatchSize: 100))
        let keyedOrder = rows.map { (code: "c\($0.id)", v: $0.v) }.sorted { $0.v != $1.v ? $0.v < $1.v : $0.code < $1.code }
        let target = keyedOrder[55_000].code
        #expect(try keyed.firstPosition(matching: try FetchPredicate(format: "code == %@", arguments: [.value(.text(target))]), after: 10) == 55_000)
        #expect(try keyed.firstPosition(matching: try FetchPredicate(format: "code == %@", arguments: [.value(.text(target))]), after: 59_000, backwards: true) == 55_000)
    }
}

@Suite("Case folding of ASCII text, byte by byte", .tags(.slow), .timeLimit(slowTestLimit))
struct ASCIIFoldTests {
    @Test("bs_fold of ASCII text (every character, NULs, mixed case) is what Foundation's folding gives, for [c], [d] and [cd]; text with other characters still goes through Foundation")
    func asciiFoldMatchesFoundation() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try makeNumbers(dir, count: 1)))
        var rng = SplitMix64(seed: 9)
        var samples = [String((0..<128).map { Character(Unicode.Scalar(UInt8($0))) }), "", "ABC", "abc", "Mixed Case 123", "a\u{0}B"]
        for _ in 0..<200 { samples.append(String((0..<rng.below(12)).map { _ in Character(Unicode.Scalar(UInt8(rng.below(128)))) })) }
        samples += ["Émile", "STRASSE ß", "K\u{212A}"]
        for text in samples {
            for flags in [1, 2, 3] {
                let bytes = try context.withDatabase { db in try Data.fetchOne(db, sql: "SELECT CAST(bs_fold(CAST(? AS TEXT), ?) AS BLOB)", arguments: [Data(text.utf8), flags]) }
                #expect(bytes.map { String(decoding: $0, as: UTF8.self) } == SQLFunctions.fold(text, flags: flags), "\(text.debugDescription) flags \(flags)")
            }
        }
    }
}
