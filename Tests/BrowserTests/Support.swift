import BatchStore
import Browser
import Foundation
import GRDB
import TerminalCore
@_exported import TestSupport

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

/// Table `n` of 1,000,000 rows (`id`, `v` = id × 10, `name` = 'row id'): sorted by name, its ID
/// fetch is long enough to press keys while it loads.
func makeMillionRows(_ dir: TempDir) throws -> String {
    try makeDatabase(dir, sql: """
        CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)
        INSERT INTO n SELECT x, x * 10, 'row ' || x FROM c;
        """)
}

/// Movies with awkward values (for `y` and `:w`, compared with `export`): tabs, newlines, quotes, NUL-free control characters, NULL,
/// empty text, a blob, reals and non-ASCII text.
func awkwardMovies(_ dir: TempDir) throws -> String {
    try makeDatabase(dir, sql: """
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL, poster BLOB);
        INSERT INTO movie VALUES (1, 'Ran', 1985, 8.2, NULL), (2, 'tab' || char(9) || 'and' || char(10) || 'line', 1962, 7.5, X'00FF41'),
          (3, 'say "hi", ''you''', 2001, NULL, NULL), (4, '', 1999, 1.0, X''), (5, NULL, 1985, 9.0, NULL),
          (6, '東京' || char(27) || '[2J', 1953, 8.1, NULL), (7, '\\x41', 2010, -0.5, NULL);
        """)
}
