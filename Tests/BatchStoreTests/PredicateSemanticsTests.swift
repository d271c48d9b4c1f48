import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// NSPredicate's meaning, item by item: Apple's Predicate Programming Guide (format string syntax)
/// and NSComparisonPredicate's documented behaviour are the reference; the SQL follows them.
@Suite struct PredicateSemanticsTests {
    static let sql = """
        CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, genre TEXT, year INTEGER, rating REAL,
                           released DATE, extra, director_id INTEGER REFERENCES director(id));
        INSERT INTO director VALUES (1, 'Akira Kurosawa'), (2, 'Agnès Varda');
        INSERT INTO movie VALUES
          (1, 'Rashomon', 'Drama', 1950, 8.2, '1950-08-25', 10, 1),
          (2, 'Ran', 'Drama', 1985, 8.2, '1985-06-01', '10', 1),
          (3, 'Cléo de 5 à 7', 'Comedy', 1962, 7.8, '1962-04-11', 'ten', 2),
          (4, 'Le Bonheur', NULL, 2000, NULL, NULL, x'0a', 2),
          (5, 'Éclair', 'drama', 2001, 5.0, '2001', 2.5, NULL),
          (6, '', NULL, NULL, 1.0, NULL, NULL, NULL),
          (7, 'Dr. Strangelove', 'Dr', 8, 8.4, '1964-01-29', 'Dr', NULL),
          (8, 'Ikiru', 'Drama', 1952, 8.3, '1952-10-09', -1, 1);
        """

    final class Fixture {
        let dir = TempDir()
        let context: ManagedObjectContext
        init() throws {
            let store = try PersistentStore(path: try makeDatabase(dir, sql: PredicateSemanticsTests.sql))
            context = try ManagedObjectContext(store: store)
        }
        func ids(_ format: String, _ args: [PredicateArgument] = []) throws -> [Int64] {
            let p = try FetchPredicate(format: format, arguments: args)
            return try context.fetchAll(FetchRequest(entityName: "movie", predicate: p)).map(\.intID)
        }
        func error(_ format: String) -> String {
            do { _ = try ids(format); return "no error" } catch let e as BatchStoreError { return e.message } catch { return "\(error)" }
        }
    }

    @Test("logic is two-valued: NOT P is exactly the complement of P, for every operator")
    func notIsTheComplement() throws {
        let f = try Fixture()
        let all: [Int64] = Array(1...8)
        let predicates = [
            "genre == 'Drama'", "genre != 'Drama'", "year > 1960", "year <= 1985", "rating < 8", "rating >= 8.2",
            "genre IN {'Drama', 'Comedy'}", "genre IN {'Drama', nil}", "year BETWEEN {1950, 1990}",
            "genre BEGINSWITH 'Dr'", "genre ENDSWITH 'ma'", "genre CONTAINS 'ram'", "genre LIKE 'D*a'", "genre MATCHES 'D.*'",
            "genre ==[c] 'drama'", "title CONTAINS[cd] 'cleo'", "'Dr' IN genre", "director.name BEGINSWITH 'Ak'",
            "director.name != 'Akira Kurosawa'", "extra > 5", "extra == '10'", "released > '1960'", "year / 4 > 490",
            "year ** 2 > 4000000", "-year < -1960", "genre == nil", "genre != nil", "year + rating > 1990",
        ]
        for p in predicates {
            let yes = try f.ids(p)
            let no = try f.ids("NOT (\(p))")
            #expect(Set(yes).isDisjoint(with: no), "\(p): a row is in both P and NOT P")
            #expect((yes + no).sorted() == all, "\(p): P and NOT P together must be every row; P \(yes), NOT P \(no)")
        }
        #expect(try f.ids("NOT (genre == 'Drama')") == [3, 4, 5, 6, 7], "NULL genres are not Drama")
        #expect(try f.ids("genre NOT IN {'Drama'}") == [3, 4, 5, 6, 7])
        #expect(try f.ids("NOT (director.name == 'Akira Kurosawa')") == [3, 4, 5, 6, 7], "a missing director is not Kurosawa")
        #expect(try f.ids("NOT (year < 1960)") == [2, 3, 4, 5, 6], "a NULL year is not < 1960")
        #expect(try f.ids("year < nil").isEmpty && f.ids("NOT (year < nil)") == all, "ordering against nil is false")
    }

