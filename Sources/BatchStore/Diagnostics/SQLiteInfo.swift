import GRDBSQLite

/// Facts about the SQLite library BatchStore runs on.
public enum SQLiteInfo {
    /// `sqlite3_libversion()`, e.g. `3.40.1`.
    public static var version: String { String(cString: sqlite3_libversion()) }
}
