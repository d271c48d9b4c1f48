import BatchStore
import Foundation
import GRDB
import Testing

@Suite struct UpsertTests {
    @Test func upsertUpdatesOnlyTheGivenColumnsOfAnExistingRowWhoseOtherColumnsAreNotNull() throws {
        let f = try BatchRequestTests.Fixture()
        let before = try direct(f.path) { db in try Row.fetchOne(db, sql: "SELECT * FROM movie WHERE id = 1") }
        let r = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: [["id": 1, "votes": 5], ["id": 1001, "title": "new"]],
                                                         conflictPolicy: .upsert, resultType: .changes))
        #expect(r.count == 2)
        #expect(r.changes?.updatedCount == 1 && r.changes?.insertedCount == 1, "updated and inserted rows are told apart")
        let after = try direct(f.path) { db in try Row.fetchOne(db, sql: "SELECT * FROM movie WHERE id = 1") }
        #expect(after?["votes"] as Int? == 5)
        #expect(after?["title"] as String? == before?["title"] as String?, "title is NOT NULL and was not given: untouched")
        #expect(after?["year"] as Int? == before?["year"] as Int?)
        let inserted = try direct(f.path) { db in try Row.fetchOne(db, sql: "SELECT * FROM movie WHERE id = 1001") }
        #expect(inserted?["title"] as String? == "new" && inserted?["votes"] as Int? == nil, "a new row takes the defaults")
    }

    @Test func aNewRowMissingANotNullColumnFailsNamingTheRowAndWritesNothing() throws {
        let f = try BatchRequestTests.Fixture()
        let before = try Data(contentsOf: URL(fileURLWithPath: f.path))
        do {
            _ = try f.context.execute(BatchInsertRequest(entityName: "movie", objects: [["id": 2, "votes": 1], ["id": 5000, "votes": 1]], conflictPolicy: .upsert))
            Issue.record("upserted")
        } catch let e as BatchStoreError {
            #expect(e.code == .constraint)
            #expect(e.message.hasPrefix("row 2: ") && e.message.contains("NOT NULL constraint failed: movie.title"), "\(e.message)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.path)) == before)
        #expect(!f.context.canUndo)
    }

    @Test func undoOfAnUpsertRestoresWhatItChangedAndDeletesWhatItInserted() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT UNIQUE); INSERT INTO director VALUES (1, 'Kurosawa'), (2, 'Varda'), (3, 'Ozu')")
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func dump() throws -> [[DatabaseValue]] { try direct(path) { db in try Row.fetchAll(db, sql: "SELECT rowid, * FROM director ORDER BY rowid").map { Array($0.databaseValues) } } }
        let original = try dump()
        // Row 2 finds Ozu (id 3) by its UNIQUE name and moves it to id 9; row 3 takes the name
        // Varda gives up in row 1; row 4 is new.
        let rows: [[String: SQLValue]] = [["id": 2, "name": "Agnès Varda"], ["id": 9, "name": "Ozu"], ["name": "Varda"], ["id": 20, "name": "Sembène"]]
        let r = try context.execute(BatchInsertRequest(entityName: "director", objects: rows, conflictPolicy: .upsert, resultType: .count), undoable: true)
        #expect(r.count == 4)
        let names = try direct(path) { db in try Row.fetchAll(db, sql: "SELECT id, name FROM director ORDER BY id").map { "\($0[0] as Int64) \($0[1] as String)" } }
        #expect(names == ["1 Kurosawa", "2 Agnès Varda", "9 Ozu", "10 Varda", "20 Sembène"])
        let undone = try context.undo()
        #expect(undone.deletedCount == 2 && undone.updatedCount == 2)
        #expect(try dump() == original, "every row back, the re-keyed one at its old key")
        #expect(try context.temporaryTableNames().filter { $0.hasPrefix("bs_undo") }.isEmpty)
    }

    /// Random upserts and undos on a real file, after every step compared with a dictionary model.
    @Test(arguments: [UpsertModel.Table.rowid, .withoutRowid])
    func randomUpsertsAndUndosMatchAModel(_ table: UpsertModel.Table) throws {
        let steps = ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_RUNS"].flatMap(Int.init).map { $0 / 100 } ?? 300
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: table.schema)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        var model = UpsertModel(table: table)
        var history: [UpsertModel] = []
        var lastRows: [[String: SQLValue]] = []
        defer { _ = lastRows }
        var random = SplitMix64(seed: 0xF00D + UInt64(table == .rowid ? 0 : 1))
        for step in 0..<steps {
            if random.below(4) == 0 && context.canUndo {
                try context.undo()
                model = history.removeLast()
            } else {
                let rows = (0..<(1 + random.below(5))).map { _ in model.randomRow(&random) }
                lastRows = rows
                let expected = model.upserting(rows)
                do {
                    let r = try context.execute(BatchInsertRequest(entityName: table.name, objects: rows, conflictPolicy: .upsert, resultType: .count), undoable: true)
                    #expect(expected != nil, "step \(step): \(rows) should have failed")
                    #expect(r.count == rows.count)
                    history.append(model)
                    model = expected ?? model
                } catch let e as BatchStoreError {
                    #expect(expected == nil, "step \(step): \(rows) failed: \(e)")
                }
            }
            let stored = try model.read(path)
            if stored != model.rows {
                let keys = Set(stored.keys).union(model.rows.keys).filter { stored[$0] != model.rows[$0] }
                Issue.record("step \(step), after \(lastRows.map(show)): the file differs from the model at \(keys.map { "\($0.map(show)): file \(stored[$0].map(show) ?? "none"), model \(model.rows[$0].map(show) ?? "none")" })")
                return
            }
        }
        while context.canUndo { try context.undo(); model = history.removeLast() }
        #expect(try model.read(path) == [:], "undoing everything empties the table")
    }
}