    @Test("arithmetic: / divides as floating point, ** raises to a power, unary minus")
    func arithmetic() throws {
        let f = try Fixture()
        #expect(try f.ids("id / 4 == 2") == [8], "8 / 4 is 2; 9 / 4 would be 2.25, not 2")
        #expect(try f.ids("id / 4 == 1.75") == [7])
        #expect(try f.ids("id ** 2 == 49") == [7])
        #expect(try f.ids("2 ** 3 ** 2 == 512 AND id == 1") == [1], "** is right-associative")
        #expect(try f.ids("-id == -3") == [3])
        #expect(try f.ids("-(id + 1) < -7") == [7, 8])
        #expect(f.error("title + 1 > 2").contains("needs numbers"))
        #expect(try f.ids("id * 2 - 1 == 5") == [3])
    }

    @Test("no implicit type conversion between numbers and strings")
    func noImplicitConversion() throws {
        let f = try Fixture()
        #expect(try f.ids("year == '2001'").isEmpty, "the integer 2001 is not the string \"2001\"")
        #expect(try f.ids("year == 2001") == [5])
        #expect(try f.ids("year != '2001'").count == 8)
        #expect(try f.ids("year IN {'2001', 1950}") == [1])
        #expect(try f.ids("title == 5").isEmpty)
        #expect(try f.ids("extra == 10") == [1], "an untyped column holds 10 and '10': only the number matches")
        #expect(try f.ids("extra == '10'") == [2])
        #expect(try f.ids("extra > 5") == [1], "only numbers order against numbers")
        #expect(try f.ids("extra > 'a'") == [3], "only text orders against text")
        #expect(try f.ids("released >= '1960' AND released < '1990'") == [2, 3, 7], "a DATE column's text compares as text")
        #expect(try f.ids("released == '2001'").isEmpty, "a DATE column stored '2001' as the integer 2001")
        #expect(try f.ids("released == 2001") == [5])
        #expect(try f.ids("released BEGINSWITH '19'") == [1, 2, 3, 7, 8])
        #expect(f.error("year < '2001'") == "cannot order year (INTEGER column) (number) against \"2001\" (text) with <: NSPredicate compares numbers with numbers and text with text")
        #expect(f.error("title > 5").contains("cannot order title (TEXT column)"))
        #expect(f.error("year BEGINSWITH '19'") == "BEGINSWITH compares text, and year is an INTEGER column")
        #expect(f.error("title CONTAINS 5") == "CONTAINS compares text, and 5 is a number")
    }

