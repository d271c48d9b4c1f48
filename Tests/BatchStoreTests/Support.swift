import BatchStore
import Foundation
import GRDB

/// A temporary directory removed when the value goes away.
final class TempDir {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("bs-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// Creates a database file with `sql` run through GRDB directly (not BatchStore).
func makeDatabase(_ dir: TempDir, _ name: String = "test.sqlite", sql: String) throws -> String {
    let path = dir.path(name)
    let q = try DatabaseQueue(path: path)
    try q.write { db in try db.execute(sql: sql) }
    return path
}

/// Runs `body` on a direct GRDB connection to `path` (the "other writer" in tests).
func direct<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
    let q = try DatabaseQueue(path: path)
    return try q.write { db in try body(db) }
}

/// A numbers table: n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT) with ids 1...count, v = id * 10.
func makeNumbers(_ dir: TempDir, count: Int) throws -> String {
    let path = try makeDatabase(dir, sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
    try direct(path) { db in
        let s = try db.makeStatement(sql: "INSERT INTO n(id, v, name) VALUES (?, ?, ?)")
        for i in stride(from: 1, through: count, by: 1) { try s.execute(arguments: [i, i * 10, "row \(i)"]) }
    }
    return path
}

extension ManagedObject {
    var intID: Int64 { if case .rowid(let r) = objectID.key { return r } else { return -1 } }
}
