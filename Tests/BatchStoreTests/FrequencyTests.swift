import BatchStore
import Foundation
import GRDB
import Testing

/// `BatchFaultingCollection.frequencies(of:)`: SQLite's GROUP BY over a result's ID table,
/// compared with the sqlite3 shell's own GROUP BY on the same file.
@Suite("Frequencies of a column over a result")
struct FrequencyTests {
    /// NULLs, the integer 1, the real 1.0 and the text '1', a blob, and non-ASCII text that differs
    /// only in case or in composition.
    func mixedFile(_ dir: TempDir, _ name: String = "mixed.sqlite") throws -> String {
        try makeDatabase(dir, name, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, u, g TEXT, n INTEGER);
            INSERT INTO t(u, g, n) VALUES
              (1, 'é', 5), (1.0, 'É', 5), ('1', 'e\u{301}', NULL), (NULL, '日本', 5), (NULL, NULL, 7),
              (x'01', 'é', 7), (2.5, '日本', NULL), ('b', 'é', 5), (1, 'a"b''c', 5), (NULL, 'é', 8),
              ('', '', 5), ('1', 'É', 7);
            CREATE VIEW v AS SELECT u, g FROM t;
            """)
    }

    /// SQLite's `quote()` of a value, as the shell prints it.
    func quoted(_ v: SQLValue) -> String {
        switch v {
        case .null: return "NULL"
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .text(let s): return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let b): return "X'" + b.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    /// The shell's `value|count` lines, most frequent first, ties by value.
    func shell(_ path: String, _ column: String, from: String = "t", where condition: String = "") throws -> [String] {
        try sqlite3(path, "SELECT quote(\(column)), count(*) FROM \(from) \(condition.isEmpty ? "" : "WHERE " + condition) GROUP BY \(column) ORDER BY count(*) DESC, \(column)")
            .split(separator: "\n").map(String.init)
    }

    func lines(_ f: ValueFrequencies) throws -> [String] {
        try f.values(in: 0..<f.count).map { "\(quoted($0.value))|\($0.count)" }
    }

    @Test("every value and count as the sqlite3 shell's GROUP BY gives them: NULLs, 1 vs 1.0 vs '1', blobs, non-ASCII text; with a filter; any sort")
    func matchesTheShell() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for column in ["u", "g", "n"] {
            let all = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 3))
            let f = try all.frequencies(of: column)
            #expect(try lines(f) == (try shell(path, column)), "\(column)")
            #expect(f.total == 12 && f.attribute == column)
            #expect(try f.maxCount == f.values(in: 0..<1).first?.count)

            let filtered = try context.fetchBatched(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: "id > 3"),
                                                                 sortDescriptors: [SortDescriptor(key: "id", ascending: false)], fetchBatchSize: 3))
            let g = try filtered.frequencies(of: column)
            #expect(try lines(g) == (try shell(path, column, where: "id > 3")), "\(column) where id > 3")
            #expect(g.total == 9)
        }
        // The integer 1 and the real 1.0 are one value (3 rows), the text '1' another (2 rows).
        let u = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 3)).frequencies(of: "u")
        let counts = try u.values(in: 0..<u.count)
        #expect(counts.first { $0.value == .integer(1) || $0.value == .real(1) }?.count == 3)
        #expect(counts.first { $0.value == .text("1") }?.count == 2)
        #expect(counts.first { $0.value == .null }?.count == 3)
        // Positions are clamped; a range past the end is empty.
        #expect(try u.values(in: (u.count - 1)..<(u.count + 5)).count == 1)
        #expect(try u.values(in: (u.count + 1)..<(u.count + 5)).isEmpty)
    }

    @Test("a view without a row key counts the values its ID table holds")
    func view() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let f = try context.fetchBatched(FetchRequest(entityName: "v", fetchBatchSize: 5)).frequencies(of: "g")
        #expect(try lines(f) == (try shell(path, "g", from: "v")))
    }

    @Test("over several stores: each store's rows of the result, added up")
    func severalStores() throws {
        let dir = TempDir()
        let a = try mixedFile(dir, "a.sqlite"), b = try mixedFile(dir, "b.sqlite")
        try direct(b) { try $0.execute(sql: "DELETE FROM t WHERE id > 6") }
        let coordinator = try PersistentStoreCoordinator(stores: [try PersistentStore(path: a), try PersistentStore(path: b)])
        let context = try CoordinatedContext(coordinator: coordinator)
        let f = try context.fetchBatched(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: "n == 5"), fetchBatchSize: 4)).frequencies(of: "g")
        var expected: [String: Int] = [:]
        for path in [a, b] {
            for line in try shell(path, "g", where: "n = 5") {
                let parts = line.split(separator: "|", omittingEmptySubsequences: false)
                expected[String(parts[0]), default: 0] += Int(parts[1]) ?? 0
            }
        }
        let got = try f.values(in: 0..<f.count)
        #expect(Dictionary(uniqueKeysWithValues: got.map { (quoted($0.value), $0.count) }) == expected)
        #expect(got.map(\.count) == got.map(\.count).sorted(by: >), "most frequent first")
        #expect(f.total == expected.values.reduce(0, +))
    }

    @Test("each value's equality filter selects exactly its count of rows (the literal parses back to the value)")
    func equalityFilterMatchesTheCount() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for column in ["u", "g", "n"] {
            let f = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 3)).frequencies(of: column)
            for entry in try f.values(in: 0..<f.count) {
                guard let format = FetchPredicate.equalityFormat(key: column, value: entry.value) else {
                    #expect(entry.value == .blob(Data([1])), "only the blob has no literal: \(entry.value)")
                    continue
                }
                let n = try context.count(for: FetchRequest(entityName: "t", predicate: try FetchPredicate(format: format)))
                #expect(n == entry.count, "\(format)")
            }
        }
    }

    @Test("literals: hostile text cannot leave its quotes; keys that are not plain names go in backticks")
    func literals() throws {
        let hostile = "x\" OR TRUEPREDICATE OR a == \"\\\n\t\r\0\u{1B}[31m\u{7}\u{202E}é日本"
        let format = try #require(FetchPredicate.equalityFormat(key: "g", value: .text(hostile)))
        #expect(!format.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x202E })
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(g TEXT, \"odd `name\" INTEGER, \"AND\" INTEGER); INSERT INTO t VALUES ('other', 1, 2);")
        // Through a blob cast: GRDB binds text only up to a NUL.
        try direct(path) { try $0.execute(sql: "INSERT INTO t VALUES (CAST(? AS TEXT), 3, 4)", arguments: [Data(hostile.utf8)]) }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let rows = try context.fetchAll(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: format)))
        #expect(rows.count == 1)
        #expect(try rows.first?.value(forKey: "g") == .text(hostile))
        #expect(FetchPredicate.formatKey("odd `name") == "`odd ``name`")
        #expect(FetchPredicate.formatKey("AND") == "`AND`")
        #expect(FetchPredicate.formatKey("year") == "year")
        for (key, value) in [("odd `name", SQLValue.integer(3)), ("AND", .integer(4))] {
            let f = try #require(FetchPredicate.equalityFormat(key: key, value: value))
            #expect(try context.count(for: FetchRequest(entityName: "t", predicate: try FetchPredicate(format: f))) == 1, "\(f)")
        }
        #expect(FetchPredicate.literal(.null) == "nil")
        #expect(FetchPredicate.literal(.real(1)) == "1.0")
        #expect(FetchPredicate.literal(.real(-0.000001)) == "-1e-06")
        #expect(FetchPredicate.literal(.real(.infinity)) == nil)
        #expect(FetchPredicate.literal(.blob(Data([1]))) == nil)
    }

    @Test("a cancel from progress stops the GROUP BY and leaves no temp table; an unknown column is refused")
    func cancelAndErrors() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) INSERT INTO n SELECT x, x FROM c;
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100))
        let tablesBefore = try context.temporaryTableNames()
        var calls = 0
        #expect(throws: BatchStoreError.self) {
            _ = try result.frequencies(of: "v") { _ in calls += 1; return .cancel }
        }
        #expect(calls >= 1)
        #expect(try context.temporaryTableNames() == tablesBefore)
        do {
            _ = try result.frequencies(of: "colour")
            Issue.record("an unknown column must be refused")
        } catch let error as BatchStoreError {
            #expect(error.code == .noSuchAttribute && error.message.contains("colour"))
        }
        var f: ValueFrequencies? = try result.frequencies(of: "v")
        #expect(f?.count == 300_000)
        #expect(try f?.values(in: 299_999..<300_000).first?.count == 1)
        #expect(try context.temporaryTableNames().count == tablesBefore.count + 1)
        f = nil
        #expect(try context.temporaryTableNames() == tablesBefore, "the frequency table goes with its value")
    }
}

extension FrequencyTests {
    @Test("rows matching now: the fetch's WHERE over the table (no ID table), the same figures while the file is unchanged, the new rows after another writer")
    func matchingNow() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "t", predicate: try FetchPredicate(format: "g != \"日本\" AND id > 1"), fetchBatchSize: 4))
        for column in ["u", "g", "n"] {
            #expect(try lines(result.frequencies(of: column, rows: .matchingNow)) == (try lines(result.frequencies(of: column))), "\(column)")
            #expect(try result.summary(of: column, rows: .matchingNow) == (try result.summary(of: column)), "\(column)")
        }
        let (_, recording) = try recordSQL(on: context) { try result.frequencies(of: "g", rows: .matchingNow) }
        let grouping = try #require(recording.with(verb: "INSERT").first)
        #expect(grouping.sql.contains("FROM main.\"t\" AS t WHERE"), "\(grouping.sql)")
        #expect(!grouping.sql.contains("bs_ids"), "\(grouping.sql)")
        // Another writer: the fetched rows are the ID table's (a new row is not in it, a deleted one
        // drops out); rows matching now are the table's as it is.
        try direct(path) { try $0.execute(sql: "INSERT INTO t(u, g, n) VALUES (9, 'new', 1); DELETE FROM t WHERE id = 2") }
        #expect(try result.frequencies(of: "g").total == 8)
        #expect(try result.frequencies(of: "g", rows: .matchingNow).total == 9)
        #expect(try lines(result.frequencies(of: "g", rows: .matchingNow)) == (try shell(path, "g", where: "g IS NOT '日本' AND id > 1")))
    }
}

/// `BatchFaultingCollection.summary(of:)`: each figure compared with the sqlite3 shell's own
/// aggregate over the same rows.
@Suite("Summaries of a column over a result")
struct SummaryTests {
    let frequencies = FrequencyTests()

    @Test("storage classes, NULLs, distinct, min, max, mean, text lengths and the most frequent value, as the shell computes them; with a filter")
    func matchesTheShell() throws {
        let dir = TempDir()
        let path = try frequencies.mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for (predicate, condition) in [(nil, "1"), ("id > 3", "id > 3")] as [(String?, String)] {
            let result = try context.fetchBatched(FetchRequest(entityName: "t", predicate: try predicate.map { try FetchPredicate(format: $0) },
                                                               sortDescriptors: [SortDescriptor(key: "g")], fetchBatchSize: 4))
            for column in ["u", "g", "n", "id"] {
                let s = try result.summary(of: column)
                let figures = try sqlite3(path, """
                    SELECT count(*), count(*) - count(\(column)), count(DISTINCT \(column)), quote(min(\(column))), quote(max(\(column))),
                      coalesce(avg(CASE WHEN typeof(\(column)) IN ('integer', 'real') THEN \(column) END), 'none'),
                      coalesce(min(CASE WHEN typeof(\(column)) = 'text' THEN length(\(column)) END), 'none'),
                      coalesce(max(CASE WHEN typeof(\(column)) = 'text' THEN length(\(column)) END), 'none')
                    FROM t WHERE \(condition)
                    """).split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                let label: Comment = "\(column) where \(condition)"
                #expect(String(s.rows) == figures[0] && String(s.nulls) == figures[1] && String(s.distinct) == figures[2], "\(label): \(s) vs \(figures)")
                #expect((s.min.map(frequencies.quoted) ?? "NULL") == figures[3], label)
                #expect((s.max.map(frequencies.quoted) ?? "NULL") == figures[4], label)
                if let mean = s.mean { #expect(abs(mean - (Double(figures[5]) ?? .nan)) < 1e-9, label) } else { #expect(figures[5] == "none", label) }
                #expect(s.shortest.map(String.init) ?? "none" == figures[6] && s.longest.map(String.init) ?? "none" == figures[7], label)
                let classes = try sqlite3(path, "SELECT DISTINCT typeof(\(column)) FROM t WHERE \(condition) AND \(column) IS NOT NULL").split(separator: "\n").map(String.init)
                #expect(Set(s.storageClasses) == Set(classes), label)
                #expect(s.storageClasses == ["integer", "real", "text", "blob"].filter(s.storageClasses.contains), "in SQLite's order")
                let top = try sqlite3(path, "SELECT quote(\(column)) || '|' || count(*) FROM t WHERE \(condition) GROUP BY \(column) ORDER BY count(*) DESC, \(column) LIMIT 1")
                #expect(s.mostFrequent.map { "\(frequencies.quoted($0.value))|\($0.count)" } == top, label)
            }
        }
        let g = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4)).summary(of: "g")
        #expect(g.declaredType == "TEXT" && g.attribute == "g")
        #expect(g.shortest == 0 && g.longest == 5, "characters, not bytes: 日本 is 2, a\"b'c is 5")
    }

    @Test("distinct count and most frequent value from one GROUP BY: ties in value order, a NOCASE index, all NULLs, no rows; as the shell computes them")
    func groupedFiguresMatchTheShell() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE w(id INTEGER PRIMARY KEY, c TEXT COLLATE NOCASE, k INTEGER, z, r REAL);
            CREATE INDEX w_c ON w(c);
            CREATE INDEX w_k ON w(k);
            INSERT INTO w(c, k, z, r) VALUES ('b', 3, NULL, 0.1), ('B', 3, NULL, 0.2), ('a', 2, NULL, 0.1), ('A', 2, NULL, 0.7),
              ('é', 1, NULL, NULL), ('c', 9, NULL, 0.30000000000000004), (NULL, NULL, NULL, 1e300), (NULL, 1, NULL, -1e300), ('Z', 1, NULL, 2.5);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for (predicate, condition) in [(nil, "1"), ("id > 2", "id > 2"), ("id > 100", "id > 100")] as [(String?, String)] {
            let result = try context.fetchBatched(FetchRequest(entityName: "w", predicate: try predicate.map { try FetchPredicate(format: $0) }, fetchBatchSize: 4))
            for column in ["c", "k", "z", "r"] {
                for rows in [ResultRows.fetched, .matchingNow] {
                    let s = try result.summary(of: column, rows: rows)
                    let label: Comment = "\(column) where \(condition), \(rows)"
                    let figures = try sqlite3(path, "SELECT count(*), count(DISTINCT \(column) COLLATE BINARY), (SELECT CASE WHEN a IS NULL THEN 'none' ELSE ieee754(a) END FROM (SELECT avg(CASE WHEN typeof(\(column)) IN ('integer', 'real') THEN \(column) END) AS a FROM w WHERE \(condition))) FROM w WHERE \(condition)")
                        .split(separator: "|").map(String.init)
                    #expect(figures.count == 3 && "\(s.rows)" == figures[0] && "\(s.distinct)" == figures[1], "\(label): \(s) vs \(figures)")
                    #expect(s.mean.map(ieee754) ?? "none" == figures.last, "\(label): the mean bit for bit")
                    // Byte for byte, as `==` compares (the NOCASE column's 'a' and 'A' are two values).
                    let top = try sqlite3(path, "SELECT quote(\(column)) || '|' || count(*) FROM w WHERE \(condition) GROUP BY \(column) COLLATE BINARY ORDER BY count(*) DESC, \(column) COLLATE BINARY LIMIT 1")
                    #expect(s.mostFrequent.map { "\(frequencies.quoted($0.value))|\($0.count)" } ?? "" == top, label)
                }
            }
        }
    }

    /// The sqlite3 shell's `ieee754(X)` of a finite double: `ieee754(M,E)` with X = M × 2^E, M odd.
    func ieee754(_ x: Double) -> String {
        guard x != 0 else { return "ieee754(0,-1075)" }
        var m = Int64(x.significandBitPattern | (x.isNormal ? 1 << 52 : 0)), e = Int(x.isNormal ? x.exponent : -1022) - 52
        while m & 1 == 0 { m >>= 1; e += 1 }
        return "ieee754(\(x < 0 ? -m : m),\(e))"
    }

    @Test("a sample: the figures of exactly the rows at its positions (one in each of n stretches) of the result (its filter and order), each looked up by key; all the rows, and no sample, when the result is smaller; over several stores too")
    func sample() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE s(id INTEGER PRIMARY KEY, v, w TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000)
            INSERT INTO s SELECT x, CASE x % 7 WHEN 0 THEN NULL WHEN 1 THEN 'é' || x WHEN 2 THEN x * 0.5 ELSE (x * 37) % 101 END, char(65 + x % 26) FROM c;
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "s", predicate: try FetchPredicate(format: "id % 3 != 0"),
                                                           sortDescriptors: [SortDescriptor(key: "w"), SortDescriptor(key: "id", ascending: false)], fetchBatchSize: 50))
        let n = 97
        let positions = ResultRows.samplePositions(n, of: result.count)
        #expect(positions.count == n && positions == positions.sorted() && Set(positions).count == n)
        #expect(positions.enumerated().allSatisfy { i, p in p >= i * result.count / n && p < (i + 1) * result.count / n }, "one in each stretch")
        #expect(positions != (0..<n).map { $0 * result.count / n }, "not evenly spaced: blind to a period in the rows")
        #expect(positions == ResultRows.samplePositions(n, of: result.count), "the same sample every time")
        // The model: the result's own rows at those positions, by their object IDs.
        func rowid(_ position: Int) -> Int64 { if case .rowid(let r) = result[position]?.objectID.key { return r } else { return -1 } }
        let ids = positions.map(rowid).map(String.init).joined(separator: ",")
        for column in ["v", "w"] {
            let s = try result.summary(of: column, rows: .sample(n))
            let figures = try sqlite3(path, """
                SELECT count(*), count(*) - count(\(column)), count(DISTINCT \(column)), quote(min(\(column))), quote(max(\(column))),
                  coalesce(min(CASE WHEN typeof(\(column)) = 'text' THEN length(\(column)) END), 'none')
                FROM s WHERE id IN (\(ids))
                """).split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            #expect(s.sampledFrom == result.count && s.rows == n, "\(column): \(s.rows) of \(String(describing: s.sampledFrom))")
            let minimum: String = s.min.map(frequencies.quoted) ?? "NULL", maximum: String = s.max.map(frequencies.quoted) ?? "NULL"
            let shortest: String = s.shortest.map { String($0) } ?? "none"
            let got: [String] = [String(s.rows), String(s.nulls), String(s.distinct), minimum, maximum, shortest]
            #expect(got == figures, "\(column): \(s) vs \(figures)")
            let top = try sqlite3(path, "SELECT quote(\(column)) || '|' || count(*) FROM s WHERE id IN (\(ids)) GROUP BY \(column) ORDER BY count(*) DESC, \(column) LIMIT 1")
            #expect(s.mostFrequent.map { "\(frequencies.quoted($0.value))|\($0.count)" } == top, "\(column)")
            // A sample as large as the result is the result: exact figures, not marked.
            var whole = try result.summary(of: column, rows: .sample(result.count))
            #expect(whole.sampledFrom == nil)
            whole.sampledFrom = nil
            #expect(whole == (try result.summary(of: column)))
        }
        // A row deleted since the fetch drops out of the sample as it does out of the result.
        let first = rowid(positions[0])
        try direct(path) { try $0.execute(sql: "DELETE FROM s WHERE id = \(first)") }
        let left: Int = n - 1
        #expect(try result.summary(of: "w", rows: .sample(n)).rows == left)

        let other = try makeDatabase(dir, "other.sqlite", sql: """
            CREATE TABLE s(id INTEGER PRIMARY KEY, v, w TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) INSERT INTO s SELECT x, x, 'b' FROM c;
            """)
        let coordinator = try PersistentStoreCoordinator(stores: [try PersistentStore(path: path), try PersistentStore(path: other)])
        let several = try CoordinatedContext(coordinator: coordinator).fetchBatched(FetchRequest(entityName: "s", fetchBatchSize: 50))
        let sampled = try several.summary(of: "w", rows: .sample(50))
        let expectedRows = 50
        #expect(sampled.sampledFrom == several.count && sampled.rows == expectedRows)
        #expect(sampled.storageClasses == ["text"] && sampled.max == .text("b"), "the second store's rows are in the sample")
    }

    @Test("a cancel stops the summary; an unknown column is refused")
    func cancelAndErrors() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) INSERT INTO n SELECT x, x FROM c;
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "n", fetchBatchSize: 100))
        do {
            _ = try result.summary(of: "v") { _ in .cancel }
            Issue.record("a cancel must stop the summary")
        } catch let error as BatchStoreError {
            #expect(error.code == .cancelled)
        }
        #expect(throws: BatchStoreError.self) { _ = try result.summary(of: "colour") }
        let v = try result.summary(of: "v")
        #expect(v.distinct == 300_000 && v.min == .integer(1) && v.max == .integer(300_000) && v.mean == 150_000.5)
        #expect(v.mostFrequent == ValueCount(value: .integer(1), count: 1))
    }
}

/// Binned frequencies (`B` on a frequency sheet): each bin and count compared with the sqlite3
/// shell's own GROUP BY of `floor(v / w) * w`, and each bin's range predicate selecting exactly
/// its count of rows.
@Suite("Frequencies in bins")
struct BinnedFrequencyTests {
    @Test("bins of 1, 10 and 100 as the shell's GROUP BY of floor(v / w) * w: negatives, reals, NULL, text and a blob kept as themselves; a filter")
    func binsMatchTheShell() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE b(id INTEGER PRIMARY KEY, v);
            INSERT INTO b(v) VALUES (0), (9), (10), (-1), (-10), (-11), (2.5), (-2.5), (99.99), (100), (1e3), (NULL), ('12'), ('x'), (x'00'),
              (-0.5), (19.999999999999996), (20), (5), (5.0);
            """)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        for (predicate, condition) in [(nil, "1"), ("id > 4", "id > 4")] as [(String?, String)] {
            let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "b", predicate: try predicate.map { try FetchPredicate(format: $0) }, fetchBatchSize: 4))
            #expect(try result.numericRange(of: "v") == (condition == "1" ? -11...1000 : -11...1000))
            for width in [1, 10, 100] as [Int64] {
                for rows in [ResultRows.fetched, .matchingNow] {
                    let f = try result.frequencies(of: "v", binWidth: width, rows: rows)
                    #expect(f.binWidth == width)
                    let ours = try f.values(in: 0..<f.count).map { "\(FrequencyTests().quoted($0.value))|\($0.count)" }
                    let shell = try sqlite3(path, """
                        SELECT quote(bin), count(*) FROM (SELECT CASE WHEN typeof(v) IN ('integer', 'real') THEN CAST(floor(v * 1.0 / \(width)) * \(width) AS INTEGER) ELSE v END AS bin FROM b WHERE \(condition))
                        GROUP BY bin ORDER BY bin
                        """).split(separator: "\n").map(String.init)
                    #expect(ours == shell, "width \(width) where \(condition), \(rows)")
                    // Each bin's rows, as Enter filters them: exactly its count (text never in a bin).
                    for entry in try f.values(in: 0..<f.count) {
                        guard case .integer(let low) = entry.value else { continue }
                        let format = "v >= \(low) AND v < \(low + width)" + (predicate.map { " AND (\($0))" } ?? "")
                        let n = try context.count(for: BatchStore.FetchRequest(entityName: "b", predicate: try FetchPredicate(format: format)))
                        #expect(n == entry.count, "\(format)")
                    }
                }
            }
        }
    }

    @Test("bin widths: powers of ten from 1 giving 1 to 1,000 bins over the range, narrowest first, at most four")
    func widths() {
        #expect(ValueFrequencies.binWidths(for: 1920...2025) == [1, 10, 100])
        #expect(ValueFrequencies.binWidths(for: 1...10) == [1])
        #expect(ValueFrequencies.binWidths(for: 0...1_997_001) == [10_000, 100_000, 1_000_000])
        #expect(ValueFrequencies.binWidths(for: 0.1...0.2) == [1])
        #expect(ValueFrequencies.binWidths(for: 0...1e15) == [1_000_000_000_000, 10_000_000_000_000, 100_000_000_000_000, 1_000_000_000_000_000])
    }
}