    @Test("key names are case-sensitive; a wrong case suggests the right name")
    func caseSensitiveKeys() throws {
        let f = try Fixture()
        #expect(f.error("Title == 'Ran'") == "movie has no column named \"Title\" (column 1); did you mean \"title\"? (names are case-sensitive)")
        #expect(f.error("Director.name == 'x'").contains("did you mean \"director\"?"))
        #expect(f.error("director.Name == 'x'").contains("director has no column named \"Name\" (column 1); did you mean \"name\"?"))
        #expect(f.error("titel == 'x'").hasSuffix("did you mean \"title\"?"), "a spelling fix says nothing about case")
        #expect(try f.ids("title == 'Ran'") == [2])
        #expect(throws: BatchStoreError.self) {
            try f.context.fetchAll(FetchRequest(entityName: "movie", sortDescriptors: try SortDescriptor.parse("Title")))
        }
    }

    @Test("IN and CONTAINS with a constant on the left, IN with a string on the right, [c] [d] [cd] on == != IN")
    func inAndContainsBothWays() throws {
        let f = try Fixture()
        #expect(try f.ids("'Dr' IN genre") == [1, 2, 7, 8], "IN with a string on the right is a substring test")
        #expect(try f.ids("'dr' IN[c] genre") == [1, 2, 5, 7, 8])
        #expect(try f.ids("genre IN 'Drama Comedy'") == [1, 2, 3, 7, 8], "the key's value is searched for in the constant")
        #expect(try f.ids("'Drama and Comedy' CONTAINS genre") == [1, 2, 3, 7, 8])
        #expect(try f.ids("{1950, 1985} CONTAINS year") == [1, 2], "a list on the left of CONTAINS is membership")
        #expect(try f.ids("genre IN %@", [.value(.text("Drama Comedy"))]) == [1, 2, 3, 7, 8], "%@ bound to a string: substring")
        #expect(try f.ids("genre IN %@", [.list([.text("Comedy"), .text("Dr")])]) == [3, 7])
        #expect(try f.ids("genre ==[c] 'DRAMA'") == [1, 2, 5, 8])
        #expect(try f.ids("genre !=[c] 'DRAMA'") == [3, 4, 6, 7])
        #expect(try f.ids("title ==[cd] 'eclair'") == [5])
        #expect(try f.ids("title ==[d] 'Eclair'") == [5])
        #expect(try f.ids("title ==[d] 'eclair'").isEmpty)
        #expect(try f.ids("genre IN[c] {'DRAMA', 'comedy'}") == [1, 2, 3, 5, 8])
        #expect(try f.ids("title IN[cd] {'CLEO DE 5 A 7'}") == [3])
        #expect(try f.ids("genre CONTAINS ''").isEmpty, "an empty string is found in nothing")
        #expect(try f.ids("genre BEGINSWITH ''").isEmpty && f.ids("genre ENDSWITH ''").isEmpty)
        #expect(try f.ids("title LIKE ''") == [6])
        #expect(f.error("genre == {1, 2}").contains("a list {…} fits only after IN"))
    }

    @Test("the lexer reads Unicode scalars: a literal may begin with a combining mark")
    func unicodeScalars() throws {
        let f = try Fixture()
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT); INSERT INTO t VALUES (1, '\u{301}abc'), (2, 'abc');")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let p = try FetchPredicate("s == \"\u{301}abc\"")
        #expect(try context.fetchAll(FetchRequest(entityName: "t", predicate: p)).map(\.intID) == [1])
        let q = try FetchPredicate("s BEGINSWITH '\u{301}'")
        #expect(try context.fetchAll(FetchRequest(entityName: "t", predicate: q)).map(\.intID) == [1])
        #expect(f.error("title == 'x' AND year > 1 AND \u{301}") .contains("column 31"), "columns count scalars, not grapheme clusters")
    }

    @Test("text with an embedded NUL survives predicate constants and assignments")
    func embeddedNUL() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)")
        try direct(path) { db in
            try db.execute(sql: "INSERT INTO t VALUES (1, CAST(x'61006263' AS TEXT)), (2, 'a'), (3, CAST(x'610078' AS TEXT))")
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func ids(_ p: String, _ args: [PredicateArgument] = []) throws -> [Int64] {
            try context.fetchAll(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: p, arguments: args))).map(\.intID)
        }
        #expect(try ids("s == %@", [.value(.text("a\0bc"))]) == [1])
        #expect(try ids("s == 'a\\0bc'") == [1])
        #expect(try ids("s == 'a'") == [2], "'a' is not 'a\\0bc'")
        #expect(try ids("s BEGINSWITH %@", [.value(.text("a\0"))]) == [1, 3])
        #expect(try ids("s CONTAINS[c] %@", [.value(.text("\0B"))]) == [1])
        #expect(try ids("s ==[c] %@", [.value(.text("A\0BC"))]) == [1])
        #expect(try ids("s IN %@", [.list([.text("a\0x"), .text("zz")])]) == [3])
        let update = BatchUpdateRequest(entityName: "t", predicate: try FetchPredicate("id == 2"),
                                        propertiesToUpdate: try UpdateExpression.parseAssignments("s = 'x\\0y' || s"))
        _ = try context.execute(update)
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT hex(s) FROM t WHERE id = 2") } == "78007961")
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT typeof(s) FROM t WHERE id = 2") } == "text")
    }
}

