import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// `:w FILE`: the result on screen written in the format its extension names, streamed like
/// `faultline export`, with progress; Esc leaves no file; an existing file needs `:w!`.
@Suite("Writing the result: :w FILE")
struct WriteTests {

    func browser(_ path: String, filter: String = "", sort: String? = nil) throws -> (Browser, MemoryTerminal) {
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "movie", filter: filter, sort: sort, batchSize: 3),
                            backend: term, environment: FakeFacts().environment)
        b.start()
        return (b, term)
    }

    func command(_ b: Browser, _ text: String) {
        b.send([.char(":")] + keys(text) + [.enter])
    }

    @Test("reducer: :w FILE and :w! FILE ask for the write of the result on screen; :w alone explains; :N still goes to a row")
    func reducer() {
        var s = BrowserState(width: 80, height: 10)
        _ = s.reduce(.opened(table: "t", columns: ["a"], filter: "", sort: nil, count: 50, cursor: 0, readOnly: nil, message: nil, result: 7))
        for (text, expected) in [("w /tmp/x.csv", Effect.write(path: "/tmp/x.csv", overwrite: false, result: 7)),
                                 ("w! out.tsv ", Effect.write(path: "out.tsv", overwrite: true, result: 7))] {
            _ = s.reduce(.key(.char(":")))
            for c in text { _ = s.reduce(.key(.char(c))) }
            #expect(s.reduce(.key(.enter)).contains(expected))
        }
        _ = s.reduce(.key(.char(":")))
        _ = s.reduce(.key(.char("w")))
        _ = s.reduce(.key(.enter))
        #expect(s.messageIsError && s.message?.hasPrefix("usage: :w FILE") == true)
        #expect(s.mode == .prompt(.goToRow, text: "w"))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.key(.char(":")))
        _ = s.reduce(.key(.char("9")))
        _ = s.reduce(.key(.enter))
        #expect(s.cursorRow == 8)
        _ = s.reduce(.started(.writing))
        _ = s.reduce(.writeProgress(path: "/tmp/x.csv", rows: 250_000, of: 1_000_000, seconds: 1.25))
        #expect(render(s, colors: false).lines.last?.hasPrefix("writing /tmp/x.csv: 250,000 of 1,000,000 rows (25%), 1.3 s (Esc cancels)") == true, "\(s.message ?? "")")
        #expect(s.reduce(.key(.escape)) == [.cancel], "Esc cancels the write")
        _ = s.reduce(.writeEnded("done", error: false))
        #expect(s.running == nil)
    }

    @Test("each format is byte for byte what faultline export writes for the same filter and sort", arguments: ["tsv", "csv", "ndjson", "json"])
    func sameAsExport(format: String) throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let (b, term) = try browser(path, filter: "year >= 1960", sort: "year desc")
        let out = dir.path("out.\(format)")
        command(b, "w \(out)")
        let exported = try CLI.run(["export", path, "--table", "movie", "--where", "year >= 1960", "--sort", "year desc", "--format", format])
        #expect(exported.status == 0)
        let written = try Data(contentsOf: URL(fileURLWithPath: out))
        #expect(written == Data(exported.stdout.utf8) && written.count > 100)
        #expect(b.state.message?.hasPrefix("wrote 6 rows to \(out) (\(format == "ndjson" ? "NDJSON" : format.uppercased())) in ") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["out.\(format)", "test.sqlite"], "no temporary file left")
    }

    @Test(".json writes one JSON array that faultline import reads back to the same rows; .ndjson and .jsonl an object a line; .sql writes INSERTs that SQLite reads back to the same rows, blobs and NULLs included")
    func jsonAndSQL() throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let (b, _) = try browser(path)
        command(b, "w \(dir.path("m.json"))")
        let array = try Data(contentsOf: URL(fileURLWithPath: dir.path("m.json")))
        let objects = try #require(try JSONSerialization.jsonObject(with: array) as? [[String: Any]])
        let ndjson = try CLI.run(["export", path, "--table", "movie", "--format", "ndjson"]).stdout
        let lines = try ndjson.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 7 && objects.count == lines.count)
        #expect(zip(objects, lines).allSatisfy { NSDictionary(dictionary: $0) == NSDictionary(dictionary: $1) }, "the array holds NDJSON's objects")
        #expect(String(decoding: array, as: UTF8.self) == "[\n" + ndjson.split(separator: "\n").joined(separator: ",\n") + "\n]\n")
        command(b, "w \(dir.path("m.jsonl"))")
        #expect(try String(contentsOfFile: dir.path("m.jsonl"), encoding: .utf8) == ndjson)
        // What :w wrote as .json, import reads as .json: the same rows.
        let back = try makeDatabase(dir, "back.sqlite", sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL, poster BLOB)")
        let imported = try CLI.run(["import", back, dir.path("m.json"), "--table", "movie"])
        #expect(imported.status == 0, "\(imported.stderr)")
        let everything = "SELECT id, quote(title), quote(year), quote(rating), quote(poster) FROM movie ORDER BY id"
        #expect(try sqlite3(back, everything) == (try sqlite3(path, everything)))
        command(b, "w \(dir.path("m.sql"))")
        let copy = try makeDatabase(dir, "copy.sqlite", sql: "CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL, poster BLOB)")
        let sql = try String(contentsOfFile: dir.path("m.sql"), encoding: .utf8)
        #expect(sql.hasPrefix("INSERT INTO \"movie\" (\"id\", \"title\", \"year\", \"rating\", \"poster\") VALUES (1, 'Ran', 1985, 8.2, NULL);\n"))
        try direct(copy) { db in try db.execute(sql: sql) }
        let query = "SELECT id, quote(title), year, quote(rating), quote(poster), typeof(rating) FROM movie ORDER BY id"
        #expect(try sqlite3(copy, query) == (try sqlite3(path, query)))
    }

    @Test("an existing file is refused and kept; :w! replaces it; an unknown extension is refused")
    func existing() throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let (b, term) = try browser(path)
        let out = dir.path("keep.csv")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: out))
        command(b, "w \(out)")
        #expect(b.state.message == "\(out) exists: :w! \(out) overwrites it" && b.state.messageIsError)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "precious")
        #expect(b.state.mode == .prompt(.goToRow, text: "w \(out)"), "the command comes back to fix")
        b.send(.escape)
        command(b, "w! \(out)")
        #expect(try String(contentsOfFile: out, encoding: .utf8).hasPrefix("id,title,year,rating,poster\r\n1,Ran,1985,8.2,\r\n"))
        command(b, "w \(dir.path("x.xlsx"))")
        #expect(b.state.message == "\(dir.path("x.xlsx")): the extension names the format: .tsv, .csv, .json, .ndjson, .sql")
        #expect(!FileManager.default.fileExists(atPath: dir.path("x.xlsx")))
    }

    @Test("Esc while writing 1.5M rows cancels: progress was shown, and no file (not even a temporary one) is left")
    func cancel() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000)
            INSERT INTO n SELECT x, x % 10, 'row ' || x FROM c;
            """)
        let term = MemoryTerminal(width: 100, height: 12)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: "n"), backend: term)
        b.start()
        term.keys = Array(repeating: .resize, count: 4) + [.escape]
        let frames = term.framesPresented
        command(b, "w \(dir.path("big.tsv"))")
        #expect(b.state.message?.hasPrefix("writing \(dir.path("big.tsv")) cancelled after ") == true, "\(b.state.message ?? "")")
        #expect(b.state.message?.hasSuffix("rows: no file written") == true)
        #expect(term.framesPresented > frames + 3, "progress frames while writing")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["test.sqlite"])
        #expect(b.state.running == nil && b.state.count == 1_500_000)
    }

    /// `~` is the `HOME` the browser runs with (found by a new-user trial: it was the account's
    /// home from the user database, so `:w ~/p.csv` under another HOME wrote to /root).
    @Test func tildeIsTheHomeTheUserRunsWith() {
        #expect(BrowserState.expandingTilde("~/p.csv", home: "/tmp/h") == "/tmp/h/p.csv")
        #expect(BrowserState.expandingTilde("~", home: "/tmp/h") == "/tmp/h")
        #expect(BrowserState.expandingTilde("a/~/p.csv", home: "/tmp/h") == "a/~/p.csv")
        #expect(BrowserState.expandingTilde("/abs/p.csv", home: "/tmp/h") == "/abs/p.csv")
        #expect(BrowserState.expandingTilde("~/p.csv", home: nil) == ("~/p.csv" as NSString).expandingTildeInPath)
    }
}
