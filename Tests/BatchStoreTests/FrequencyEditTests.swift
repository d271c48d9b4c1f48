import BatchStore
import Foundation
import GRDB
import Testing

/// Edits of a frequency sheet's values (``ValueSelection``): for every value the count the edit
/// gives is the frequency sheet's count, and what the edit changes is exactly those rows, checked
/// with the sqlite3 shell on the file afterwards.
@Suite("Edits of a frequency sheet's values")
struct FrequencyEditTests {
    /// NULLs; the integer 1, the real 1.0, the text '1', 'x' and blobs in a column without
    /// affinity; non-ASCII text (composed and decomposed é, 日本) and a text holding NUL; a NOCASE
    /// column; numbers to bin, negative and fractional, beside text.
    func mixedFile(_ dir: TempDir, _ name: String = "mixed.sqlite") throws -> String {
        try makeDatabase(dir, name, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, u, g TEXT, c TEXT COLLATE NOCASE, n);
            INSERT INTO t(u, g, c, n) VALUES
              (1, 'é', 'Abc', 5), (1.0, 'É', 'abc', 5), ('1', 'e\u{301}', 'ABC', NULL), (NULL, '日本', 'x', -7), (NULL, NULL, NULL, 7),
              (x'01', 'é', 'X', 7.5), (2.5, '日本', 'y', NULL), ('x', 'é', 'Abc', 'text'), (1, 'a"b''c', 'z', 15), (NULL, 'é', 'Y', -0.5),
              ('', '', '', 10), ('1', 'É', 'abc', 99.9), (x'00ff', 'a' || char(0) || 'b', 'x', 1e3), ('x', 'a' || char(0) || 'b', 'y', x'01'),
              (9223372036854775807, 'q', 'q', -10), (-9223372036854775808, 'q', 'Q', 0.0);
            """)
    }

    /// The shell's `quote(value)|count` lines of `column`, most frequent first, grouped byte for
    /// byte as `==` compares (the NOCASE column's 'abc' and 'ABC' are two values).
    func shell(_ path: String, _ column: String, where condition: String = "") throws -> [String] {
        try sqlite3(path, "SELECT quote(\(column)), count(*) FROM t \(condition.isEmpty ? "" : "WHERE " + condition) GROUP BY \(column) COLLATE BINARY ORDER BY count(*) DESC, \(column) COLLATE BINARY")
            .split(separator: "\n").map(String.init)
    }

    func rowCount(_ path: String) throws -> Int {
        Int(try sqlite3(path, "SELECT count(*) FROM t").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// A copy of `path` to edit.
    func copy(_ path: String, _ dir: TempDir, _ name: String) throws -> String {
        let to = dir.path(name)
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: path, toPath: to)
        return to
    }

    @Test("unbinned: each value's delete count is its frequency count, and the delete removes exactly its rows (the shell's GROUP BY loses that line only)")
    func eachValue() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        for (column, condition) in [("u", ""), ("g", ""), ("c", ""), ("n", ""), ("u", "id > 3"), ("c", "id <= 8")] {
            let before = try shell(path, column, where: condition)
            let predicate = condition.isEmpty ? nil : try FetchPredicate(format: condition)
            let context = try ManagedObjectContext(store: try PersistentStore(path: path))
            let result = try context.fetchBatched(FetchRequest(entityName: "t", predicate: predicate, fetchBatchSize: 4))
            let f = try result.frequencies(of: column)
            let entries = try f.values(in: 0..<f.count)
            #expect(entries.count == before.count, "\(column) \(condition)")
            for (i, entry) in entries.enumerated() {
                let selection = ValueSelection(attribute: column, values: [entry.value])
                #expect(try result.count(forDelete: BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t", predicate: predicate)), values: selection) == entry.count,
                        "\(column) \(condition): \(entry.value)")
                // On a copy: the delete, then the shell.
                let edited = try copy(path, dir, "edit.sqlite")
                let other = try ManagedObjectContext(store: try PersistentStore(path: edited))
                let r = try other.fetchBatched(FetchRequest(entityName: "t", predicate: predicate, fetchBatchSize: 4))
                let deleted = try r.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t", predicate: predicate), resultType: .count), values: selection)
                #expect(deleted.count == entry.count)
                var expected = before
                expected.remove(at: i)
                #expect(try shell(edited, column, where: condition) == expected, "\(column) \(condition): \(entry.value)")
                #expect(try rowCount(edited) == 16 - entry.count)
            }
        }
    }

    @Test("two values at once: the sum of their counts; NULL with another value")
    func severalValues() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4))
        let f = try result.frequencies(of: "u")
        let entries = try f.values(in: 0..<f.count)
        for a in entries.indices {
            for b in entries.indices where b > a {
                let selection = ValueSelection(attribute: "u", values: [entries[a].value, entries[b].value])
                #expect(try result.count(forDelete: BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t")), values: selection) == entries[a].count + entries[b].count)
            }
        }
        #expect(try result.count(forDelete: BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t")), values: ValueSelection(attribute: "u", values: [])) == 0)
    }

    @Test("binned: each bin's count (numbers in [lo, lo+width), text and blobs as themselves, NULL) is what the delete removes; no number of the bin is left")
    func bins() throws {
        let dir = TempDir()
        let path = try mixedFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4))
        let range = try #require(try result.numericRange(of: "n"))
        let widths = ValueFrequencies.binWidths(for: range)
        #expect(widths.count >= 2)
        for width in widths {
            let f = try result.frequencies(of: "n", binWidth: width)
            for entry in try f.values(in: 0..<f.count) {
                let selection = ValueSelection(attribute: "n", values: [entry.value], binWidth: width)
                #expect(try result.count(forDelete: BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t")), values: selection) == entry.count,
                        "bins of \(width): \(entry.value)")
                let edited = try copy(path, dir, "bin.sqlite")
                let r = try ManagedObjectContext(store: try PersistentStore(path: edited)).fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4))
                #expect(try r.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t"), resultType: .count), values: selection).count == entry.count)
                #expect(try rowCount(edited) == 16 - entry.count)
                switch entry.value {
                case .integer(let lo):
                    // The plain Swift model of the bin: numbers lo <= n < lo + width; none is left.
                    let left = try sqlite3(edited, "SELECT count(*) FROM t WHERE typeof(n) IN ('integer', 'real') AND n >= \(lo) AND n < \(lo + width)")
                    #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "bins of \(width): \(lo)")
                default:
                    let left = try sqlite3(edited, "SELECT count(*) FROM t WHERE n IS \(entry.value.sqlLiteral)")
                    #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "bins of \(width): \(entry.value)")
                }
            }
        }
    }

    @Test("an update of two values changes exactly their rows, and undo restores the file the shell saw")
    func updateAndUndo() throws {
        let dir = TempDir()
        let path = try copy(try mixedFile(dir), dir, "undo.sqlite")
        let before = try sqlite3(path, "SELECT id, quote(u), quote(g), quote(c), quote(n) FROM t ORDER BY id")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4))
        let f = try result.frequencies(of: "c")
        let entries = try f.values(in: 0..<2)
        let selection = ValueSelection(attribute: "c", values: entries.map(\.value))
        let update = BatchUpdateRequest(entityName: "t", predicate: nil, propertiesToUpdate: try UpdateExpression.parseAssignments("g = \"changed\""), resultType: .count)
        #expect(try result.count(forUpdate: update, values: selection) == entries[0].count + entries[1].count)
        let changed = try result.execute(update, values: selection, undoable: true)
        #expect(changed.count == entries[0].count + entries[1].count)
        #expect(try sqlite3(path, "SELECT count(*) FROM t WHERE g = 'changed'").trimmingCharacters(in: .whitespacesAndNewlines) == String(entries[0].count + entries[1].count))
        _ = try context.undo()
        #expect(try sqlite3(path, "SELECT id, quote(u), quote(g), quote(c), quote(n) FROM t ORDER BY id") == before)
        let deleted = try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t"), resultType: .count), values: selection, undoable: true)
        #expect(deleted.count == entries[0].count + entries[1].count)
        _ = try context.undo()
        #expect(try sqlite3(path, "SELECT id, quote(u), quote(g), quote(c), quote(n) FROM t ORDER BY id") == before)
    }

    @Test("over two files: each store's rows of the values, in one edit")
    func severalStores() throws {
        let dir = TempDir()
        let a = try mixedFile(dir, "a.sqlite"), b = try mixedFile(dir, "b.sqlite")
        let coordinator = try PersistentStoreCoordinator(stores: [try PersistentStore(path: a), try PersistentStore(path: b)])
        let context = try CoordinatedContext(coordinator: coordinator)
        let result = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 4))
        let f = try result.frequencies(of: "u")
        for entry in try f.values(in: 0..<f.count) {
            let selection = ValueSelection(attribute: "u", values: [entry.value])
            #expect(try result.count(forDelete: BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t")), values: selection) == entry.count, "\(entry.value)")
        }
        let first = try #require(try f.values(in: 0..<1).first)
        let deleted = try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t"), resultType: .count), values: ValueSelection(attribute: "u", values: [first.value]))
        #expect(deleted.count == first.count)
        #expect(try rowCount(a) + rowCount(b) == 32 - first.count)
    }

    @Test("values a decimal or a String cannot carry: text that is not valid UTF-8 and reals SQLite would parse back to another double; each value's edit counts its own rows, and a delete removes exactly them")
    func exactValues() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, v);
            INSERT INTO t(v) VALUES (CAST(X'636166E9' AS TEXT)), (CAST(X'636166E9' AS TEXT)), ('caf' || char(65533)), (CAST(X'FF' AS TEXT)),
              ('a' || char(0) || 'b'), ('a' || char(0) || 'c'), ('a');
            """)
        // Reals whose shortest decimal SQLite 3.40 reads back as another double (found in review),
        // each twice, and random ones once.
        var reals: [Double] = [0xc11d1e9548a7f5bd, 0xc12df3605aefc49f, 0x3c2603a992d42779].map { Double(bitPattern: $0) }
        reals += reals
        var rng = SplitMix64(seed: 77)
        while reals.count < 2_006 {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { reals.append(d) }
        }
        try direct(path) { db in
            for d in reals { try db.execute(sql: "INSERT INTO t(v) VALUES (?)", arguments: [d]) }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let result = try context.fetchBatched(FetchRequest(entityName: "t", fetchBatchSize: 50))
        let f = try result.frequencies(of: "v")
        let entries = try f.values(in: 0..<f.count)
        let all = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t"))
        var wrong: [String] = []
        for (i, entry) in entries.enumerated() {
            let n = try result.count(forDelete: all, values: try f.selection(at: [i]))
            if n != entry.count { wrong.append("\(entry.value): \(n) rows, counted \(entry.count)") }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        // A recount finds each value where it is, byte for byte ('a', 'a\0b' and 'a\0c' are three values).
        let misplaced = try (0..<f.count).filter { try f.position(of: try f.selection(at: [$0])) != $0 }
        #expect(misplaced.isEmpty, "\(misplaced.prefix(5))")
        // The two invalid-UTF-8 rows (first: most frequent, then by value) go; 'caf\u{FFFD}' and X'FF' stay.
        // Both show as "caf\u{FFFD}" (a String repairs the byte): the invalid one is the one counted twice.
        let position = try #require(entries.firstIndex { $0.value == .text("caf\u{FFFD}") && $0.count == 2 })
        #expect(entries.filter { $0.value == .text("caf\u{FFFD}") }.map(\.count).sorted() == [1, 2])
        let deleted = try result.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "t"), resultType: .count), values: try f.selection(at: [position]))
        #expect(deleted.count == 2)
        let left = try sqlite3(path, "SELECT hex(v) FROM t WHERE typeof(v) = 'text' ORDER BY id")
        #expect(left.split(separator: "\n") == ["636166EFBFBD", "FF", "610062", "610063", "61"], "\(left)")
    }

    @Test("literals read back as the same value and storage class")
    func literals() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(v);")
        var values: [SQLValue] = [.null, .integer(0), .integer(.max), .integer(.min), .integer(-5), .real(1), .real(-0.5), .real(1e300), .real(-1e-300),
                                  .real(.infinity), .real(-.infinity), .text(""), .text("it's"), .text("a\u{0}b"), .text("日本"), .blob(Data([0, 255])), .blob(Data()),
                                  .real(-0.0), .real(.leastNonzeroMagnitude), .real(-.greatestFiniteMagnitude), .real(0.1), .real(9_007_199_254_740_993.0),
                                  .real(Double(bitPattern: 0xc11d1e9548a7f5bd)), .real(Double(bitPattern: 0x3c2603a992d42779))]
        var rng = SplitMix64(seed: 5)
        while values.count < 3_000 {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { values.append(.real(d)) }
        }
        let db = try DatabaseQueue(path: path)
        for value in values {
            let back = try db.read { db in try Row.fetchOne(db, sql: "SELECT \(value.sqlLiteral), typeof(\(value.sqlLiteral)), hex(\(value.sqlLiteral))") }
            let row = try #require(back)
            let expected = value.storageClass
            #expect(row[1] as String? == expected, "\(value.sqlLiteral)")
            if case .text(let text) = value {
                // GRDB reads text up to a NUL: compare the bytes.
                #expect(row[2] as String? == text.utf8.map { String(format: "%02X", $0) }.joined(), "\(value.sqlLiteral)")
            } else if case .real(let d) = value, d.isFinite {
                // Bit for bit (the sign of zero included).
                #expect((row[0] as Double?)?.bitPattern == d.bitPattern, "\(value.sqlLiteral)")
            } else {
                #expect((row[0] as DatabaseValue) == dbValue(value), "\(value.sqlLiteral)")
            }
        }
    }

    func dbValue(_ value: SQLValue) -> DatabaseValue {
        switch value {
        case .null: return .null
        case .integer(let i): return i.databaseValue
        case .real(let d): return d.databaseValue
        case .text(let s): return s.databaseValue
        case .blob(let b): return b.databaseValue
        }
    }
}