/// Ordering against a number keeps to numbers in every column kind and either operand order,
/// now that the guard is a range (`col < ''`) instead of `typeof()`; and the index serves it.
@Suite struct NumberOrderingRangeTests {
    @Test func numbersOnlyInEitherOrderAndEveryAffinity() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE v(id INTEGER PRIMARY KEY, u, i INTEGER, t TEXT, r REAL);
            CREATE INDEX v_u ON v(u);
            INSERT INTO v(u, i, t, r) VALUES (1, 1, 1, 1), (2.5, 3, '3', 2.5), ('abc', 'abc', 'abc', 'abc'), ('', '', '', ''),
              (x'00', x'00', x'00', x'00'), (NULL, NULL, NULL, NULL), (-4, -4, '-4', -4), ('2', '2', '2', '2'), (3, 3, 'zz', 3);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path, options: .init(readOnly: true)))
        func ids(_ format: String) throws -> [Int64] {
            try context.fetchAll(BatchStore.FetchRequest(entityName: "v", predicate: try FetchPredicate(format), sortDescriptors: [SortDescriptor(key: "id")]))
                .compactMap { try $0.value(forKey: "id").integerValue }
        }
        // The definition: numbers only, decided by storage class, with the value read in Swift.
        let numbers: [Int64: [String: Double]] = try direct(path) { db in
            var out: [Int64: [String: Double]] = [:]
            for column in ["u", "i", "t", "r"] {
                for row in try Row.fetchAll(db, sql: "SELECT id, \(column) AS v FROM v WHERE typeof(\(column)) IN ('integer', 'real')") {
                    out[row["id"], default: [:]][column] = row["v"]
                }
            }
            return out
        }
        // (A TEXT column against a number is refused before anything runs: tested elsewhere.)
        for column in ["u", "i", "r"] {
            for (op, holds) in [("<", { (a: Double, b: Double) in a < b }), ("<=", { $0 <= $1 }), (">", { $0 > $1 }), (">=", { $0 >= $1 })] {
                let expected = (1...9).map(Int64.init).filter { id in numbers[id]?[column].map { holds($0, 2) } ?? false }
                #expect(try ids("\(column) \(op) 2") == expected, "\(column) \(op) 2")
                let flipped = [("<", ">"), ("<=", ">="), (">", "<"), (">=", "<=")].first { $0.0 == op }?.1 ?? op
                #expect(try ids("2 \(flipped) \(column)") == expected, "2 \(flipped) \(column)")
            }
        }
        let (_, recording) = try recordSQL(on: context) { try ids("u >= 2") }
        let fetch = try #require(recording.statements.first { $0.sql.contains("u\" >= ") })
        #expect(fetch.sql.contains("+t.\"u\" < ''"), "\(fetch.sql)")
        let plan = try direct(path) { db in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM v AS t WHERE (t.u >= 2 AND +t.u < '')").map { $0["detail"] as String } }
        #expect(plan.joined().contains("v_u (u>?)"), "the index serves the lower end: \(plan)")
    }

    @Test("the guard leaves SQLite's plan as the plain WHERE's: genre counts where year >= 2000 read the covering (genre, year) index")
    func guardKeepsThePlan() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE movie(id INTEGER PRIMARY KEY, year INTEGER, genre TEXT);
            CREATE INDEX movie_year ON movie(year);
            CREATE INDEX movie_genre_year ON movie(genre, year);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "movie", predicate: try FetchPredicate("year >= 2000")))
        let sql = try result.frequencies(of: "genre", rows: .matchingNow).statements(readingAt: 0, pageSize: 1).idFetch
        let select = try #require(sql.range(of: "SELECT value").map { String(sql[$0.lowerBound...]) })
        let plan = try direct(path) { db in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + select, arguments: [2000]).map { $0["detail"] as String } }
        let plain = try direct(path) { db in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT genre, count(*) FROM movie WHERE year >= 2000 GROUP BY genre").map { $0["detail"] as String } }
        #expect(plan.joined().contains("COVERING INDEX movie_genre_year") && plain.joined().contains("COVERING INDEX movie_genre_year"), "\(plan) vs \(plain)")
    }
}

