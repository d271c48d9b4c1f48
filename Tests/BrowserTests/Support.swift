import BatchStore
import Browser
import Foundation
import GRDB
import TerminalCore

final class TempDir {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("browser-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// A database made with GRDB directly (not BatchStore).
func makeDatabase(_ dir: TempDir, _ name: String = "test.sqlite", sql: String) throws -> String {
    let path = dir.path(name)
    let q = try DatabaseQueue(path: path)
    try q.write { db in try db.execute(sql: sql) }
    return path
}

/// Reads `path` with a separate GRDB connection, to check what the browser wrote.
func direct<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
    let q = try DatabaseQueue(path: path)
    return try q.write { db in try body(db) }
}

/// A browser over `path` on an in-memory terminal, started.
func makeBrowser(_ path: String, width: Int = 80, height: Int = 12, options: BrowserOptions = BrowserOptions(), readOnly: Bool = false) throws -> (Browser, MemoryTerminal) {
    let store = try PersistentStore(path: path, options: .init(readOnly: readOnly))
    let terminal = MemoryTerminal(width: width, height: height)
    let browser = try Browser(store: store, options: options, backend: terminal)
    browser.start()
    return (browser, terminal)
}

/// Keys from a string: each character is a key press.
func keys(_ s: String) -> [Key] { s.map { .char($0) } }

extension MemoryTerminal {
    /// The screen with trailing spaces removed from each line.
    var text: [String] { lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) } }
}

/// `n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)` with ids 1…count, v = id * 10, name "row id".
func makeNumbers(_ dir: TempDir, count: Int) throws -> String {
    let path = try makeDatabase(dir, sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)")
    try direct(path) { db in
        let s = try db.makeStatement(sql: "INSERT INTO n(id, v, name) VALUES (?, ?, ?)")
        for i in 1...count { try s.execute(arguments: [i, i * 10, "row \(i)"]) }
    }
    return path
}
