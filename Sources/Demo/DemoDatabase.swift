import BatchStore
import Foundation
import GRDBSQLite

/// Builds the deterministic demo database: `movie(id, title, year, rating, votes, genre,
/// director_id)` and `director(id, name, born)`, with the indexes a real app would have.
///
/// The same row count always gives the same file contents (a fixed-seed SplitMix64 generator).
/// Titles include accented, CJK and emoji text so the browser's width handling is exercised.
public enum DemoDatabase {
    /// The schema, as SQL. `title`, `rating` and `votes` are deliberately unindexed.
    public static let schemaSQL = """
        CREATE TABLE director (
          id INTEGER PRIMARY KEY,
          name TEXT NOT NULL,
          born INTEGER
        );
        CREATE TABLE movie (
          id INTEGER PRIMARY KEY,
          title TEXT NOT NULL,
          year INTEGER NOT NULL,
          rating REAL,
          votes INTEGER NOT NULL DEFAULT 0,
          genre TEXT NOT NULL,
          director_id INTEGER REFERENCES director(id) ON DELETE SET NULL
        );
        CREATE INDEX movie_year ON movie(year);
        CREATE INDEX movie_genre_year ON movie(genre, year);
        CREATE INDEX movie_director ON movie(director_id);
        CREATE INDEX director_name ON director(name);
        """

    static let adjectives = ["Silent", "Last", "Crimson", "Hidden", "Broken", "Golden", "Endless", "Lost", "Burning", "Quiet",
                             "Northern", "Electric", "Hollow", "Secret", "Wild", "Frozen", "Midnight", "Paper", "Iron", "Velvet",
                             "Café", "Mañana", "Ölfarben", "Żółty"]
    static let nouns = ["River", "City", "Garden", "Machine", "Empire", "Harbor", "Forest", "Mirror", "Station", "Summer",
                        "Letter", "Kingdom", "Signal", "Horizon", "Orchard", "Theory", "Island", "Archive", "Voyage", "Detour",
                        "東京物語", "七人の侍", "Кино", "🎬 Reel"]
    package static let genres = ["Drama", "Comedy", "Thriller", "Documentary", "Animation", "Horror", "Romance", "Sci-Fi", "Western", "Noir"]
    static let firstNames = ["Akira", "Agnès", "Ingmar", "Federico", "Kathryn", "Satyajit", "Chantal", "Wong", "Jane", "Andrei",
                             "Céline", "Bong", "Lucrecia", "Abbas", "Claire", "Yasujirō", "Sergio", "Greta", "Hayao", "Ousmane"]
    static let lastNames = ["Kurosawa", "Varda", "Bergman", "Fellini", "Bigelow", "Ray", "Akerman", "Kar-wai", "Campion", "Tarkovsky",
                            "Sciamma", "Joon-ho", "Martel", "Kiarostami", "Denis", "Ozu", "Leone", "Gerwig", "Miyazaki", "Sembène"]

    /// Directors for a given number of movies (one per 50, at least 10).
    public static func directorCount(forMovies movies: Int) -> Int { max(10, movies / 50) }

