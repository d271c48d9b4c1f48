import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct PredicateTests {
    static let sql = """
        CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE movie(id INTEGER PRIMARY KEY, title TEXT, year INTEGER, rating REAL, director_id INTEGER REFERENCES director(id));
        INSERT INTO director VALUES (1, 'Akira Kurosawa'), (2, 'Agnès Varda');
        INSERT INTO movie VALUES
          (1, 'Rashomon', 1950, 8.2, 1),
          (2, 'Ran', 1985, 8.2, 1),
          (3, 'Cléo from 5 to 7', 1962, 7.8, 2),
          (4, 'The Gleaners and I', 2000, NULL, 2),
          (5, 'ÉCLAIR * special?', 1999, 5.0, NULL),
          (6, '', NULL, 1.0, NULL);
        """

    func ids(_ format: String, _ args: PredicateArgument...) throws -> [Int64] {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeDatabase(dir, sql: Self.sql))
        let context = try ManagedObjectContext(store: store)
        let p = try FetchPredicate(format: format, arguments: args)
        return try context.fetchAll(FetchRequest(entityName: "movie", predicate: p)).map(\.intID)
    }

    @Test func comparisons() throws {
        #expect(try ids("year == 1950") == [1])
        #expect(try ids("year = 1950") == [1])
        #expect(try ids("year != 1950") == [2, 3, 4, 5, 6], "!= includes NULLs, as NSPredicate does")
        #expect(try ids("year <> 1950 AND year != nil") == [2, 3, 4, 5])
        #expect(try ids("year < 1962") == [1])
        #expect(try ids("year <= 1962") == [1, 3])
        #expect(try ids("year > 1985") == [4, 5])
        #expect(try ids("year >= 1985") == [2, 4, 5])
        #expect(try ids("year =< 1950 || year => 2000") == [1, 4])
        #expect(try ids("rating == nil") == [4])
        #expect(try ids("rating == NULL OR year == NIL") == [4, 6])
        #expect(try ids("rating != nil AND NOT (year > 1960)") == [1, 6], "NOT is the complement: a NULL year is not > 1960")
        #expect(try ids("!(rating > 5) && rating != nil") == [5, 6])
        #expect(try ids("TRUEPREDICATE").count == 6)
        #expect(try ids("FALSEPREDICATE").isEmpty)
        let combined = try FetchPredicate("year > 1960") && FetchPredicate("rating < 8")
        #expect(combined.format == "(year > 1960) AND (rating < 8)")
        #expect(try ids(combined.format) == [3, 5])
        #expect(try ids("year BETWEEN {1960, 1990}") == [2, 3])
        #expect(try ids("year IN {1950, 2000, 3000}") == [1, 4])
        #expect(try ids("year IN %@", .list([.integer(1985), .integer(1962)])) == [2, 3])
        #expect(try ids("year IN {}").isEmpty)
        #expect(try ids("year NOT IN {1950}") == [2, 3, 4, 5, 6], "NOT IN keeps NULLs, as != does")
        #expect(try ids("year > 1900 + 60 * 1") == [2, 3, 4, 5])
        #expect(try ids("rating == true") == [6], "TRUE is 1")
    }

    @Test func stringOperatorsAndModifiers() throws {
        #expect(try ids("title BEGINSWITH 'Ra'") == [1, 2])
        #expect(try ids("title BEGINSWITH 'ra'").isEmpty)
        #expect(try ids("title BEGINSWITH[c] 'ra'") == [1, 2])
        #expect(try ids("title ENDSWITH 'I'") == [4])
        #expect(try ids("title CONTAINS 'leaner'") == [4])
        #expect(try ids("title CONTAINS[c] 'CLÉO'") == [3])
        #expect(try ids("title CONTAINS[cd] 'cleo'") == [3])
        #expect(try ids("title CONTAINS[d] 'Cleo'") == [3])
        #expect(try ids("title CONTAINS 'Cleo'").isEmpty)
        #expect(try ids("title LIKE 'R*n'") == [1, 2])
        #expect(try ids("title LIKE 'R?n'") == [2])
        #expect(try ids("title LIKE[c] 'r*'") == [1, 2])
        #expect(try ids("title LIKE '*\\\\**'") == [5], "an escaped * matches a literal *")
        #expect(try ids("title BEGINSWITH 'ÉCLAIR *'") == [5], "GLOB characters in values are literal")
        #expect(try ids("title CONTAINS '?'") == [5])
        #expect(try ids("title MATCHES 'R[a-z]+'") == [1, 2])
        #expect(try ids("title MATCHES 'a'").isEmpty, "MATCHES needs the whole string to match")
        #expect(try ids("title MATCHES[c] 'ran'") == [2])
        #expect(try ids("title == ''") == [6])
        #expect(try ids("title ==[c] 'RAN'") == [2])
    }

    @Test func keyPathsThroughToOneRelationships() throws {
        #expect(try ids("director.name == 'Akira Kurosawa'") == [1, 2])
        #expect(try ids("director.name BEGINSWITH[cd] 'agnes'") == [3, 4])
        #expect(try ids("director.name == nil") == [5, 6])
        #expect(try ids("director_id.name CONTAINS 'Varda' AND year > 1990") == [4])
    }

    @Test func substitution() throws {
        #expect(try ids("%K >= %@ AND title != %@", .key("year"), 1985, "Ran") == [4, 5])
        #expect(try ids("title == %@", "Robert'); DROP TABLE movie; --").isEmpty)
        #expect(try ids("year > 0").count == 5, "the table survived")
        #expect(throws: BatchStoreError.self) { try FetchPredicate("year == %@") }
        #expect(throws: BatchStoreError.self) { try FetchPredicate("year == 1", 5) }
    }

    @Test func syntaxErrorsNameThePositionAndWhatWasExpected() throws {
        func message(_ text: String) -> String {
            do { _ = try FetchPredicate(format: text); return "parsed" } catch let e as BatchStoreError { return e.message } catch { return "\(error)" }
        }
        #expect(message("year >") == "predicate error at column 7: expected a value after '>'")
        #expect(message("year 1950") == "predicate error at column 6: expected a comparison operator (==, !=, <, >, BEGINSWITH, IN, …), found 1950")
        #expect(message("(year > 1 AND title == 'x'") == "predicate error at column 27: expected ')' to close the '(' at column 1, found end of input")
        #expect(message("title == 'abc") == "predicate error at column 10: unterminated string starting here")
        #expect(message("year BETWEEN {1}") == "predicate error at column 6: BETWEEN needs exactly two values, as in BETWEEN {1, 10}")
        #expect(message("year == 1 year") == "predicate error at column 11: unexpected year after a complete predicate")
        #expect(message("") == "predicate error at column 1: expected a predicate, found nothing")
        #expect(message("title ==[x] 'a'") == "predicate error at column 10: expected c, d or cd inside [ ]")
        #expect(message("ANY tags == 'x'").contains("to-many"))
        #expect(message(String(repeating: "(", count: 5000) + "a == 1" + String(repeating: ")", count: 5000)).contains("nested too deeply"))
    }

    @Test func unknownNamesAndBadRegexAreErrorsAtCompileTime() throws {
        do { _ = try ids("yeer > 1"); Issue.record("compiled") } catch let e as BatchStoreError {
            #expect(e.code == .noSuchAttribute)
            #expect(e.message.contains("\"yeer\""))
        }
        do { _ = try ids("studio.name == 'x'"); Issue.record("compiled") } catch let e as BatchStoreError {
            #expect(e.code == .noSuchAttribute)
        }
        do { _ = try ids("title MATCHES '('"); Issue.record("compiled") } catch let e as BatchStoreError {
            #expect(e.code == .invalidQuery)
        }
    }

    /// A deterministic random run: token soup and mutated valid predicates never crash the parser,
    /// and whatever parses also compiles and runs, or fails with a BatchStoreError.
    @Test func randomInputNeverCrashes() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeDatabase(dir, sql: Self.sql))
        let context = try ManagedObjectContext(store: store)
        let pieces = ["year", "title", "rating", "director.name", "director", "(", ")", "{", "}", ",", "==", "!=", "<", ">=", "AND", "OR",
                      "NOT", "!", "&&", "||", "BETWEEN", "IN", "BEGINSWITH", "CONTAINS", "LIKE", "MATCHES", "[c]", "[cd]", "'x'", "\"y\"",
                      "'*'", "1", "2.5", "-3", "nil", "TRUE", "%@", "%K", "TRUEPREDICATE", "+", "*", "/", "#and", "`odd name`", "'\\u00e9'",
                      "'", "\"", "\\", "[", "]", "0x1F", "1e400", "é", "😀", "\u{0}", "\u{1B}[2J", ".", "..", "SUBQUERY"]
        let valid = ["year > 1950 AND title BEGINSWITH[c] 'r'", "director.name IN {'a', 'b'} OR rating == nil", "NOT (year BETWEEN {1, 2})"]
        var parsed = 0
        for text in fuzzTexts(count: fuzzRuns, seed: 2026, pieces: pieces, valid: valid, insertable: "(){}'\"[]!=<>,.%@K\\", maxPieces: 12) {
            let args: [PredicateArgument] = text.contains("%") ? [.key("year"), .value(.integer(1))] : []
            do {
                let p = try FetchPredicate(format: text, arguments: args)
                parsed += 1
                _ = try? context.count(for: FetchRequest(entityName: "movie", predicate: p))
            } catch is BatchStoreError {
                // expected for most random input
            } catch {
                Issue.record("non-BatchStore error for \(text.debugDescription): \(error)")
            }
        }
        #expect(parsed > 100, "the random run should also exercise the compiler")
    }

    /// The same for update expressions: random assignment text never crashes the parser, and what
    /// parses compiles (counted, never run) or fails with a BatchStoreError.
    @Test func randomAssignmentsNeverCrash() throws {
        let dir = TempDir()
        let store = try PersistentStore(path: try makeDatabase(dir, sql: Self.sql))
        let context = try ManagedObjectContext(store: store)
        let pieces = ["year", "title", "rating", "votes", "=", "==", ",", "+", "-", "*", "/", "%", "||", "(", ")", "now()", "lowercase(",
                      "uppercase(", "coalesce(", "abs(", "round(", "length(", "'x'", "\"y\"", "1", "2.5", "-3", "nil", "NULL", "TRUE",
                      "`a b`", "'", "\"", "\\", "é", "😀", "\u{0}", "\u{1B}[2J", ".", "director.name", "1e400", "0x10"]
        let valid = ["votes = votes + 1, rating = round(rating * 1.1, 1)", "title = uppercase(title) || '!'", "year = coalesce(year, 2000)"]
        var parsed = 0
        for text in fuzzTexts(count: fuzzRuns, seed: 7, pieces: pieces, valid: valid, insertable: "(),'=+*|%\"", maxPieces: 10) {
            do {
                let assignments = try UpdateExpression.parseAssignments(text)
                parsed += 1
                _ = try? context.count(forUpdate: BatchUpdateRequest(entityName: "movie", propertiesToUpdate: assignments))
            } catch is BatchStoreError {
            } catch {
                Issue.record("non-BatchStore error for \(text.debugDescription): \(error)")
            }
        }
        #expect(parsed > 100, "the random run should also exercise the compiler")
    }
}

/// Inputs per parser fuzz test: 4,000 in `make test`, more with FAULTLINE_FUZZ_RUNS (`make fuzz`).
let fuzzRuns = Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_RUNS"] ?? "") ?? 4000