/// A value or row as readable, escaped text (a NUL would cut a test report short).
func show(_ value: SQLValue) -> String {
    switch value {
    case .text(let s): return s.debugDescription
    default: return value.description
    }
}

func show(_ row: [String: SQLValue]) -> String {
    "{" + row.sorted { $0.key < $1.key }.map { "\($0.key): \(show($0.value))" }.joined(separator: ", ") + "}"
}

/// A plain Swift model of an upsert: find the existing row by each uniqueness constraint in
/// turn, update the given columns or insert with defaults, check NOT NULL and UNIQUE.
struct UpsertModel: Equatable {
    enum Table: CustomTestStringConvertible {
        /// `u(id INTEGER PRIMARY KEY, code TEXT UNIQUE, a INTEGER NOT NULL, b TEXT DEFAULT 'd')`
        case rowid
        /// `w(k TEXT, n INTEGER, v TEXT NOT NULL, x INTEGER, PRIMARY KEY (k, n)) WITHOUT ROWID`
        case withoutRowid
        var name: String { self == .rowid ? "u" : "w" }
        var schema: String {
            self == .rowid
                ? "CREATE TABLE u(id INTEGER PRIMARY KEY, code TEXT UNIQUE, a INTEGER NOT NULL, b TEXT DEFAULT 'd')"
                : "CREATE TABLE w(k TEXT, n INTEGER, v TEXT NOT NULL, x INTEGER, PRIMARY KEY (k, n)) WITHOUT ROWID"
        }
        var columns: [String] { self == .rowid ? ["id", "code", "a", "b"] : ["k", "n", "v", "x"] }
        var key: [String] { self == .rowid ? ["id"] : ["k", "n"] }
        var constraints: [[String]] { self == .rowid ? [["id"], ["code"]] : [["k", "n"]] }
        var notNull: [String] { self == .rowid ? ["a"] : ["k", "n", "v"] }
        var defaults: [String: SQLValue] { self == .rowid ? ["b": "d"] : [:] }
        var testDescription: String { self == .rowid ? "rowid table with a UNIQUE column" : "WITHOUT ROWID, composite key" }
    }

    let table: Table
    var rows: [[SQLValue]: [String: SQLValue]] = [:]