/// NSPredicate compares strings by code point: a column's declared collation never widens a
/// comparison (a NOCASE column's `name == "alice"` matched 'ALICE', and a delete through it took
/// both), and a frequency sheet groups as `==` compares.
@Suite("Predicates ignore a column's collation")
struct CollationTests {
    @Test("on a NOCASE column, ==, !=, <, IN and BETWEEN compare byte for byte, as on a BINARY one; F counts 'alice' and 'ALICE' apart, and an edit of one value changes its rows alone")
    func nocase() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE c(id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, plain TEXT);
            CREATE INDEX c_name ON c(name);
            INSERT INTO c(name, plain) VALUES ('alice', 'alice'), ('ALICE', 'ALICE'), ('alice', 'alice'), ('Bob', 'Bob'), (NULL, NULL);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func count(_ p: String) throws -> Int { try context.count(for: FetchRequest(entityName: "c", predicate: try FetchPredicate(format: p))) }
        for column in ["name", "plain"] {
            #expect(try count("\(column) == \"alice\"") == 2, "\(column)")
            #expect(try count("\(column) != \"alice\"") == 3, "\(column)")
            #expect(try count("\(column) < \"B\"") == 1, "\(column): only 'ALICE' sorts before 'B' by code point")
            #expect(try count("\(column) IN {\"ALICE\", \"bob\"}") == 1, "\(column)")
            #expect(try count("\(column) BETWEEN {\"A\", \"Z\"}") == 2, "\(column)")
            #expect(try count("\(column) == plain") == 5, "\(column): nil == nil, as NSPredicate has it")
        }
        let result = try context.fetchBatched(FetchRequest(entityName: "c"), residentBatches: 1, firstBatch: nil)
        let f = try result.frequencies(of: "name")
        let counted = try f.values(in: 0..<f.count).map(\.count)
        #expect(counted == [2, 1, 1, 1], "\(counted)")
        #expect(f.count == 4)
        let delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "c"))
        #expect(try result.count(forDelete: delete, values: try f.selection(at: [0])) == 2)
        _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "c", predicate: try FetchPredicate(format: "name == \"alice\""))))
        #expect(try direct(path) { try String.fetchAll($0, sql: "SELECT name FROM c WHERE name IS NOT NULL ORDER BY id") } == ["ALICE", "Bob"])
    }
}