    /// Creates `path` (which must not exist) with `rows` movies.
    /// - Parameter progress: called with the fraction done, about every 1% of rows.
    /// - Complexity: O(rows); one transaction, one prepared statement per table.
    public static func create(at path: String, rows: Int, progress: ((Double) -> Void)? = nil) throws {
        guard rows >= 0 else { throw BatchStoreError(.invalidArgument, "--rows must not be negative") }
        if FileManager.default.fileExists(atPath: path) {
            throw BatchStoreError(.invalidArgument, "\(path) already exists; the demo database is only written to a new file")
        }
        let directors = directorCount(forMovies: rows)
        do {
            let db = try DemoConnection(creating: path)
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("PRAGMA synchronous = OFF")
            try db.execute("BEGIN DEFERRED TRANSACTION")
            // Tables first, indexes after the rows: much faster to build.
            let parts = schemaSQL.components(separatedBy: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
            for part in parts where !part.hasPrefix("CREATE INDEX") { try db.execute(part) }
            var rng = SplitMix64(seed: 0x5EED_F417)
            let d = try db.prepare("INSERT INTO director (id, name, born) VALUES (?, ?, ?)")
            for i in 1...directors {
                let name = "\(firstNames[rng.below(firstNames.count)]) \(lastNames[rng.below(lastNames.count)])"
                try d.execute([.integer(Int64(i)), .text(name), .integer(Int64(1900 + rng.below(90)))])
            }
            let m = try db.prepare("INSERT INTO movie (id, title, year, rating, votes, genre, director_id) VALUES (?, ?, ?, ?, ?, ?, ?)")
            let step = max(1, rows / 100)
            for i in 0..<rows {
                let title = "The \(adjectives[rng.below(adjectives.count)]) \(nouns[rng.below(nouns.count)]) \(1 + rng.below(999))"
                let year = 1920 + rng.below(106)
                let rating: SQLValue = rng.below(50) == 0 ? .null : .real(Double(10 + rng.below(91)) / 10)
                let votesRoll = rng.below(1000)
                let votes = votesRoll * votesRoll * 2 + rng.below(1000)
                let genre = genres[rng.below(genres.count)]
                let director: SQLValue = rng.below(100) == 0 ? .null : .integer(Int64(1 + rng.below(directors)))
                try m.execute([.integer(Int64(i + 1)), .text(title), .integer(Int64(year)), rating, .integer(Int64(votes)), .text(genre), director])
                if i % step == 0 { progress?(Double(i) / Double(max(rows, 1))) }
            }
            for part in parts where part.hasPrefix("CREATE INDEX") { try db.execute(part) }
            try db.execute("COMMIT TRANSACTION")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            progress?(1)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
            throw error
        }
    }
}

/// The demo's connection: SQLite's C API directly, as GRDB lives in the engine only. Failures are
/// BatchStore errors, worded as the engine words them.
private final class DemoConnection {
    let db: OpaquePointer
    let path: String

    /// Opens `path` for writing, creating it.
    init(creating path: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_close(handle)
            throw BatchStoreError.sqlite(code, message: String(cString: sqlite3_errstr(code)), context: path)
        }
        db = handle
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_exec(db, "PRAGMA foreign_keys = ON", nil, nil, nil)
    }

    deinit { sqlite3_close_v2(db) }

    func check(_ code: Int32) throws {
        guard code == SQLITE_OK || code == SQLITE_DONE else {
            throw BatchStoreError.sqlite(sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), context: path)
        }
    }

    func execute(_ sql: String) throws { try check(sqlite3_exec(db, sql, nil, nil, nil)) }

    func prepare(_ sql: String) throws -> Statement {
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(db, sql, -1, &stmt, nil))
        return Statement(connection: self, stmt: stmt)
    }

    /// A prepared statement, run once per row of values.
    final class Statement {
        let connection: DemoConnection
        let stmt: OpaquePointer?
        init(connection: DemoConnection, stmt: OpaquePointer?) {
            self.connection = connection
            self.stmt = stmt
        }
        deinit { sqlite3_finalize(stmt) }

        /// Binds `values` (integers, reals, text, NULL) and steps once.
        func execute(_ values: [SQLValue]) throws {
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            for (i, value) in values.enumerated() {
                let index = Int32(i + 1)
                switch value {
                case .integer(let n): sqlite3_bind_int64(stmt, index, n)
                case .real(let d): sqlite3_bind_double(stmt, index, d)
                case .text(let t): sqlite3_bind_text(stmt, index, t, -1, transient)
                default: sqlite3_bind_null(stmt, index)
                }
            }
            defer { sqlite3_reset(stmt) }
            try connection.check(sqlite3_step(stmt))
        }
    }
}
