import GRDBSQLite

/// Facts about the SQLite library BatchStore runs on: public, as an app using BatchStore cannot
/// reach SQLite itself (GRDB and its SQLite module stay inside) and wants the version in its logs
/// and bug reports.
public enum SQLiteInfo {
    /// `sqlite3_libversion()`, e.g. `3.40.1`.
    public static var version: String { String(cString: sqlite3_libversion()) }
}
