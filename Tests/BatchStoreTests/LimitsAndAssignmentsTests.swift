import BatchStore
import Foundation
import GRDB
import GRDBSQLite
import Testing

/// Predicates too long for the engine are one clear error, never SQLite's raw text or a crash;
/// long OR and AND lists work; assignments that would store something other than meant are refused.
@Suite("Limits of predicates, and assignments checked like predicates")
struct LimitsAndAssignmentsTests {
    func file(_ dir: TempDir) throws -> String {
        try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, d REAL, amount DECIMAL(10,2), at DATETIME, s TEXT, anything, code STRING, doc JSON);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 6000)
            INSERT INTO t SELECT x, x, x / 4.0, x * 3, '2013-01-01 10:00:00', 'row ' || x, x, 'c' || x, '{}' FROM c;
            """)
    }

    func count(_ context: ManagedObjectContext, _ predicate: String) throws -> Int {
        try context.count(for: FetchRequest(entityName: "t", predicate: try FetchPredicate(format: predicate)))
    }

    @Test("5,000 ORs and 5,000 ANDs run (the SQL nests them as a balanced tree), and match what IN and a range match")
    func longLists() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try file(dir)))
        let ors = (0..<5_000).map { "a == \($0 * 2)" }.joined(separator: " OR ")
        #expect(try count(context, ors) == 3_000)
        let inList = "a IN {" + (0..<5_000).map { "\($0 * 2)" }.joined(separator: ", ") + "}"
        #expect(try count(context, inList) == 3_000)
        let ands = (0..<5_000).map { "a != \($0 * 3)" }.joined(separator: " AND ")
        #expect(try count(context, ands) == 6_000 - 2_000)
        // Order and arguments kept: a mix that would differ if terms were regrouped wrongly.
        let mixed = (1...40).map { "(a == \($0) AND s == \"row \($0)\")" }.joined(separator: " OR ") + " OR s == \"row 6000\""
        #expect(try count(context, mixed) == 41)
        // The balanced SQL: groups of eight, nested about log2(n / 8) deep.
        let sql = balancedSQL((1...20).map { "x\($0)" }, "OR")
        #expect(sql == "(((x1 OR x2 OR x3 OR x4 OR x5) OR (x6 OR x7 OR x8 OR x9 OR x10)) OR ((x11 OR x12 OR x13 OR x14 OR x15) OR (x16 OR x17 OR x18 OR x19 OR x20)))")
        #expect(balancedSQL(["a", "b"], "AND") == "(a AND b)")
    }

    @Test("a 3,000-term sum is one .syntax line naming the limit (it crashed the compiler's recursion before), and so is a long product")
    func longChains() throws {
        let dir = TempDir()
        let context = try ManagedObjectContext(store: try PersistentStore(path: try file(dir)))
        for text in ["a == " + Array(repeating: "1", count: 3_000).joined(separator: " + "),
                     "a == " + Array(repeating: "1", count: 3_000).joined(separator: " * ")] {
            do {
                _ = try count(context, text)
                Issue.record("a 3,000-operator chain was accepted")
            } catch let error as BatchStoreError {
                #expect(error.code == .syntax)
                #expect(error.message.contains("nested too deeply: more than 200 levels or operators in a row") && error.message.contains("SQLite stops at 1,000"), "\(error.message)")
                #expect(!error.message.contains("\n"))
            }
        }
        // 190 operators in a row are fine (SQLite's parser takes no more than about 100 open
        // parentheses: a row of operators of one level is one group), mixed levels too.
        #expect(try count(context, "a == " + Array(repeating: "1", count: 190).joined(separator: " + ")) == 1)
        #expect(try count(context, "a == 0 - " + Array(repeating: "1", count: 95).joined(separator: " - ") + " + 100") == 1)
        #expect(try count(context, "a == " + Array(repeating: "2 * 3 % 4", count: 60).joined(separator: " + ") + " - 119") == 1)
        let concatenation = "s = \"row \" || " + Array(repeating: "\"\"", count: 150).joined(separator: " || ") + " || \"seven\""
        _ = try context.execute(BatchUpdateRequest(entityName: "t", predicate: try FetchPredicate(format: "id == 7"),
                                                   propertiesToUpdate: try UpdateExpression.parseAssignments(concatenation)))
        #expect(try count(context, "s == \"row seven\"") == 1)
        let assignments = "a = " + Array(repeating: "1", count: 3_000).joined(separator: " + ")
        #expect(throws: BatchStoreError.self) { _ = try UpdateExpression.parseAssignments(assignments) }
    }

    @Test("past one of SQLite's limits (bound variables, statement length, parser stack): .invalidQuery saying it is too large for SQLite, in one line")
    func pastSQLiteLimits() throws {
        for (text, code) in [("too many SQL variables", SQLITE_ERROR), ("parser stack overflow", SQLITE_ERROR), ("Expression tree is too large (maximum depth 1000)", SQLITE_ERROR)] {
            let error = BatchStoreError.sqlite(code, message: text)
            #expect(error.code == .invalidQuery)
            #expect(error.message == "too large for SQLite: \(text); split it into smaller parts")
        }
        // Other errors keep their own meaning.
        #expect(BatchStoreError.sqlite(SQLITE_ERROR, message: "no such column: x").code != .invalidQuery)
    }

    func update(_ context: ManagedObjectContext, _ text: String) throws {
        _ = try context.execute(BatchUpdateRequest(entityName: "t", propertiesToUpdate: try UpdateExpression.parseAssignments(text)))
    }

    @Test("assignments: division or remainder by a literal zero, and text or a blob into a column of numbers, are refused naming the column; nothing is written")
    func assignments() throws {
        let dir = TempDir()
        let path = try file(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let before = try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(quote(d) || quote(a) || quote(s) || quote(amount), ',') FROM t") }
        let refused: [(String, String)] = [
            ("d = d / 0", "t.d: division by zero (it would set NULL); nothing was changed"),
            ("d = d / -0.0", "t.d: division by zero (it would set NULL); nothing was changed"),
            ("s = s || (a % 0)", "t.s: remainder by zero (it would set NULL); nothing was changed"),
            ("a = round(a / 0)", "t.a: division by zero (it would set NULL); nothing was changed"),
            ("d = \"late\"", "t.d holds numbers (declared REAL): the text \"late\" is not one; give a number, or nil for NULL (nothing was changed)"),
            ("a = 1, amount = \"lots\"", "t.amount holds numbers (declared DECIMAL(10,2)): the text \"lots\" is not one; give a number, or nil for NULL (nothing was changed)"),
            // Text SQLite would keep as text in a column of numbers (not a decimal literal).
            ("d = \"inf\"", "t.d holds numbers (declared REAL): the text \"inf\" is not one; give a number, or nil for NULL (nothing was changed)"),
            ("a = \"0x10\"", "t.a holds numbers (declared INTEGER): the text \"0x10\" is not one; give a number, or nil for NULL (nothing was changed)"),
        ]
        for (text, message) in refused {
            do {
                try update(context, text)
                Issue.record("\(text) was accepted")
            } catch let error as BatchStoreError {
                #expect(error.code == .invalidQuery, "\(text)")
                #expect(error.message == message, "\(text): \(error.message)")
            }
        }
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT group_concat(quote(d) || quote(a) || quote(s) || quote(amount), ',') FROM t") } == before)
        // What is meant is accepted: a number as text, a date into a date column, anything into
        // an untyped or text column, a division by a column (SQLite's NULL for its zeros is the data's).
        // STRING and JSON have SQLite's NUMERIC affinity by its naming rules, but hold text.
        try update(context, "d = \" 12.5 \", at = \"2014-02-03 04:05:06\", anything = \"x\", s = 7, a = a / (a - 1), code = \"AB-1\", doc = \"{}\"")
        #expect(try direct(path) { try String.fetchOne($0, sql: "SELECT typeof(d) || d || at || anything || typeof(s) || code || doc FROM t WHERE id = 3") } == "real12.52014-02-03 04:05:06xtextAB-1{}")
    }
}