/// `[c]` / `[d]` text operators with a needle whose folded form is ASCII run on SQLite's own LIKE
/// or GLOB for all-ASCII text and on Foundation's folding for the rest: both halves give what
/// Foundation gives, including LIKE's own wildcards and escape taken literally, a character past
/// ASCII that folds to ASCII (the Kelvin sign), text with a NUL, and numbers and blobs (no match).
@Suite struct FoldedASCIISearchTests {
    @Test("CONTAINS, BEGINSWITH, ENDSWITH with [c], [d], [cd] agree with Foundation's folding on ASCII and other text")
    func agreesWithFoundation() throws {
        let dir = TempDir()
        let texts = ["Kelvin", "\u{212A}elvin", "KELVIN straße", "kel", "a%b", "a_b", "axb", "a\\b", "x\0KEL", "Élan", "elan", "ÉLAN", "50% off", "", "IN"]
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, s);")
        try direct(path) { db in
            // As bytes: a String argument is bound up to its first NUL.
            for (i, s) in texts.enumerated() { try db.execute(sql: "INSERT INTO t VALUES (?, CAST(? AS TEXT))", arguments: [i + 1, Data(s.utf8)]) }
            try db.execute(sql: "INSERT INTO t VALUES (100, 42), (101, x'4b454c'), (102, NULL)")
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func fold(_ s: String, _ flags: Int) -> [UInt8] {
            var o: String.CompareOptions = []
            if flags & 1 != 0 { o.insert(.caseInsensitive) }
            if flags & 2 != 0 { o.insert(.diacriticInsensitive) }
            return Array(s.folding(options: o, locale: nil).utf8)
        }
        for op in ["CONTAINS", "BEGINSWITH", "ENDSWITH"] {
            for (modifier, flags) in [("[c]", 1), ("[d]", 2), ("[cd]", 3)] {
                for needle in ["kel", "KEL", "%", "_", "a_b", "\\", "in", "IN", "elan", "Élan", "x", "50% OFF"] {
                    let n = fold(needle, flags)
                    let expected = texts.enumerated().filter { _, s in
                        let h = fold(s, flags)
                        guard !n.isEmpty, h.count >= n.count else { return false }
                        switch op {
                        case "BEGINSWITH": return Array(h.prefix(n.count)) == n
                        case "ENDSWITH": return Array(h.suffix(n.count)) == n
                        default: return (0...(h.count - n.count)).contains { Array(h[$0..<($0 + n.count)]) == n }
                        }
                    }.map { Int64($0.offset + 1) }
                    let predicate = try FetchPredicate(format: "s \(op)\(modifier) %@", arguments: [.value(.text(needle))])
                    let got = try context.fetchAll(FetchRequest(entityName: "t", predicate: predicate, sortDescriptors: [SortDescriptor(key: "id")])).map(\.intID)
                    #expect(got == expected, "s \(op)\(modifier) \(needle.debugDescription)")
                    let negated = try context.fetchAll(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: "NOT (s \(op)\(modifier) %@)", arguments: [.value(.text(needle))]))).count
                    #expect(negated == texts.count + 3 - expected.count, "NOT (s \(op)\(modifier) \(needle.debugDescription)) is the rest")
                }
            }
        }
    }

    @Test("string(x) CONTAINS[c] reads numbers, reals and blobs as CAST(x AS TEXT) gives them, as before it was read inside the search")
    func stringOfAnyValue() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, s); INSERT INTO t VALUES (1, 42), (2, 2.5), (3, x'4b454c'), (4, NULL), (5, 'Kelvin'), (6, 1e100), (7, -0.0), (8, 'Élan 42');")
        let cast: [(Int64, String)] = try direct(path) { db in
            try GRDB.Row.fetchAll(db, sql: "SELECT id, CAST(s AS TEXT) FROM t WHERE s IS NOT NULL").map { ($0[0], $0[1]) }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for needle in ["4", "2", ".5", "kel", "e+", "0", "élan", "ELAN"] {
            for (modifier, flags) in [("[c]", 1), ("[cd]", 3)] {
                let n = SQLFunctions.fold(needle, flags: flags)
                let expected = cast.filter { SQLFunctions.fold($0.1, flags: flags).contains(n) }.map(\.0)
                let got = try context.fetchAll(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: "string(s) CONTAINS\(modifier) %@", arguments: [.value(.text(needle))]),
                                                            sortDescriptors: [SortDescriptor(key: "id")])).map(\.intID)
                #expect(got == expected, "string(s) CONTAINS\(modifier) \(needle)")
            }
        }
    }

    @Test("folding text piece by piece (ASCII by bytes, each run past ASCII with the character before it by Foundation) gives Foundation's folding of the whole text")
    func piecewiseFoldingIsWholeFolding() {
        // Combining marks after ASCII and after other letters, precomposed and decomposed letters,
        // Hangul syllables and jamo, Greek final sigma and the iota subscript, expanding folds
        // (ß, ligatures, ΐ), the Kelvin and Angstrom signs, dotted I, emoji with joiners.
        let pool: [String] = ["a", "B", "z", " ", "-", "\u{301}", "\u{308}", "\u{345}", "é", "É", "e\u{301}", "ß", "ẞ", "ﬃ", "ΐ", "Σ", "ς", "σ",
                              "\u{212A}", "\u{212B}", "İ", "ı", "한", "\u{1100}", "\u{1161}", "\u{11A8}", "Ω", "ǅ", "👩‍💻", "🙂", "東", "Ж", "ﬁ", "Å", "A\u{30A}"]
        var g = SeededGenerator(state: 7)
        let folds = PieceFolds()  // one, as a connection has: pieces met before come from its slots
        for _ in 0..<4_000 {
            let text: String = (0..<(1 + g.next(8))).map { _ in pool[g.next(pool.count)] }.joined()
            for flags in 1...3 {
                let whole = Array(SQLFunctions.fold(text, flags: flags).utf8)
                let pieces = Array(text.utf8).withUnsafeBufferPointer { SQLFunctions.foldByChunks($0, flags: flags, using: folds) }
                if pieces != whole {
                    Issue.record("\(text.debugDescription) flags \(flags): pieces \(String(decoding: pieces, as: UTF8.self).debugDescription), whole \(String(decoding: whole, as: UTF8.self).debugDescription)")
                    return
                }
            }
        }
    }
}
