import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// Enter on a foreign-key cell opens the row it refers to; `R` opens the rows that refer to this
/// one: to-one and to-many, a composite key into a WITHOUT ROWID table, and the refusals.
@Suite("Relationships: Enter on a foreign key, R for the rows that refer here")
struct RelationshipTests {
    /// director ← movie.director_id, director ← award.director_id; studio (WITHOUT ROWID, key
    /// code + region) ← release(studio_code, studio_region); movie ← release.movie_id; nokey
    /// (no primary key) ← orphan.ref. Movie 3's director is NULL, movie 4's is 99 (dangles),
    /// movie 5's a blob.
    func schema(_ dir: TempDir) throws -> String {
        try withoutForeignKeys(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, director_id INTEGER REFERENCES director(id));
            CREATE TABLE award(id INTEGER PRIMARY KEY, director_id INTEGER REFERENCES director, prize TEXT);
            CREATE TABLE studio(code TEXT, region TEXT, name TEXT, PRIMARY KEY(code, region)) WITHOUT ROWID;
            CREATE TABLE release(id INTEGER PRIMARY KEY, movie_id INTEGER REFERENCES movie, studio_code TEXT, studio_region TEXT,
              FOREIGN KEY(studio_code, studio_region) REFERENCES studio(code, region));
            CREATE TABLE nokey(a, b);
            CREATE TABLE orphan(id INTEGER PRIMARY KEY, ref REFERENCES nokey);
            INSERT INTO director VALUES (1, 'Kurosawa'), (2, 'Varda'), (3, 'Ozu');
            INSERT INTO movie VALUES (1, 'Ran', 1), (2, 'Cleo', 2), (3, 'Nobody', NULL), (4, 'Lost', 99), (5, 'Blob', X'01'), (6, 'Ikiru', 1);
            INSERT INTO award VALUES (1, 1, 'Lion'), (2, 2, 'Bear'), (3, 1, 'Palm');
            INSERT INTO studio VALUES ('T', 'JP', 'Toho'), ('T', 'EU', 'Tobis'), ('C', 'FR', 'Cine');
            INSERT INTO release VALUES (1, 1, 'T', 'JP'), (2, 6, 'T', 'JP'), (3, 2, 'C', 'FR'), (4, 1, 'T', 'EU');
            INSERT INTO orphan VALUES (1, 7);
            """)
    }

    /// A database made with foreign keys unenforced (as SQLite's default is), so keys may dangle.
    func withoutForeignKeys(_ dir: TempDir, _ name: String = "test.sqlite", sql: String) throws -> String {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let path = dir.path(name)
        try DatabaseQueue(path: path, configuration: configuration).writeWithoutTransaction { try $0.execute(sql: sql) }
        return path
    }

    /// The effects of `action` other than loading rows.
    func effects(_ s: inout BrowserState, _ action: Action) -> [Effect] {
        s.reduce(action).filter { if case .loadWindow = $0 { return false } else { return true } }
    }

    func browser(_ path: String, table: String, width: Int = 80, height: Int = 12) throws -> (Browser, MemoryTerminal) {
        let term = MemoryTerminal(width: width, height: height)
        let b = try Browser(store: try PersistentStore(path: path), options: BrowserOptions(table: table, batchSize: 5), backend: term,
                            environment: FakeFacts().environment)
        b.start()
        return (b, term)
    }

    /// The state after `movie` opened with its links, rows loaded, the cursor on `column`.
    func movieState(column: Int) -> BrowserState {
        var s = BrowserState(width: 60, height: 10, databaseName: "db.sqlite")
        let links = TableLinks(toOne: [Reference(child: "movie", childColumns: ["director_id"], parent: "director", parentColumns: ["id"])])
        _ = s.reduce(.opened(table: "movie", columns: ["id", "title", "director_id"], filter: "", sort: nil, count: 6, cursor: 0, readOnly: nil,
                             message: nil, result: 3, links: links))
        _ = s.reduce(.windowLoaded(start: 0, rows: (1...6).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("t"), .text("1")], exists: true) }))
        for _ in 0..<column { _ = s.reduce(.key(.char("l"))) }
        return s
    }

    @Test("reducer: Enter on a foreign-key cell follows it, on any other cell shows the record; R without keys into the table says so")
    func reducerEnter() {
        var s = movieState(column: 2)
        _ = s.reduce(.key(.char("j")))
        let reference = Reference(child: "movie", childColumns: ["director_id"], parent: "director", parentColumns: ["id"])
        #expect(s.reduce(.key(.enter)) == [.openRelated(reference, toMany: false, row: 1, result: 3)])
        _ = s.reduce(.key(.char("h")))
        #expect(s.reduce(.key(.enter)) == [.loadRecord(row: 1)])
        #expect(s.reduce(.key(.char("R"))) == [])
        #expect(s.messageIsError && s.message == "no table refers to movie: R opens the rows whose foreign keys point to this row")
    }

    @Test("reducer: R with one key into the table opens it; with two it asks which by number, refuses a wrong one, and the screen lists them")
    func reducerR() {
        var s = BrowserState(width: 70, height: 8, databaseName: "db.sqlite")
        let movie = Reference(child: "movie", childColumns: ["director_id"], parent: "director", parentColumns: ["id"])
        let award = Reference(child: "award", childColumns: ["director_id"], parent: "director", parentColumns: ["id"])
        _ = s.reduce(.opened(table: "director", columns: ["id", "name"], filter: "", sort: nil, count: 3, cursor: 1, readOnly: nil,
                             message: nil, result: 4, links: TableLinks(toMany: [movie])))
        #expect(effects(&s, .key(.char("R"))) == [.openRelated(movie, toMany: true, row: 1, result: 4)])
        _ = s.reduce(.opened(table: "director", columns: ["id", "name"], filter: "", sort: nil, count: 3, cursor: 1, readOnly: nil,
                             message: nil, result: 5, links: TableLinks(toMany: [movie, award])))
        #expect(effects(&s, .key(.char("R"))) == [])
        #expect(s.mode == .prompt(.referencing, text: ""))
        #expect(render(s, colors: false).lines.last?.hasPrefix("rows of 1 movie(director_id), 2 award(director_id): ") == true)
        _ = s.reduce(.key(.char("3")))
        #expect(effects(&s, .key(.enter)) == [])
        #expect(s.messageIsError && s.message == "not one of 1–2: 3")
        #expect(s.mode == .prompt(.referencing, text: "3"), "the prompt stays to fix the number")
        _ = s.reduce(.key(.backspace))
        _ = s.reduce(.key(.char("2")))
        #expect(effects(&s, .key(.enter)) == [.openRelated(award, toMany: true, row: 1, result: 5)])
    }

    @Test("session: Enter on director_id opens the director as a sheet (whole screen); Esc comes back to the movie row")
    func toOne() throws {
        let dir = TempDir()
        let (b, term) = try browser(try schema(dir), table: "movie")
        b.send(keys("jjjjjll"))
        b.send(.enter)
        #expect(term.text == [
            "  #  id name",
            "  1  1  Kurosawa",
            "", "", "", "", "", "", "", "",
            " test.sqlite › movie › director │ row 1 of 1 │ filter: id == 1           ? help",
            "the director row director_id refers to: 1 row in 10 ms (IDs in SQLite, rows fau…",
        ])
        #expect(b.state.sheetPath == ["test.sqlite", "movie", "director"] && b.state.filter == "id == 1")
        b.send(.escape)
        #expect(b.state.table == "movie" && b.state.cursorRow == 5 && b.state.currentColumnName == "director_id" && b.state.sheetDepth == 0)
    }

    @Test("session: R on a director with two keys into it: the prompt, then the director's movies, counted as SQLite counts them")
    func toMany() throws {
        let dir = TempDir()
        let path = try schema(dir)
        let (b, term) = try browser(path, table: "director")
        b.send(.char("R"))
        #expect(term.text.last == "rows of 1 award(director_id), 2 movie(director_id):")
        b.send(keys("2"))
        b.send(.enter)
        let expected = try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE director_id = 1") ?? -1 }
        #expect(b.state.table == "movie" && b.state.count == expected && expected == 2)
        #expect(b.state.filter == "director_id == 1" && b.state.sheetPath == ["test.sqlite", "director", "movie"])
        #expect(term.text[1] == "  1  1  Ran   1" && term.text[2] == "  2  6  Ikiru 1")
        b.send(.escape)
        b.send(keys("jR1"))
        b.send(.enter)
        #expect(b.state.table == "award" && b.state.filter == "director_id == 2" && b.state.count == 1)
    }

    @Test("an edit two sheets up shrinks the table below: coming back reads it again, and the rows it asked for past its new end show as nothing, not a crash")
    func backToAShrunkTable() throws {
        let dir = TempDir()
        let path = try withoutForeignKeys(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, director_id INTEGER REFERENCES director(id));
            INSERT INTO director VALUES (1, 'Kurosawa'), (2, 'Varda');
            INSERT INTO movie VALUES (1, 'Ran', 1), (2, 'Cleo', 2), (3, 'Nobody', NULL), (4, 'Lost', 99), (5, 'Blob', 2), (6, 'Ikiru', 1);
            """)
        let (b, term) = try browser(path, table: "movie")
        // The last movie (Ikiru, director 1), its director, then the director's movies: D y deletes both.
        b.send(keys("Gcd") + [.tab, .enter, .enter])
        #expect(b.state.table == "director" && b.state.sheetDepth == 1)
        b.send(.char("R"))
        #expect(b.state.table == "movie" && b.state.count == 2 && b.state.sheetDepth == 2, "\(b.state.message ?? "")")
        b.send(keys("Dy"))
        #expect(b.state.message?.hasPrefix("deleted 2 rows from movie") == true, "\(b.state.message ?? "")")
        b.send(.escape)
        #expect(b.state.table == "director" && b.state.sheetDepth == 1)
        // Below, movie had 6 rows and its cursor on the 6th: the screen asks for rows 1-6 before the reload says 4.
        b.send(.escape)
        let left = try direct(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") ?? -1 }
        #expect(left == 4 && b.state.table == "movie" && b.state.sheetDepth == 0 && b.state.count == 4)
        #expect(b.state.cursorRow == 3, "the nearest survivor of row 6")
        #expect(term.text[1].hasPrefix("  1  1") == false && term.text[4].contains("Blob") && term.text[5].trimmingCharacters(in: .whitespaces).isEmpty,
                "\(term.text)")
    }

    @Test("composite key into a WITHOUT ROWID table, both ways: Enter on studio_region opens (T, EU); R on studio T/JP opens its two releases")
    func compositeWithoutRowid() throws {
        let dir = TempDir()
        let path = try schema(dir)
        let (b, _) = try browser(path, table: "release")
        b.send(keys("jjjlll"))
        #expect(b.state.currentColumnName == "studio_region")
        b.send(.enter)
        #expect(b.state.table == "studio" && b.state.filter == "code == \"T\" AND region == \"EU\"" && b.state.count == 1)
        #expect(b.state.snapshot(0)?.values == [.text("T"), .text("EU"), .text("Tobis")])
        b.send(.escape)
        let (s, _) = try browser(path, table: "studio")
        // studio is WITHOUT ROWID, sorted by its key: C/FR, T/EU, T/JP.
        s.send(keys("jj"))
        s.send(.char("R"))
        #expect(s.state.table == "release" && s.state.filter == "studio_code == \"T\" AND studio_region == \"JP\"")
        let expected = try direct(path) { db in try Int.fetchAll(db, sql: "SELECT id FROM release WHERE studio_code = 'T' AND studio_region = 'JP' ORDER BY id") }
        #expect(s.state.count == expected.count && expected == [1, 2])
        #expect((0..<s.state.count).map { s.state.snapshot($0)?.values.first } == expected.map { .text("\($0)") })
    }

    @Test("refused or empty, one message line each, and nothing pushed: NULL key, dangling key, blob key, a parent with no primary key, a row nothing refers to")
    func refusals() throws {
        let dir = TempDir()
        let path = try schema(dir)
        let (b, term) = try browser(path, table: "movie", width: 140)
        b.send(keys("jjll"))
        b.send(.enter)
        #expect(b.state.sheetDepth == 0 && !b.state.messageIsError)
        #expect(term.text.last == "director_id is ∅: this row refers to no director row")
        b.send(.char("j"))
        b.send(.enter)
        #expect(b.state.sheetDepth == 0 && b.state.messageIsError)
        #expect(term.text.last == "no director row has id == 99: director_id dangles (the row it names does not exist)")
        b.send(.char("j"))
        b.send(.enter)
        #expect(b.state.sheetDepth == 0 && b.state.messageIsError)
        #expect(term.text.last == "director_id holds a blob: the filter language has no literal for it, so the key cannot be followed")
        let (o, oterm) = try browser(path, table: "orphan", width: 140)
        o.send(.char("l"))
        o.send(.enter)
        #expect(o.state.sheetDepth == 0 && o.state.messageIsError)
        #expect(oterm.text.last == "orphan(ref) refers to nokey, which declares no primary key: SQLite cannot resolve that key, so it cannot be followed")
        let (d, _) = try browser(path, table: "director", width: 140)
        d.send(keys("jjR2"))
        d.send(.enter)
        #expect(d.state.table == "movie" && d.state.count == 0 && d.state.sheetDepth == 1, "Ozu has no movies: an empty sheet says so")
    }

    @Test("with several files open, keys are not followed (a key could name a row in each file)")
    func severalStores() throws {
        let dir = TempDir()
        let a = try schema(dir)
        let other = try withoutForeignKeys(dir, "b.sqlite", sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, director_id INTEGER REFERENCES director(id));
            INSERT INTO director VALUES (1, 'Other'); INSERT INTO movie VALUES (1, 'Elsewhere', 1);
            """)
        let term = MemoryTerminal(width: 140, height: 12)
        let coordinator = try PersistentStoreCoordinator(stores: [a, other].map { try PersistentStore(path: $0) })
        let b = try Browser(coordinator: coordinator, options: BrowserOptions(table: "movie", batchSize: 5), backend: term, environment: FakeFacts().environment)
        b.start()
        b.send(keys("lll"))
        #expect(b.state.currentColumnName == "director_id")
        b.send(.enter)
        #expect(b.state.sheetDepth == 0 && b.state.messageIsError)
        #expect(term.text.last == "keys are followed within one file: with several files open, director_id could name a row in each")
    }
}
