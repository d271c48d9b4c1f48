import BatchStore
import Foundation
import GRDB

/// A temporary directory removed when the value goes away.
public final class TempDir {
    public let url: URL
    /// Creates `<temporary directory>/<prefix>-<UUID>`.
    public init(prefix: String = "faultline-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// Creates a database file with `sql` run through GRDB directly (not BatchStore).
public func makeDatabase(_ dir: TempDir, _ name: String = "test.sqlite", sql: String) throws -> String {
    let path = dir.path(name)
    let q = try DatabaseQueue(path: path)
    try q.write { db in try db.execute(sql: sql) }
    return path
}

/// Runs `body` on a direct GRDB connection to `path` (the "other writer", or the check of what
/// Faultline wrote). It waits up to 10 s for a lock, as another program with a busy timeout
/// would: the browser's own connections read in short transactions (a data-version check, a
/// background count), and a write that meets one at its COMMIT waits for it instead of failing
/// at once, which made tests fail on a loaded machine. A reader that held its lock for good
/// still fails the write.
public func direct<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
    var configuration = Configuration()
    configuration.busyMode = .timeout(10)
    let q = try DatabaseQueue(path: path, configuration: configuration)
    return try q.write { db in try body(db) }
}

/// A numbers table: n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT) with ids 1...count,
/// v = id * 10, name "row id".
public func makeNumbers(_ dir: TempDir, count: Int) throws -> String {
    let path = try makeDatabase(dir, sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
    try direct(path) { db in
        let s = try db.makeStatement(sql: "INSERT INTO n(id, v, name) VALUES (?, ?, ?)")
        for i in stride(from: 1, through: count, by: 1) { try s.execute(arguments: [i, i * 10, "row \(i)"]) }
    }
    return path
}

/// Texts for a deterministic parser fuzz run: even runs are soups of `pieces`, odd runs are
/// `valid` texts with one to three characters removed, inserted from `insertable`, or swapped.
public func fuzzTexts(count: Int, seed: UInt64, pieces: [String], valid: [String], insertable: String, maxPieces: Int) -> [String] {
    var state = seed
    func next(_ n: Int) -> Int {
        // SplitMix64, as the demo database uses.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(n, 1)))
    }
    let extra = Array(insertable)
    return (0..<count).map { i in
        if i % 2 == 0 {
            return (0..<(1 + next(maxPieces))).map { _ in pieces[next(pieces.count)] }.joined(separator: next(4) == 0 ? "" : " ")
        }
        var chars = Array(valid[next(valid.count)])
        for _ in 0..<(1 + next(3)) where !chars.isEmpty {
            let at = next(chars.count)
            switch next(3) {
            case 0: chars.remove(at: at)
            case 1: chars.insert(extra[next(extra.count)], at: at)
            default: chars.swapAt(at, next(chars.count))
            }
        }
        return String(chars)
    }
}

extension RandomNumberGenerator {
    /// A number in `0..<n` (0 when `n` is 0): seeded runs (BatchStore's `SplitMix64`) stay reproducible.
    public mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    /// One element of a non-empty array.
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// Texts for random runs: empty, NUL inside and alone, CJK, emoji, quotes, separators and line
/// ends. No two are canonically equivalent, so Swift's `==` and SQLite's byte comparison agree.
public let trickyTexts: [String] = ["", "a", "b", "x\0y", "\0", "日本語", "😀 emoji", "naïve", "a,b", "\"q\"", "line\nbreak", "tab\there", "cr\r", "\\N", "\\x41", "null"]

/// Table `n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)` of `count` rows (v = id % 1000, name
/// 'row id') with an index on `v`, made by SQLite itself (fast at hundreds of thousands of rows):
/// every row an edit changes rewrites the index too.
public func makeIndexedNumbers(_ dir: TempDir, count: Int) throws -> String {
    try makeDatabase(dir, sql: """
        CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(count))
        INSERT INTO n SELECT x, x % 1000, 'row ' || x FROM c;
        CREATE INDEX n_v ON n(v);
        """)
}

/// Every row of `table`'s `columns`, in rowid order, folded into one checksum (FNV-1a), with the
/// row count: `"300000 rows, 1234…"`. The model a file is compared against before and after.
public func rowChecksum(_ path: String, table: String = "n", columns: [String] = ["id", "v", "name"]) throws -> String {
    try direct(path) { db in
        var hash: UInt64 = 0xcbf29ce484222325
        var count = 0
        let line = columns.map { "quote(\($0))" }.joined(separator: " || '|' || ")
        let cursor = try String.fetchCursor(db, sql: "SELECT \(line) FROM \(table) ORDER BY rowid")
        while let row = try cursor.next() {
            count += 1
            for byte in row.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
            hash = (hash ^ 10) &* 0x100000001b3
        }
        return "\(count) rows, \(hash)"
    }
}

/// A deterministic random sequence (SplitMix64) for random runs that must replay: the same seed
/// gives the same predicates, rows and keys on every machine.
public struct SeededGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }

    /// A number in `0..<n` (0 when `n` is 0 or less).
    public mutating func next(_ n: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(n, 1)))
    }

    /// One element of `a`, which must not be empty.
    public mutating func pick<T>(_ a: [T]) -> T { a[next(a.count)] }
}

/// A row of values as GRDB statement arguments, each as SQLite stores it.
public func statementArguments(_ row: [SQLValue]) -> StatementArguments {
    StatementArguments(row.map { v -> DatabaseValue in
        switch v {
        case .null: return .null
        case .integer(let i): return i.databaseValue
        case .real(let d): return d.databaseValue
        case .text(let s): return s.databaseValue
        case .blob(let b): return b.databaseValue
        }
    })
}

/// A value as a PostgreSQL literal for psql: text as `U&'…'` with every non-ASCII code point
/// escaped (so any client encoding reads it), reals as `float8`, blobs as `bytea`; an integer
/// as `true`/`false` when `boolean`.
public func postgresLiteral(_ v: SQLValue, boolean: Bool = false) -> String {
    switch v {
    case .null: return "NULL"
    case .integer(let i): return boolean ? (i == 0 ? "false" : "true") : String(i)
    case .real(let d): return "\(d)::float8"
    case .text(let s): return "U&'" + s.unicodeScalars.map { $0.isASCII && $0 != "'" && $0 != "\\" ? String($0) : String(format: "\\+%06X", $0.value) }.joined() + "'"
    case .blob(let b): return "'\\x" + b.map { String(format: "%02x", $0) }.joined() + "'::bytea"
    }
}

/// The shortest sequence that still fails, from `steps`, which fail with `failure`: drops one
/// step at a time (from the end) while `run` still fails, until no single step can go. Returns
/// that sequence and its failure.
public func shrink<Step>(_ steps: [Step], failure: String, run: ([Step]) throws -> String?) rethrows -> (steps: [Step], failure: String) {
    var smallest = steps
    var failure = failure
    var shrinking = true
    while shrinking {
        shrinking = false
        for i in smallest.indices.reversed() {
            var fewer = smallest
            fewer.remove(at: i)
            if let f = try run(fewer) { smallest = fewer; failure = f; shrinking = true; break }
        }
    }
    return (smallest, failure)
}