    func randomRow(_ r: inout SplitMix64) -> [String: SQLValue] {
        func int(_ n: Int) -> SQLValue { r.below(12) == 0 ? .null : .integer(Int64(r.below(n))) }
        func text() -> SQLValue { r.below(12) == 0 ? .null : .text(r.pick(trickyTexts)) }
        var row: [String: SQLValue] = [:]
        for column in table.columns where r.below(3) != 0 {
            switch column {
            case "id", "n": row[column] = int(8)
            case "a", "x": row[column] = int(1000)
            // Few distinct codes and keys, so rows collide often.
            case "code", "k": row[column] = r.below(12) == 0 ? .null : .text(r.pick(Array(trickyTexts.prefix(6))))
            default: row[column] = text()
            }
        }
        return row
    }

    /// The model after upserting `rows` in one transaction, or nil when SQLite must refuse it.
    func upserting(_ given: [[String: SQLValue]]) -> UpsertModel? {
        var next = self
        for row in given {
            var found: [SQLValue]?
            for constraint in table.constraints {
                let values = constraint.map { row[$0] ?? .null }
                guard constraint.allSatisfy({ row[$0] != nil }), !values.contains(.null) else { continue }
                if let hit = next.rows.first(where: { _, stored in constraint.map { stored[$0] ?? .null } == values }) { found = hit.key; break }
            }
            var new: [String: SQLValue]
            if let found, let old = next.rows[found] {
                new = old.merging(row) { $1 }
                next.rows[found] = nil
                if table == .rowid, new["id"] == .null { return nil } // a rowid cannot become NULL (datatype mismatch)
            } else {
                new = Dictionary(uniqueKeysWithValues: table.columns.map { ($0, table.defaults[$0] ?? .null) }).merging(row) { $1 }
                if table == .rowid, new["id"] == .null {
                    new["id"] = .integer((next.rows.keys.compactMap { $0.first?.integerValue }.max() ?? 0) + 1)
                }
            }
            if table.notNull.contains(where: { new[$0] == .null }) { return nil }
            for constraint in table.constraints {
                let values = constraint.map { new[$0] ?? .null }
                if !values.contains(.null), next.rows.values.contains(where: { stored in constraint.map { stored[$0] ?? .null } == values }) { return nil }
            }
            next.rows[table.key.map { new[$0] ?? .null }] = new
        }
        return next
    }

    /// The table as stored, in the model's shape.
    func read(_ path: String) throws -> [[SQLValue]: [String: SQLValue]] {
        let table = self.table
        let rows = try readExactly(path, sql: "SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)")
        var out: [[SQLValue]: [String: SQLValue]] = [:]
        for row in rows {
            let values = Dictionary(uniqueKeysWithValues: zip(table.columns, row))
            out[table.key.map { values[$0] ?? .null }] = values
        }
        return out
    }
}

/// Rows of `sql` with text read byte-exact: GRDB reads text up to its first NUL, so text columns
/// are read as `CAST(… AS BLOB)` and decoded with their length.
func readExactly(_ path: String, sql: String) throws -> [[SQLValue]] {
    try direct(path) { db in
        let columnCount = try db.makeStatement(sql: sql).columnCount
        let wrapped = (0..<columnCount).map { "CAST(c\($0) AS BLOB), c\($0)" }.joined(separator: ", ")
        let names = (0..<columnCount).map { "c\($0)" }.joined(separator: ", ")
        return try Row.fetchAll(db, sql: "WITH q(\(names)) AS (\(sql)) SELECT \(wrapped) FROM q").map { row in
            (0..<columnCount).map { i -> SQLValue in
                let value: DatabaseValue = row[2 * i + 1]
                switch value.storage {
                case .null: return .null
                case .int64(let n): return .integer(n)
                case .double(let d): return .real(d)
                case .string: return .text(String(decoding: (row[2 * i] as Data?) ?? Data(), as: UTF8.self))
                case .blob(let d): return .blob(d)
                }
            }
        }
    }
}
