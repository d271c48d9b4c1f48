import BatchStore
import Foundation
import GRDB

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
            var config = Configuration()
            config.label = "DemoDatabase"
            let queue = try DatabaseQueue(path: path, configuration: config)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA synchronous = OFF")
                try db.inTransaction {
                    // Tables first, indexes after the rows: much faster to build.
                    let parts = schemaSQL.components(separatedBy: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
                    for part in parts where !part.hasPrefix("CREATE INDEX") { try db.execute(sql: part) }
                    var rng = SplitMix64(seed: 0x5EED_F417)
                    let d = try db.makeStatement(sql: "INSERT INTO director (id, name, born) VALUES (?, ?, ?)")
                    for i in 1...directors {
                        let name = "\(firstNames[rng.below(firstNames.count)]) \(lastNames[rng.below(lastNames.count)])"
                        try d.execute(arguments: [i, name, 1900 + rng.below(90)])
                    }
                    let m = try db.makeStatement(sql: "INSERT INTO movie (id, title, year, rating, votes, genre, director_id) VALUES (?, ?, ?, ?, ?, ?, ?)")
                    let step = max(1, rows / 100)
                    for i in 0..<rows {
                        let title = "The \(adjectives[rng.below(adjectives.count)]) \(nouns[rng.below(nouns.count)]) \(1 + rng.below(999))"
                        let year = 1920 + rng.below(106)
                        let rating: Double? = rng.below(50) == 0 ? nil : Double(10 + rng.below(91)) / 10
                        let votesRoll = rng.below(1000)
                        let votes = votesRoll * votesRoll * 2 + rng.below(1000)
                        let genre = genres[rng.below(genres.count)]
                        let director: Int? = rng.below(100) == 0 ? nil : 1 + rng.below(directors)
                        try m.execute(arguments: [i + 1, title, year, rating, votes, genre, director])
                        if i % step == 0 { progress?(Double(i) / Double(max(rows, 1))) }
                    }
                    for part in parts where part.hasPrefix("CREATE INDEX") { try db.execute(sql: part) }
                    return .commit
                }
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
            progress?(1)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
            throw BatchStoreError.wrap(error, context: path)
        }
    }
}
