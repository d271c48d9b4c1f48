import BatchStore
import BatchStorePostgres
import Foundation
import GRDB
import Testing
import TestSupport

/// Batch updates and deletes over PostgreSQL, against a model: a random sequence of edits runs on
/// a SQLite file and on a PostgreSQL database holding the same rows, and after every step both
/// must hold exactly what a plain Swift mirror holds (the rows the predicate selects, computed
/// from the rows before the step, changed by Swift's own arithmetic and text functions). A
/// failing sequence is shrunk to the fewest steps that still fail.
@Suite("PostgreSQL batch edits", .tags(.postgres), .timeLimit(slowTestLimit))
struct PostgresBatchEditTests {
    typealias Row10 = [SQLValue]
    /// Columns of `r` (as in the cross-engine test): id, n0, x, s, b, d, f, p_id, n, i.
    static let columns = ["id", "n0", "x", "s", "b", "d", "f", "p_id", "n", "i"]
    static let people: [(Int, String?)] = [(1, "Kurosawa"), (2, nil), (3, "élan"), (4, "Ōzu")]

    /// An assignment both engines can hold the result of, and what it does to a row in Swift.
    struct Assignment: Sendable {
        let text: String
        let apply: @Sendable (Row10) -> Row10
    }

    static func int(_ v: SQLValue) -> Int64? { v.integerValue }
    static func real(_ v: SQLValue) -> Double? { v.doubleValue }

    static let assignments: [Assignment] = [
        Assignment(text: "n = n + 1") { r in var r = r; r[8] = int(r[8]).map { .integer($0 + 1) } ?? .null; return r },
        Assignment(text: "n = coalesce(n, 0) - 3") { r in var r = r; r[8] = .integer((int(r[8]) ?? 0) - 3); return r },
        // Every right-hand side reads the row as it was: x gets the old n.
        Assignment(text: "n = 7, x = n") { r in var r = r; r[2] = real(r[8]).map { .real($0) } ?? .null; r[8] = 7; return r },
        Assignment(text: "n = nil") { r in var r = r; r[8] = .null; return r },
        Assignment(text: "i = abs(i)") { r in var r = r; r[9] = int(r[9]).map { .integer(abs($0)) } ?? .null; return r },
        Assignment(text: "x = x * 2") { r in var r = r; r[2] = real(r[2]).map { .real($0 * 2) } ?? .null; return r },
        Assignment(text: "x = n / 4") { r in var r = r; r[2] = real(r[8]).map { .real($0 / 4) } ?? .null; return r },
        Assignment(text: "x = round(x, 1)") { r in var r = r; r[2] = real(r[2]).map { .real(($0 * 10).rounded(.toNearestOrAwayFromZero) / 10) } ?? .null; return r },
        Assignment(text: "s = uppercase(s)") { r in var r = r; r[3] = r[3].textValue.map { .text($0.uppercased()) } ?? .null; return r },
        Assignment(text: "s = concat(s, '!'), d = '2030-01-01'") { r in var r = r; r[3] = .text((r[3].textValue ?? "") + "!"); r[5] = .text("2030-01-01"); return r },
        Assignment(text: "f = 1, s = nil") { r in var r = r; r[6] = 1; r[3] = .null; return r },
        Assignment(text: "f = 0, n0 = 12") { r in var r = r; r[6] = 0; r[1] = 12; return r },
    ]

    enum Step: CustomStringConvertible {
        case update(predicate: String, assignment: Int, result: BatchResultType, undoable: Bool)
        case delete(predicate: String, sort: [BatchStore.SortDescriptor], limit: Int, result: BatchResultType, undoable: Bool)
        case deleteIDs([Int64], undoable: Bool)
        /// Rows of `id` and some of `n`, `x`, `s` (the rest NULL), with a conflict policy.
        case insert([[String: SQLValue]], BatchInsertRequest.ConflictPolicy, undoable: Bool)
        /// A result fetched with `filter`; then a row matching anything (`id` fresh, every other
        /// column NULL but `n`) inserted behind its back; then an update (`assignment`) or a
        /// delete (nil) of the result's rows that `predicate` matches, through the result: the
        /// new row must not be touched. With `marked`, only those rows (marks the browser's `v`
        /// makes, some outside the result): an update's predicate still applies, a delete's not.
        /// With `values`, only rows holding values of a frequency sheet of that column over the
        /// result (the sheet's `v` and `D`/`U`): `picks` are positions on it, modulo its length.
        case resultEdit(filter: String, predicate: String, assignment: Int?, undoable: Bool, marked: [Int64]?, values: (column: String, picks: [Int])?)
        /// Undo of the last undoable edit (both engines; nothing to undo is an error on both).
        case undo

        var kind: String {
            switch self {
            case .update(_, _, _, let undoable): return undoable ? "undoable update" : "update"
            case .delete(_, let sort, _, _, let undoable): return (sort.isEmpty ? "delete" : "delete first N") + (undoable ? " (undoable)" : "")
            case .deleteIDs: return "delete ids"
            case .insert(_, _, let undoable): return undoable ? "undoable insert" : "insert"
            case .resultEdit(_, _, let a, _, let marked, let values):
                return (a == nil ? "result delete" : "result update") + (marked == nil ? "" : " (marked)") + (values == nil ? "" : " (sheet values)")
            case .undo: return "undo"
            }
        }

        var description: String {
            switch self {
            case .update(let p, let a, let r, let u): return "update where \(p) set \(PostgresBatchEditTests.assignments[a].text) (\(r))\(u ? " undoable" : "")"
            case .delete(let p, let s, let l, let r, let u): return "delete where \(p) sorted by \(s) limit \(l) (\(r))\(u ? " undoable" : "")"
            case .deleteIDs(let ids, let u): return "delete ids \(ids)\(u ? " undoable" : "")"
            case .insert(let rows, let policy, let u):
                return "insert \(policy) \(rows.map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") })\(u ? " undoable" : "")"
            case .resultEdit(let f, let p, let a, let u, let marked, let values):
                return "in the result of \(f): \(a.map { "update set \(PostgresBatchEditTests.assignments[$0].text)" } ?? "delete") where \(p)\(marked.map { " marked \($0)" } ?? "")"
                    + "\(values.map { " values \($0.picks) of \($0.column)'s sheet" } ?? "")\(u ? " undoable" : "")"
            case .undo: return "undo"
            }
        }
    }

    /// What the model must do to undo one edit: an update's old values of the columns it
    /// assigned, by id; a delete's rows.
    enum ModelUndo {
        case update([Int64: [Int: SQLValue]])
        case delete([Row10])
        case insert([Int64])
        /// An upsert's: the rows it updated as they were before it, and the keys it inserted.
        case upsert(old: [Int64: Row10], inserted: [Int64])
    }

    static func step(_ g: inout SeededGenerator) -> Step {
        let result = g.pick([BatchResultType.statusOnly, .count, .objectIDs, .changes])
        let undoable = g.next(2) == 0
        switch g.next(9) {
        case 0, 1, 2:
            return .update(predicate: CrossEngineTests.tree(&g, depth: 2).format, assignment: g.next(assignments.count), result: result, undoable: undoable)
        case 3:
            let sort = (0..<g.next(3)).map { _ in BatchStore.SortDescriptor(key: g.pick(["n", "x", "s", "d", "f", "p.name"]), ascending: g.next(2) == 0) }
            return .delete(predicate: CrossEngineTests.tree(&g, depth: 1).format, sort: sort, limit: sort.isEmpty ? 0 : 1 + g.next(6), result: result, undoable: undoable)
        case 4:
            return .deleteIDs((0..<(1 + g.next(4))).map { _ in Int64(1 + g.next(150)) }, undoable: undoable)
        case 5, 6:
            let filter = CrossEngineTests.tree(&g, depth: 1).format, predicate = CrossEngineTests.tree(&g, depth: 1).format
            let assignment = g.next(3) == 0 ? nil : g.next(assignments.count)
            let marked = g.next(3) == 0 ? (0..<(1 + g.next(5))).map { _ in Int64(1 + g.next(150)) } : nil
            var values: (column: String, picks: [Int])?
            if marked == nil, g.next(2) == 0 {
                let column = g.pick(["n", "x", "s"])
                values = (column, (0..<(1 + g.next(3))).map { _ in g.next(1_000) })
            }
            return .resultEdit(filter: filter, predicate: predicate, assignment: assignment, undoable: undoable, marked: marked, values: values)
        case 7:
            return .undo
        default:
            // fail: new keys only (a conflict would fail both engines alike); ignore and upsert:
            // keys among the table's, absent ones and repeats.
            let policy = g.pick([BatchInsertRequest.ConflictPolicy.fail, .ignore, .upsert])
            var fresh = Set<Int64>()
            let rows = (0..<(1 + g.next(5))).map { _ -> [String: SQLValue] in
                var id = Int64(10_000 + g.next(1_000_000))
                if case .fail = policy {
                    while !fresh.insert(id).inserted { id = Int64(10_000 + g.next(1_000_000)) }
                } else {
                    id = Int64(1 + g.next(200))
                }
                var row: [String: SQLValue] = ["id": .integer(id)]
                if g.next(2) == 0 { row["n"] = g.next(5) == 0 ? .null : .integer(Int64(g.next(40) - 10)) }
                if g.next(2) == 0 { row["x"] = .real(Double(g.next(20)) / 4) }
                if g.next(2) == 0 { row["s"] = .text(g.pick(CrossEngineTests.texts)) }
                return row
            }
            return .insert(rows, policy, undoable: undoable)
        }
    }

    /// Both engines, reset to `rows` before each run of a sequence.
    final class Engines {
        let path: String
        let server: PostgresServer
        let database: String
        let store: PostgresStore
        let rows: [Row10]
        /// Kept for as long as the engines: the folder goes when it does.
        let dir: TempDir

        init(server: PostgresServer, dir: TempDir, rows: [Row10]) throws {
            self.dir = dir
            self.server = server
            self.rows = rows
            path = try makeDatabase(dir, sql: """
                CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT);
                CREATE TABLE r(id INTEGER PRIMARY KEY, n0 INTEGER, x REAL, s TEXT, b BLOB, d TEXT, f INTEGER, p_id INTEGER REFERENCES p(id), n INTEGER, i INTEGER);
                """)
            try direct(path) { db in
                for (id, name) in PostgresBatchEditTests.people { try db.execute(sql: "INSERT INTO p VALUES (?, ?)", arguments: [id, name]) }
            }
            database = try server.makeDatabase("edits", sql: """
                CREATE TABLE p(id int PRIMARY KEY, name text);
                CREATE TABLE r(id bigint PRIMARY KEY, n0 bigint, x double precision, s text, b bytea, d date, f boolean, p_id int REFERENCES p(id),
                               n bigint, i int);
                INSERT INTO p VALUES \(PostgresBatchEditTests.people.map { "(\($0.0), \($0.1.map { postgresLiteral(.text($0)) } ?? "NULL"))" }.joined(separator: ", "));
                """)
            store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        }

        func reset() throws {
            try direct(path) { db in
                try db.execute(sql: "DELETE FROM r")
                for row in rows { try db.execute(sql: "INSERT INTO r VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments: statementArguments(row)) }
            }
            let values = rows.map { row in "(" + row.enumerated().map { CrossEngineTests.pgLiteral($1, column: $0) }.joined(separator: ", ") + ")" }
            _ = try server.psql("TRUNCATE r; INSERT INTO r VALUES \(values.joined(separator: ", "))", database: database)
        }

        /// What the file holds, by id, each value as SQLite stores it.
        func sqliteRows() throws -> [Row10] {
            try direct(path) { db in
                try Row.fetchAll(db, sql: "SELECT * FROM r ORDER BY id").map { row in
                    (0..<10).map { i -> SQLValue in
                        switch (row[i] as DatabaseValue).storage {
                        case .null: return .null
                        case .int64(let v): return .integer(v)
                        case .double(let v): return .real(v)
                        case .string(let v): return .text(v)
                        case .blob(let v): return .blob(v)
                        }
                    }
                }
            }
        }

        /// What the database holds, by id, read as results read it.
        func postgresRows() throws -> [Row10] {
            let result = try store.fetchBatched(BatchStore.FetchRequest(entityName: "r", sortDescriptors: [SortDescriptor(key: "id")]))
            return try result.map { object in try PostgresBatchEditTests.columns.map { try #require(object).value(forKey: $0) } }
        }
    }

    /// Runs `steps` from the starting rows; the first disagreement with the model, or nil.
    static func run(_ steps: [Step], on engines: Engines, changed: inout Int) throws -> String? {
        try engines.reset()
        var model = engines.rows
        var undos: [ModelUndo] = []
        // One context per engine for the whole sequence: their undo stacks are what undo reads.
        let contexts = (try ManagedObjectContext(store: try PersistentStore(path: engines.path)), PostgresContext(store: engines.store))
        for (n, step) in steps.enumerated() {
            do {
                let before = Dictionary(uniqueKeysWithValues: model.map { ($0[0], $0) })
                if let failure = try check(step, number: n, model: &model, undos: &undos, contexts: contexts, on: engines) { return failure }
                let after = Dictionary(uniqueKeysWithValues: model.map { ($0[0], $0) })
                changed += Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.count
            } catch {
                return "step \(n + 1) \(step) threw: \(error)"
            }
        }
        return nil
    }

    /// Runs one step on both engines and the model; the disagreement, or nil.
    static func check(_ step: Step, number n: Int, model: inout [Row10], undos: inout [ModelUndo],
                      contexts: (ManagedObjectContext, PostgresContext), on engines: Engines) throws -> String? {
        do {
            let (sqlite, pg) = contexts
            /// Records the model's undo of an edit of `ids`: `columns` of those rows, or the rows whole.
            func journal(_ ids: [Int64], columns: [Int]?, undoable: Bool) {
                guard undoable else { return }
                let rows = model.filter { ids.contains($0[0].integerValue ?? -1) }
                if let columns {
                    undos.append(.update(Dictionary(uniqueKeysWithValues: rows.map { row in (row[0].integerValue ?? -1, Dictionary(uniqueKeysWithValues: columns.map { ($0, row[$0]) })) })))
                } else {
                    undos.append(.delete(rows))
                }
            }
            func assigned(_ a: Int) throws -> [Int] {
                try UpdateExpression.parseAssignments(assignments[a].text).compactMap { columns.firstIndex(of: $0.name) }
            }
            let sqliteEntity = try sqlite.entity(named: "r"), pgEntity = try pg.entity(named: "r")
            var expectedIDs: [Int64]
            let results: [BatchResult]
            let resultType: BatchResultType
            switch step {
            case .update(let predicate, let a, let type, let undoable):
                let request = BatchUpdateRequest(entityName: "r", predicate: try FetchPredicate(format: predicate),
                                                 propertiesToUpdate: try UpdateExpression.parseAssignments(assignments[a].text), resultType: type)
                expectedIDs = try sqlite.fetchAll(BatchStore.FetchRequest(entityName: "r", predicate: request.predicate)).map { try $0.value(forKey: "id").integerValue ?? -1 }
                journal(expectedIDs, columns: try assigned(a), undoable: undoable)
                model = model.map { expectedIDs.contains($0[0].integerValue ?? -1) ? assignments[a].apply($0) : $0 }
                results = [try sqlite.execute(request, undoable: undoable), try pg.execute(request, undoable: undoable)]
                resultType = type
            case .delete(let predicate, let sort, let limit, let type, let undoable):
                let fetch = BatchStore.FetchRequest(entityName: "r", predicate: try FetchPredicate(format: predicate), sortDescriptors: sort, fetchLimit: limit)
                expectedIDs = try sqlite.fetchAll(fetch).map { try $0.value(forKey: "id").integerValue ?? -1 }
                journal(expectedIDs, columns: nil, undoable: undoable)
                model.removeAll { expectedIDs.contains($0[0].integerValue ?? -1) }
                results = [try sqlite.execute(BatchDeleteRequest(fetchRequest: fetch, resultType: type), undoable: undoable),
                           try pg.execute(BatchDeleteRequest(fetchRequest: fetch, resultType: type), undoable: undoable)]
                resultType = type
            case .deleteIDs(let ids, let undoable):
                let present = Set(model.compactMap { $0[0].integerValue })
                expectedIDs = Array(Set(ids).intersection(present))
                journal(expectedIDs, columns: nil, undoable: undoable)
                model.removeAll { expectedIDs.contains($0[0].integerValue ?? -1) }
                let onSQLite = ids.map { ObjectID(entity: sqliteEntity, key: .rowid($0)) }
                let onPostgres = ids.map { ObjectID(entity: pgEntity, key: .primaryKey([.integer($0)])) }
                results = [try sqlite.execute(BatchDeleteRequest(objectIDs: onSQLite, resultType: .objectIDs), undoable: undoable),
                           try pg.execute(BatchDeleteRequest(objectIDs: onPostgres, resultType: .objectIDs), undoable: undoable)]
                resultType = .objectIDs
            case .resultEdit(let filter, let predicate, let a, let undoable, let marked, let values):
                let fetch = BatchStore.FetchRequest(entityName: "r", predicate: try FetchPredicate(format: filter))
                let onSQLite = try sqlite.fetchBatched(fetch), onPostgres = try pg.fetchBatched(fetch, residentBatches: 8, firstBatch: nil, progress: nil)
                // Marked rows are the rows of the result among them; a marked delete ignores the predicate.
                let chosen = marked != nil && a == nil ? filter : "(\(filter)) AND (\(predicate))"
                expectedIDs = try sqlite.fetchAll(BatchStore.FetchRequest(entityName: "r", predicate: try FetchPredicate(format: chosen)))
                    .map { try $0.value(forKey: "id").integerValue ?? -1 }
                if let marked { expectedIDs = expectedIDs.filter { marked.contains($0) } }
                // Values of a frequency sheet over each result (the engines' sheets agree: CrossEngineTests),
                // picked at the same positions; the model keeps the rows holding one of them.
                var selections: [ValueSelection]?
                if let values, let c = columns.firstIndex(of: values.column) {
                    let sheets = [try onSQLite.frequencies(of: values.column), try onPostgres.frequencies(of: values.column)]
                    if sheets[0].count > 0 {
                        let positions = Array(Set(values.picks.map { $0 % sheets[0].count })).sorted()
                        selections = try sheets.map { try $0.selection(at: positions) }
                        let chosenValues = try positions.compactMap { try sheets[0].values(in: $0..<($0 + 1)).first?.value }
                        // Text as the engines group it, byte for byte (Swift's == takes "é" and "e\u{301}" for one).
                        func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
                            if case .text(let x) = a, case .text(let y) = b { return Array(x.utf8) == Array(y.utf8) }
                            return a == b
                        }
                        let holding = Set(model.filter { row in chosenValues.contains { same($0, row[c]) } }.compactMap { $0[0].integerValue })
                        expectedIDs = expectedIDs.filter { holding.contains($0) }
                    }
                }
                let sqliteMarks = marked.map { ids in ids.map { ObjectID(entity: sqliteEntity, key: .rowid($0)) } }
                let postgresMarks = marked.map { ids in ids.map { ObjectID(entity: pgEntity, key: .primaryKey([.integer($0)])) } }
                // A row behind the results' backs, which every predicate of the test may match.
                let fresh = Int64(900_000 + n)
                try direct(engines.path) { db in try db.execute(sql: "INSERT INTO r (id, n) VALUES (?, 3)", arguments: [fresh]) }
                _ = try engines.server.psql("INSERT INTO r (id, n) VALUES (\(fresh), 3)", database: engines.database)
                var row = Row10(repeating: .null, count: columns.count)
                row[0] = .integer(fresh)
                row[8] = 3
                if let a {
                    journal(expectedIDs, columns: try assigned(a), undoable: undoable)
                    model = model.map { expectedIDs.contains($0[0].integerValue ?? -1) ? assignments[a].apply($0) : $0 }
                    let request = BatchUpdateRequest(entityName: "r", predicate: try FetchPredicate(format: predicate),
                                                     propertiesToUpdate: try UpdateExpression.parseAssignments(assignments[a].text), resultType: .count)
                    results = [try onSQLite.execute(request, objectIDs: sqliteMarks, values: selections?[0], undoable: undoable),
                               try onPostgres.execute(request, objectIDs: postgresMarks, values: selections?[1], undoable: undoable)]
                } else if let sqliteMarks, let postgresMarks {
                    journal(expectedIDs, columns: nil, undoable: undoable)
                    model.removeAll { expectedIDs.contains($0[0].integerValue ?? -1) }
                    results = [try onSQLite.execute(BatchDeleteRequest(objectIDs: sqliteMarks, resultType: .count), undoable: undoable),
                               try onPostgres.execute(BatchDeleteRequest(objectIDs: postgresMarks, resultType: .count), undoable: undoable)]
                } else {
                    journal(expectedIDs, columns: nil, undoable: undoable)
                    model.removeAll { expectedIDs.contains($0[0].integerValue ?? -1) }
                    let request = BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "r", predicate: try FetchPredicate(format: predicate)), resultType: .count)
                    results = [try onSQLite.execute(request, values: selections?[0], undoable: undoable),
                               try onPostgres.execute(request, values: selections?[1], undoable: undoable)]
                }
                model.append(row)
                model.sort { ($0[0].integerValue ?? 0) < ($1[0].integerValue ?? 0) }
                resultType = .count
            case .undo:
                expectedIDs = []
                results = []
                resultType = .count
                let outcomes = [Result { try sqlite.undo() }, Result { try pg.undo() }]
                guard let last = undos.last else {
                    for (engine, outcome) in zip(["SQLite", "PostgreSQL"], outcomes) {
                        if case .success = outcome { return "step \(n + 1) undo: \(engine) undid something with nothing to undo" }
                    }
                    break
                }
                var expectFailure = false
                switch last {
                case .update(let old):
                    model = model.map { row in
                        guard let id = row[0].integerValue, let values = old[id] else { return row }
                        var row = row
                        for (column, value) in values { row[column] = value }
                        return row
                    }
                case .insert(let ids):
                    model.removeAll { ids.contains($0[0].integerValue ?? -1) }
                case .upsert(let old, let inserted):
                    model.removeAll { inserted.contains($0[0].integerValue ?? -1) }
                    model = model.map { row in row[0].integerValue.flatMap { old[$0] } ?? row }
                case .delete(let rows):
                    // A key taken again since (an insert) makes both undos fail, changing nothing.
                    let present = Set(model.compactMap { $0[0].integerValue })
                    if rows.contains(where: { present.contains($0[0].integerValue ?? -1) }) {
                        expectFailure = true
                    } else {
                        model += rows
                        model.sort { ($0[0].integerValue ?? 0) < ($1[0].integerValue ?? 0) }
                    }
                }
                if !expectFailure { undos.removeLast() }
                for (engine, outcome) in zip(["SQLite", "PostgreSQL"], outcomes) {
                    switch (outcome, expectFailure) {
                    case (.failure(let error), false): return "step \(n + 1) undo: \(engine) failed: \(error)"
                    case (.success, true): return "step \(n + 1) undo: \(engine) restored rows whose keys were taken again"
                    default: break
                    }
                }
            case .insert(let rows, let policy, let undoable):
                // The model, row by row: a new key appends a row (the columns not given nil); an
                // existing one is skipped (ignore) or gets the given columns (upsert).
                expectedIDs = []
                let present = Set(model.compactMap { $0[0].integerValue })
                var old: [Int64: Row10] = [:]
                for row in rows {
                    let id = row["id"] ?? .null
                    var full = Row10(repeating: .null, count: columns.count)
                    if let i = model.firstIndex(where: { $0[0] == id }) {
                        guard case .upsert = policy else { continue }
                        full = model[i]
                        // The row as it was before the upsert (its first change), unless the upsert inserted it.
                        if let key = id.integerValue, present.contains(key), old[key] == nil { old[key] = model[i] }
                        model.remove(at: i)
                    }
                    for (name, value) in row { if let c = columns.firstIndex(of: name) { full[c] = value } }
                    model.append(full)
                    expectedIDs.append(id.integerValue ?? -1)
                }
                model.sort { ($0[0].integerValue ?? 0) < ($1[0].integerValue ?? 0) }
                if undoable {
                    if case .upsert = policy {
                        undos.append(.upsert(old: old, inserted: expectedIDs.filter { !present.contains($0) }))
                    } else {
                        undos.append(.insert(expectedIDs.filter { !present.contains($0) }))
                    }
                }
                results = [try sqlite.execute(BatchInsertRequest(entityName: "r", objects: rows, conflictPolicy: policy, resultType: .count), undoable: undoable),
                           try pg.execute(BatchInsertRequest(entityName: "r", objects: rows, conflictPolicy: policy, resultType: .count), undoable: undoable)]
                resultType = .count
            }
            expectedIDs.sort()
            for (engine, result) in zip(["SQLite", "PostgreSQL"], results) {
                let counted = resultType == .statusOnly ? nil : expectedIDs.count
                if !result.succeeded || result.count != counted {
                    return "step \(n + 1) \(step): \(engine) answered count \(result.count.map(String.init) ?? "nil"), expected \(counted.map(String.init) ?? "nil")"
                }
                if resultType == .objectIDs {
                    let ids = (result.objectIDs ?? []).map { $0.keyValues.first?.integerValue ?? -1 }.sorted()
                    if ids != expectedIDs { return "step \(n + 1) \(step): \(engine) answered IDs \(ids), expected \(expectedIDs)" }
                }
            }
            let (onSQLite, onPostgres) = (try engines.sqliteRows(), try engines.postgresRows())
            for (engine, rows) in [("SQLite", onSQLite), ("PostgreSQL", onPostgres)] where rows != model {
                let differing = zip(rows, model).first { $0 != $1 }.map { "\n  \(engine): \($0.0)\n  model: \($0.1)" } ?? " (\(rows.count) rows, model \(model.count))"
                return "step \(n + 1) \(step): \(engine) holds other rows than the model\(differing)"
            }
        }
        return nil
    }

    @Test("random batch updates, deletes and inserts, through the context or a result, undoable or not, and undos leave both engines holding what a Swift model predicts; a failure shrinks to the fewest steps")
    func randomEditsAgree() throws {
        let server = try PostgresServer.require()
        var g = SeededGenerator(state: 1124)
        let rows = CrossEngineTests.rows(&g)
        let engines = try Engines(server: server, dir: TempDir(), rows: rows)
        var changed = 0, ignored = 0
        var kinds = Set<String>()
        for sequence in 0..<8 {
            let steps = (0..<15).map { _ in Self.step(&g) }
            kinds.formUnion(steps.map(\.kind))
            guard let first = try Self.run(steps, on: engines, changed: &changed) else { continue }
            let (smallest, failure) = try shrink(steps, failure: first) { try Self.run($0, on: engines, changed: &ignored) }
            Issue.record("sequence \(sequence) fails in \(smallest.count) steps:\n  \(smallest.map(\.description).joined(separator: "\n  "))\n\(failure)")
            return
        }
        // The run is worth something: every kind of step ran, and many rows changed.
        #expect(kinds.isSuperset(of: ["update", "undoable update", "delete", "delete (undoable)", "delete first N", "delete ids", "insert", "undoable insert",
                                      "result update", "result delete", "result update (marked)", "result delete (marked)", "undo"]), "\(kinds)")
        #expect(changed >= 300, "\(changed) rows changed")
    }

    /// A database with a CHECK, a varchar(5), a date, a cascade and a table each of the kinds
    /// that cannot be edited.
    static func editDatabase(_ server: PostgresServer) throws -> (String, PostgresContext) {
        let database = try server.makeDatabase("edit", sql: """
            CREATE TABLE ed(id int PRIMARY KEY, name varchar(5), votes int CHECK (votes >= 0), score float8, born date);
            INSERT INTO ed SELECT g, 'n' || g, g, g / 2.0, DATE '2000-01-01' + g FROM generate_series(1, 100) g;
            CREATE TABLE child(id int PRIMARY KEY, ed_id int REFERENCES ed ON DELETE CASCADE);
            INSERT INTO child SELECT g, g FROM generate_series(1, 100) g;
            CREATE TABLE keyless(v int); INSERT INTO keyless VALUES (1);
            CREATE VIEW small AS SELECT * FROM ed WHERE id < 10;
            """)
        return (database, PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile)))
    }

    static func snapshot(_ server: PostgresServer, _ database: String) throws -> String {
        let ed = try server.psql("SELECT string_agg(concat_ws(',', id, name, votes, score, born), ';' ORDER BY id) FROM ed", database: database)
        return ed + "|" + (try server.psql("SELECT count(*) FROM child", database: database))
    }

    @Test("a failing update writes nothing and says why in one line: a CHECK, a bad date, a value too long, a fraction into an integer column, undo asked for")
    func failuresWriteNothing() throws {
        let server = try PostgresServer.require()
        let (database, context) = try Self.editDatabase(server)
        let before = try Self.snapshot(server, database)
        func update(_ set: String, where predicate: String? = nil, undoable: Bool = false) -> BatchStoreError? {
            do {
                let request = BatchUpdateRequest(entityName: "ed", predicate: try predicate.map { try FetchPredicate(format: $0) },
                                                 propertiesToUpdate: try UpdateExpression.parseAssignments(set), resultType: .count)
                _ = try context.execute(request, undoable: undoable)
                return nil
            } catch {
                return error as? BatchStoreError
            }
        }
        // Row 100 would pass the CHECK, row 1 not: the whole update is rolled back.
        let check = try #require(update("votes = votes - 2"))
        #expect(check.code == .constraint && check.message.contains("ed_votes_check"), "\(check)")
        let date = try #require(update("born = 'not a date'", where: "id > 50"))
        #expect(date.message.contains("invalid input syntax for type date"), "\(date)")
        let long = try #require(update("name = concat(name, 'xyz')"))
        #expect(long.message.contains("value too long for type character varying(5)"), "\(long)")
        // 7 / 2 has a fraction: PostgreSQL's own cast would store 4, SQLite would keep 3.5.
        let fraction = try #require(update("votes = votes / 2", where: "id >= 6 AND id <= 7"))
        #expect(fraction.message == "ed.votes holds integers, and the new value 3.5 has a fraction", "\(fraction)")
        // Undoable, the same failure journals nothing; over the undo limit, the update is rolled
        // back; a delete whose foreign keys cascade elsewhere is refused undo before it runs.
        #expect(update("votes = votes - 2", undoable: true)?.code == .constraint)
        context.undoLimit = 99
        let big = try #require(update("votes = votes + 1", undoable: true))
        #expect(big.code == .tooBigToUndo && big.message.contains("100 rows"), "\(big)")
        context.undoLimit = 1_000_000
        do {
            _ = try context.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: try context.entity(named: "ed"), key: .primaryKey([.integer(1)]))]), undoable: true)
            Issue.record("an undoable delete that cascades ran")
        } catch let error as BatchStoreError {
            #expect(error.code == .undoRefused && error.message.contains("child"), "\(error)")
        }
        #expect(!context.canUndo)
        #expect(try Self.snapshot(server, database) == before)
        // Even numbers halve exactly, so the same assignment passes there.
        #expect(update("votes = votes / 2", where: "id == 6") == nil)
        #expect(try server.psql("SELECT votes FROM ed WHERE id = 6", database: database) == "3")
    }

    @Test("undo over PostgreSQL: a key changed by the update is found again, identity and generated columns come back as they were, an insert's rows go again, an upsert's updated rows come back and its inserted rows go, rows changed since (a key taken again, a value written by another session) are left as they are and counted, a lost session says so in one line, the depth is kept")
    func undoEdges() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("undo", sql: """
            CREATE TABLE u(id int PRIMARY KEY, serial int GENERATED ALWAYS AS IDENTITY, v int, twice int GENERATED ALWAYS AS (v * 2) STORED, note text);
            INSERT INTO u (id, v, note) SELECT g, g * 10, 'n' || g FROM generate_series(1, 50) g;
            """)
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        let all = "SELECT string_agg(concat_ws(',', id, serial, v, twice, note), ';' ORDER BY id) FROM u"
        let start = try psql(all)
        func update(_ set: String, where predicate: String) throws -> BatchResult {
            try context.execute(BatchUpdateRequest(entityName: "u", predicate: try FetchPredicate(format: predicate),
                                                   propertiesToUpdate: try UpdateExpression.parseAssignments(set), resultType: .objectIDs), undoable: true)
        }
        // The key itself moves: undo finds the rows by their new keys and gives the old ones back.
        let moved = try update("id = id + 1000, v = 0", where: "id <= 5")
        #expect(moved.objectIDs?.map { $0.keyValues.first?.integerValue ?? 0 }.sorted() == [1001, 1002, 1003, 1004, 1005])
        #expect(try psql("SELECT count(*) FROM u WHERE id > 1000 AND v = 0 AND twice = 0") == "5")
        #expect(try context.undo().updatedCount == 5)
        #expect(try psql(all) == start)
        // A delete comes back whole: the identity column's values, the generated column computed again.
        let gone = try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "u", predicate: try FetchPredicate(format: "id >= 40")), resultType: .count), undoable: true)
        #expect(gone.count == 11)
        // Its key taken again since: the undo says so before it runs, leaves that row as it is
        // now and puts the others back.
        try psql("INSERT INTO u (id, v) VALUES (45, 1)")
        #expect(try context.undoSummary() == UndoSummary(kind: .delete, table: "u", rows: 11, changedSince: 1))
        let back = try context.undo()
        #expect(back.insertedCount == 10 && back.changedSince == 1, "\(back)")
        #expect(try psql("SELECT count(*) FROM u") == "50")
        #expect(try psql("SELECT v FROM u WHERE id = 45") == "1")
        try psql("DELETE FROM u WHERE id = 45; INSERT INTO u (id, serial, v, note) OVERRIDING SYSTEM VALUE VALUES (45, 45, 450, 'n45')")
        #expect(try psql(all) == start)
        // An update's rows another session changed (or deleted) since are left as they are; a row
        // set back to what the update wrote counts as unchanged.
        _ = try update("v = v + 1", where: "id >= 10 AND id <= 13")
        try psql("UPDATE u SET v = 999 WHERE id = 11; DELETE FROM u WHERE id = 12; UPDATE u SET v = 131 WHERE id = 13; UPDATE u SET note = 'other' WHERE id = 10")
        #expect(try context.undoSummary() == UndoSummary(kind: .update(columns: ["v"]), table: "u", rows: 4, changedSince: 2))
        let restored = try context.undo()
        #expect(restored.updatedCount == 2 && restored.changedSince == 2, "\(restored)")
        #expect(try psql("SELECT string_agg(concat_ws(',', id, v, note), ';' ORDER BY id) FROM u WHERE id >= 10 AND id <= 13") == "10,100,other;11,999,n11;13,130,n13")
        try psql("UPDATE u SET note = 'n10' WHERE id = 10; UPDATE u SET v = 110 WHERE id = 11; INSERT INTO u (id, serial, v, note) OVERRIDING SYSTEM VALUE VALUES (12, 12, 120, 'n12')")
        #expect(try psql(all) == start)
        // An insert's undo deletes the rows it wrote (with .ignore, not the rows it skipped); an
        // upsert's undo is refused before anything runs.
        let rows: [[String: SQLValue]] = [["id": 60, "v": 1], ["id": 61, "v": 2], ["id": 1, "v": 99]]
        let wrote = try context.execute(BatchInsertRequest(entityName: "u", objects: rows, conflictPolicy: .ignore, resultType: .count), undoable: true)
        #expect(wrote.count == 2)
        #expect(try psql("SELECT count(*) FROM u") == "52")
        #expect(try context.undo().deletedCount == 2)
        #expect(try psql(all) == start)
        // An upsert's undo puts back the columns it set in the rows it updated (as they were before
        // its first change of them: a key given twice is journaled once) and deletes the rows it
        // inserted (one inserted, then updated by a later row of the same upsert, goes too).
        let upserted: [[String: SQLValue]] = [["id": 1, "v": 99], ["id": 2, "note": "changed"], ["id": 70, "v": 7],
                                              ["id": 1, "v": 100, "note": "twice"], ["id": 70, "note": "then updated"], ["id": 71]]
        let upsert = try context.execute(BatchInsertRequest(entityName: "u", objects: upserted, conflictPolicy: .upsert, resultType: .count), undoable: true)
        #expect(upsert.count == 6)
        #expect(try psql("SELECT concat_ws(',', v, twice, note) FROM u WHERE id = 1") == "100,200,twice")
        #expect(try psql("SELECT count(*) FROM u") == "52")
        let undone = try context.undo()
        #expect(undone.updatedCount == 2 && undone.deletedCount == 2, "\(undone)")
        #expect(try psql(all) == start)
        // Undo puts back, in each row, the columns the upsert set there: another session's change
        // to a column the upsert did not set in that row stays. A key written two ways (1 and
        // 1.0) is one key, written in order.
        let twoRows: [[String: SQLValue]] = [["id": 1, "v": 99], ["id": 2, "note": "x"], ["id": .real(1.0), "v": 98]]
        #expect(try context.execute(BatchInsertRequest(entityName: "u", objects: twoRows, conflictPolicy: .upsert, resultType: .count), undoable: true).count == 3)
        #expect(try psql("SELECT v FROM u WHERE id = 1") == "98")
        try psql("UPDATE u SET note = 'other session' WHERE id = 1")
        #expect(try context.undo().updatedCount == 2)
        #expect(try psql("SELECT concat_ws(',', v, note) FROM u WHERE id = 1") == "10,other session")
        #expect(try psql("SELECT concat_ws(',', v, note) FROM u WHERE id = 2") == "20,n2")
        try psql("UPDATE u SET note = 'n1' WHERE id = 1")
        #expect(try psql(all) == start)
        // The depth: the oldest journals are forgotten.
        context.undoDepth = 2
        for k in 1...3 { _ = try update("v = v + \(k)", where: "id == \(k)") }
        try context.undo()
        try context.undo()
        #expect(!context.canUndo)
        #expect(try psql("SELECT string_agg(v::text, ',' ORDER BY id) FROM u WHERE id <= 3") == "11,20,30")
        // A journal whose session the server ended: one line, and the entry goes.
        _ = try update("v = -1", where: "id == 7")
        try psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'faultline' AND pid <> pg_backend_pid()")
        var lost: BatchStoreError?
        for _ in 0..<50 {
            do { try context.undo(); break } catch let error as BatchStoreError { lost = error; if !context.canUndo { break } }
            usleep(100_000)
        }
        #expect(lost?.code == .serverUnavailable && lost?.message.contains("\n") == false, "\(String(describing: lost))")
        #expect(!context.canUndo)
        #expect(try psql("SELECT v FROM u WHERE id = 7") == "-1")
    }

    @Test("undo is refused, inside the edit's transaction and from the catalogs as they are then, where it could not restore: inheritance children sharing a key, ON UPDATE and ON DELETE actions (one added after the store opened); edits naming rows by key are refused under inheritance; a delete-only role deletes with undo")
    func undoRefusals() throws {
        let server = try PostgresServer.require()
        let role = try server.makeRole("deleter", password: "pw")
        let database = try server.makeDatabase("refuse", sql: """
            CREATE TABLE p(id int PRIMARY KEY, v int); CREATE TABLE c(w text) INHERITS (p);
            INSERT INTO p VALUES (1, 0), (3, 0); INSERT INTO c VALUES (1, 5, 'child1'), (2, 5, 'child2');
            CREATE TABLE a(id int PRIMARY KEY, v int); CREATE TABLE b(id int PRIMARY KEY, a_id int REFERENCES a ON UPDATE SET NULL);
            INSERT INTO a VALUES (1, 0), (2, 0); INSERT INTO b VALUES (10, 1);
            CREATE TABLE ed(id int PRIMARY KEY, v int); INSERT INTO ed SELECT g, g FROM generate_series(1, 10) g;
            GRANT SELECT, DELETE ON ed TO \(role);
            """)
        func psql(_ sql: String) throws -> String { try server.psql(sql, database: database) }
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let context = PostgresContext(store: store)
        let snapshot = "SELECT string_agg(concat_ws(',', tableoid::regclass, id, v), ';' ORDER BY tableoid::regclass::text, id) FROM p"
        let before = try psql(snapshot)
        func code(_ body: () throws -> Any) -> BatchStoreError? {
            do { _ = try body(); return nil } catch { return error as? BatchStoreError }
        }
        let update = BatchUpdateRequest(entityName: "p", predicate: try FetchPredicate("v == 5"), propertiesToUpdate: try UpdateExpression.parseAssignments("v = 99"), resultType: .count)
        let refused = code { try context.execute(update, undoable: true) }
        #expect(refused?.code == .undoRefused && refused?.message.contains("inheritance children") == true, "\(String(describing: refused))")
        #expect(try psql(snapshot) == before && !context.canUndo)
        // Without undo the predicate chooses the rows, parent's and children's alike: the two with v = 5.
        #expect(try context.execute(update, undoable: false).count == 2)
        #expect(try psql("SELECT count(*) FROM p WHERE v = 99") == "2")
        #expect(try psql("SELECT v FROM ONLY p WHERE id = 1") == "0")
        // A result's rows, or marked rows, are named by key: refused under inheritance.
        let result = try context.fetchBatched(BatchStore.FetchRequest(entityName: "p"), residentBatches: 2, firstBatch: nil, progress: nil)
        let byKey = code { try result.count(forDelete: BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "p"))) }
        #expect(byKey?.code == .readOnly && byKey?.message.contains("cannot be named by key") == true, "\(String(describing: byKey))")
        let marked = code { try context.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: try context.entity(named: "p"), key: .primaryKey([.integer(1)]))]), undoable: false) }
        #expect(marked?.code == .readOnly)
        #expect(try psql("SELECT count(*) FROM p") == "4")
        // ON UPDATE SET NULL elsewhere: an update of the referenced key is refused undo; of another column, not.
        let rekey = code { try context.execute(BatchUpdateRequest(entityName: "a", predicate: try FetchPredicate("id == 1"),
                                                                   propertiesToUpdate: try UpdateExpression.parseAssignments("id = 101")), undoable: true) }
        #expect(rekey?.code == .undoRefused && rekey?.message.contains("b through foreign-key actions") == true, "\(String(describing: rekey))")
        #expect(try psql("SELECT a_id FROM b") == "1")
        _ = try context.execute(BatchUpdateRequest(entityName: "a", propertiesToUpdate: try UpdateExpression.parseAssignments("v = 7")), undoable: true)
        try context.undo()
        // A cascade added after the store read its schema is seen when the delete runs.
        try psql("CREATE TABLE late(id int PRIMARY KEY, a_id int REFERENCES a ON DELETE CASCADE); INSERT INTO late VALUES (1, 2)")
        let cascade = code { try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "a", predicate: try FetchPredicate("id == 2"))), undoable: true) }
        #expect(cascade?.code == .undoRefused && cascade?.message.contains("late") == true, "\(String(describing: cascade))")
        #expect(try psql("SELECT count(*) FROM late") == "1")
        // A role that may delete but not update: the journaled delete needs no lock clause.
        let deleter = PostgresContext(store: try PostgresStore(url: server.url(database: database, user: role, password: "pw"), environment: noPasswordFile))
        let gone = try deleter.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "ed", predicate: try FetchPredicate("id <= 3")), resultType: .count), undoable: true)
        #expect(gone.count == 3 && deleter.canUndo)
        #expect(try psql("SELECT count(*) FROM ed") == "7")
    }

    @Test("views, roles without the privilege, and edits that name rows by key on tables without a primary key are refused before anything runs")
    func refusals() throws {
        let server = try PostgresServer.require()
        let (database, context) = try Self.editDatabase(server)
        func refusal(_ body: () throws -> BatchResult) -> BatchStoreError? {
            do { _ = try body(); return nil } catch { return error as? BatchStoreError }
        }
        let view = refusal { try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "small")), undoable: false) }
        #expect(view?.code == .readOnly && view?.message == "cannot delete rows of small: small is a view", "\(String(describing: view))")
        // Without a key, what names rows by key is refused (undo's journal, IDs returned); a
        // predicate's statement alone needs none (CLITests.dryRunsRefuseAsTheRunDoes runs one).
        let keyless = refusal {
            try context.execute(BatchUpdateRequest(entityName: "keyless", propertiesToUpdate: [("v", .constant(2))]), undoable: true)
        }
        #expect(keyless?.code == .readOnly && keyless?.message.contains("has no primary key") == true, "\(String(describing: keyless))")
        let keylessIDs = refusal {
            try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "keyless"), resultType: .objectIDs), undoable: false)
        }
        #expect(keylessIDs?.code == .readOnly && keylessIDs?.message.contains("has no primary key") == true, "\(String(describing: keylessIDs))")

        let role = try server.makeRole("editor", password: "pw")
        _ = try server.psql("GRANT SELECT, DELETE ON ed TO \(role); GRANT SELECT ON child TO \(role)", database: database)
        let limited = PostgresContext(store: try PostgresStore(url: server.url(database: database, user: role, password: "pw"), environment: noPasswordFile))
        let update = refusal { try limited.execute(BatchUpdateRequest(entityName: "ed", propertiesToUpdate: [("votes", .constant(2))]), undoable: false) }
        #expect(update?.code == .permissionDenied && update?.message == "the role may not update rows of ed", "\(String(describing: update))")
        // The role may delete from ed; the cascade into child is the server's, run with the
        // table owner's rights, as PostgreSQL defines foreign-key actions.
        let deleted = try limited.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "ed", predicate: try FetchPredicate(format: "id <= 3")),
                                                             resultType: .count), undoable: false)
        #expect(deleted.count == 3)
        #expect(try server.psql("SELECT count(*) FROM ed", database: database) == "97")
        #expect(try server.psql("SELECT count(*) FROM child", database: database) == "97")
        #expect(try server.psql("SELECT count(*) FROM keyless WHERE v = 1", database: database) == "1")
    }

    @Test("a delete cascades as the server's foreign keys say; IDs streamed after the commit match RETURNING's; the capture table goes")
    func cascadeAndStreamedIDs() throws {
        let server = try PostgresServer.require()
        let (database, context) = try Self.editDatabase(server)
        var streamed: [Int64] = []
        let n = try context.execute(BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "ed", predicate: try FetchPredicate(format: "id % 10 == 3")))) { id in
            streamed.append(id.keyValues.first?.integerValue ?? -1)
        }
        #expect(n == 10 && streamed == [3, 13, 23, 33, 43, 53, 63, 73, 83, 93])
        #expect(try server.psql("SELECT count(*) FROM child WHERE ed_id % 10 = 3", database: database) == "0")
        #expect(try server.psql("SELECT count(*) FROM child", database: database) == "90")
        // The capture table lived in the context's session (still open) and is gone.
        #expect(try server.psql("SELECT count(*) FROM pg_class WHERE relname LIKE 'bs_changed%'", database: database) == "0")

        let update = BatchUpdateRequest(entityName: "ed", predicate: try FetchPredicate(format: "name ENDSWITH '7'"),
                                        propertiesToUpdate: [("score", try UpdateExpression("score * 10"))], resultType: .objectIDs)
        var updated: [ObjectID] = []
        let count = try context.execute(update) { updated.append($0) }
        #expect(count == 10 && updated.map { $0.keyValues } == [7, 17, 27, 37, 47, 57, 67, 77, 87, 97].map { [SQLValue.integer($0)] })
        #expect(try server.psql("SELECT score FROM ed WHERE id = 17", database: database) == "85")
        // A failing edit streams nothing.
        var none = 0
        #expect(throws: BatchStoreError.self) {
            // Row 100 fails last: IDs must not stream before the commit.
            _ = try context.execute(BatchUpdateRequest(entityName: "ed", propertiesToUpdate: [("votes", try UpdateExpression("99 - votes"))])) { _ in none += 1 }
        }
        #expect(none == 0)
    }

    @Test("validate runs the update in a transaction it rolls back: the count when it would pass, the server's reason when not")
    func validation() throws {
        let server = try PostgresServer.require()
        let (database, context) = try Self.editDatabase(server)
        let before = try Self.snapshot(server, database)
        let passing = try context.validate(BatchUpdateRequest(entityName: "ed", predicate: try FetchPredicate(format: "votes > 90"),
                                                              propertiesToUpdate: [("votes", try UpdateExpression("votes - 90"))]))
        #expect(passing.rowsMatched == 10 && passing.isValid)
        #expect(throws: BatchStoreError.self) {
            _ = try context.validate(BatchUpdateRequest(entityName: "ed", propertiesToUpdate: [("votes", try UpdateExpression("votes - 90"))]))
        }
        do {
            _ = try context.validate(BatchUpdateRequest(entityName: "ed", propertiesToUpdate: [("votes", try UpdateExpression("votes - 90"))]))
        } catch let error as BatchStoreError {
            #expect(error.message.hasPrefix("the update would fail: constraint failed: new row for relation \"ed\" violates check constraint"), "\(error)")
        }
        #expect(try Self.snapshot(server, database) == before)
        // The session is usable afterwards (no transaction left open).
        #expect(try context.count(for: BatchStore.FetchRequest(entityName: "ed", predicate: try FetchPredicate(format: "votes > 90"))) == 10)
    }

    @Test("a statement timeout and a connection killed mid-update each end in one line and leave every row as it was")
    func interruptedEditsWriteNothing() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("interrupt", sql: """
            CREATE TABLE big(id int PRIMARY KEY, v int, s text);
            INSERT INTO big SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 400000) g;
            """)
        let before = try server.psql("SELECT sum(v), count(DISTINCT s) FROM big", database: database)
        let update = BatchUpdateRequest(entityName: "big", propertiesToUpdate: [("v", try UpdateExpression("v + 1")), ("s", try UpdateExpression("uppercase(s)"))],
                                        resultType: .count)

        // The role's statement_timeout stops the update part way (it takes about 1.5 s on an idle
        // machine; 300 ms leaves room for the small statements under load): the server rolls it
        // back. The store reads the catalogs first, in a session of its own, before the timeout is set.
        let role = try server.makeRole("hasty", password: "pw")
        _ = try server.psql("GRANT SELECT, UPDATE ON big TO \(role)", database: database)
        let hasty = PostgresContext(store: try PostgresStore(url: server.url(database: database, user: role, password: "pw"), environment: noPasswordFile))
        _ = try server.psql("ALTER ROLE \(role) SET statement_timeout = '300ms'", database: database)
        do {
            _ = try hasty.execute(update, undoable: false)
            Issue.record("the update should have timed out")
        } catch let error as BatchStoreError {
            #expect(error.message.contains("statement timeout") && !error.message.contains("\n"), "\(error)")
        }
        #expect(try server.psql("SELECT sum(v), count(DISTINCT s) FROM big", database: database) == before)
        // The session is usable afterwards: no transaction left open.
        #expect(try hasty.count(for: BatchStore.FetchRequest(entityName: "big", predicate: try FetchPredicate(format: "id <= 10"))) == 10)

        // Another session terminates the backend while the update runs.
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        let killer = Thread {
            let active = "SELECT pid FROM pg_stat_activity WHERE query LIKE 'UPDATE %big%' AND state = 'active' AND datname = current_database()"
            for _ in 0..<2_000 {
                if let pid = try? server.psql(active, database: database), !pid.isEmpty {
                    _ = try? server.psql("SELECT pg_terminate_backend(\(pid))", database: database)
                    return
                }
                usleep(5_000)
            }
        }
        killer.start()
        do {
            _ = try context.execute(update, undoable: false)
            Issue.record("the update should have lost its connection")
        } catch let error as BatchStoreError {
            #expect(error.code == .serverUnavailable && !error.message.contains("\n"), "\(error)")
        }
        #expect(try server.psql("SELECT sum(v), count(DISTINCT s) FROM big", database: database) == before)
        // The next edit opens a new session and runs.
        let next = try context.execute(BatchUpdateRequest(entityName: "big", predicate: try FetchPredicate(format: "id <= 10"),
                                                          propertiesToUpdate: [("v", .constant(-1))], resultType: .count), undoable: false)
        #expect(next.count == 10)
    }

    @Test("batch insert: the same rows and policies leave the same table on both engines; a key given twice is written in order; a failure writes nothing")
    func insertsAgree() throws {
        let server = try PostgresServer.require()
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: "CREATE TABLE m(id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER, score REAL, tag TEXT UNIQUE)")
        let database = try server.makeDatabase("insert", sql: "CREATE TABLE m(id bigint PRIMARY KEY, title text NOT NULL, year int, score float8, tag text UNIQUE)")
        let sqlite = try ManagedObjectContext(store: try PersistentStore(path: path))
        let pg = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        var g = SeededGenerator(state: 77)
        func rows(_ n: Int, ids: Range<Int>, tags: Bool = true) -> [[String: SQLValue]] {
            (0..<n).map { _ in
                var row: [String: SQLValue] = ["id": .integer(Int64(g.pick(Array(ids)))), "title": .text(g.pick(["a", "Ōzu", "x y", ""]))]
                if g.next(2) == 0 { row["year"] = g.next(5) == 0 ? .null : .integer(Int64(1900 + g.next(120))) }
                if g.next(2) == 0 { row["score"] = .real(Double(g.next(100)) / 4) }
                if tags && g.next(4) == 0 { row["tag"] = .text("t\(g.next(40))") }
                return row
            }
        }
        func contents() throws -> (String, String) {
            let onSQLite = try direct(path) { db in
                try String.fetchAll(db, sql: "SELECT id || '|' || title || '|' || coalesce(year, '-') || '|' || CASE WHEN score IS NULL THEN '-' ELSE printf('%g', score) END || '|' || coalesce(tag, '-') FROM m ORDER BY id")
            }
            let onPostgres = try server.psql("SELECT id || '|' || title || '|' || coalesce(year::text, '-') || '|' || coalesce(score::text, '-') || '|' || coalesce(tag, '-') FROM m ORDER BY id", database: database)
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            return (onSQLite.joined(separator: "\n"), onPostgres.joined(separator: "\n"))
        }
        // Distinct keys first (a plain insert), then ignore and upsert over overlapping keys, with
        // repeats (an upsert sets no tag: a tag another row holds fails on both engines).
        var first = rows(1_500, ids: 0..<100_000)
        var seen = Set<SQLValue>(), seenTags = Set<SQLValue>()
        first = first.filter { seen.insert($0["id"] ?? .null).inserted && ($0["tag"].map { seenTags.insert($0).inserted } ?? true) }
        for (rows, policy) in [(first, BatchInsertRequest.ConflictPolicy.fail), (rows(800, ids: 0..<3_000), .ignore), (rows(800, ids: 0..<3_000, tags: false), .upsert)] {
            let a = try sqlite.execute(BatchInsertRequest(entityName: "m", objects: rows, conflictPolicy: policy, resultType: .count))
            let b = try pg.execute(BatchInsertRequest(entityName: "m", objects: rows, conflictPolicy: policy, resultType: .count), undoable: false)
            #expect(a.count == b.count, "\(policy)")
            let (x, y) = try contents()
            let firstDifference = zip(x.split(separator: "\n"), y.split(separator: "\n")).first { $0 != $1 }
            #expect(x == y, "after \(policy): the tables differ, first at SQLite \(String(describing: firstDifference?.0)) PostgreSQL \(String(describing: firstDifference?.1))")
        }
        let before = try contents().1
        // A NOT NULL failure in the 1,200th row: nothing of the 1,199 before it stays.
        var failing = (0..<1_500).map { i -> [String: SQLValue] in ["id": .integer(Int64(1_000_000 + i)), "title": "ok"] }
        failing[1_199]["title"] = .null
        #expect(throws: BatchStoreError.self) { try pg.execute(BatchInsertRequest(entityName: "m", objects: failing), undoable: false) }
        do {
            _ = try pg.execute(BatchInsertRequest(entityName: "m", objects: failing), undoable: false)
        } catch let error as BatchStoreError {
            #expect(error.code == .constraint && error.message.contains("(in rows 1001–1500; nothing was written)"), "\(error)")
        }
        let fraction = [["id": SQLValue.integer(5_000_000), "title": "f", "year": .real(1999.5)]]
        #expect(throws: BatchStoreError.self) { try pg.execute(BatchInsertRequest(entityName: "m", objects: fraction), undoable: false) }
        let unknown = [["id": SQLValue.integer(5_000_001), "title": "u", "nope": 1]]
        #expect(throws: BatchStoreError.self) { try pg.execute(BatchInsertRequest(entityName: "m", objects: unknown), undoable: false) }
        #expect(try contents().1 == before)

        // Counts of an upsert, and IDs in the order written.
        let upsert = [["id": SQLValue.integer(9_000_001), "title": "new"], ["id": .integer(9_000_001), "title": "again"], ["id": .integer(9_000_002), "title": "other"]]
        let counts = try pg.executeCounting(BatchInsertRequest(entityName: "m", objects: upsert, conflictPolicy: .upsert))
        #expect(counts == PostgresContext.InsertCounts(inserted: 2, updated: 1))
        #expect(try server.psql("SELECT title FROM m WHERE id = 9000001", database: database) == "again")
    }

    @Test("typed columns: integers stay exact through float arithmetic, a fraction is refused, length limits refuse instead of cutting (domains too), arrays and enums take text, keys are compared without their length")
    func typedColumns() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("typed", sql: """
            CREATE DOMAIN short AS varchar(5);
            CREATE TYPE bitrate AS ENUM ('low', 'high');
            CREATE TABLE owner(id int PRIMARY KEY); INSERT INTO owner VALUES (1);
            CREATE TABLE ty(id int PRIMARY KEY, big bigint, n int, num numeric, code short, tags varchar(10)[], rate bitrate, flag "char",
                            owner_id int REFERENCES owner);
            INSERT INTO ty VALUES (1, 1234567890123456, 10, 1, 'a', '{x}', 'low', 'y', 1);
            CREATE TABLE k(code varchar(3) PRIMARY KEY, amount numeric(5,1) UNIQUE);
            INSERT INTO k VALUES ('abc', 1.0), ('abd', 2.0);
            CREATE TABLE more(id int PRIMARY KEY, ok boolean, born date, bits bit(4));
            INSERT INTO more VALUES (1, true, '2000-01-01', B'0000');
            CREATE TABLE "Pet"(id int PRIMARY KEY, name text); CREATE TABLE pet(id int PRIMARY KEY, name text);
            INSERT INTO "Pet" VALUES (1, 'a'); INSERT INTO pet VALUES (1, 'b');
            CREATE TABLE journal(line text); INSERT INTO journal VALUES ('x');
            """)
        _ = try server.psql("ALTER DATABASE \(database) SET standard_conforming_strings = off", database: database)
        let context = PostgresContext(store: try PostgresStore(url: server.url(database: database), environment: noPasswordFile))
        func update(_ set: String) throws -> BatchResult {
            try context.execute(BatchUpdateRequest(entityName: "ty", propertiesToUpdate: try UpdateExpression.parseAssignments(set), resultType: .count), undoable: false)
        }
        func row() throws -> String { try server.psql("SELECT big, n, num, code, tags, rate, flag FROM ty", database: database) }
        _ = try update("big = big * 1.0")
        _ = try update("big = coalesce(big, 0.5)")
        #expect(try server.psql("SELECT big FROM ty", database: database) == "1234567890123456")
        let before = try row()
        for (set, expected) in [("n = (0.1 + 0.2) * n", "ty.n holds integers, and the new value 3.0000000000000004 has a fraction"),
                                ("code = 'abcdefgh'", "value too long for type character varying(5)"),
                                ("flag = 'yes'", "is a \"char\" column, whose casts cut text short")] {
            do {
                _ = try update(set)
                Issue.record("\(set) should fail")
            } catch let error as BatchStoreError {
                #expect(error.message.contains(expected), "\(set): \(error)")
            }
        }
        #expect(try row() == before)
        _ = try update("num = 0.1 + 0.2, tags = '{a,b}', rate = 'high', code = 'abcde'")
        #expect(try server.psql("SELECT num, tags, rate, code FROM ty", database: database) == "0.30000000000000004|{a,b}|high|abcde")
        // With standard_conforming_strings off in the database, [d] still folds (the session sets it on).
        #expect(try context.count(for: BatchStore.FetchRequest(entityName: "ty", predicate: try FetchPredicate(format: "rate ==[d] 'hígh'"))) == 1)
        // A key path in an assignment is refused in one line, not a server error.
        do {
            _ = try update("n = owner.id")
            Issue.record("a key path through a relationship should be refused")
        } catch let error as BatchStoreError {
            #expect(error.message.contains("crosses a relationship"), "\(error)")
        }

        // Booleans take 1 and 0 only; a number is no date; bit(n) takes its text, of its length.
        func change(_ table: String, _ set: String) throws -> BatchResult {
            try context.execute(BatchUpdateRequest(entityName: table, propertiesToUpdate: try UpdateExpression.parseAssignments(set), resultType: .count), undoable: false)
        }
        for (set, expected) in [("ok = 0.5", "more.ok holds booleans (1 or 0), and the new value is 0.5"), ("ok = 2", "holds booleans"),
                                ("born = 20010203", "is a date column, and 20010203 is a number"), ("bits = '011'", "bit string length 3 does not match type bit(4)")] {
            do {
                _ = try change("more", set)
                Issue.record("\(set) should fail")
            } catch let error as BatchStoreError {
                #expect(error.message.contains(expected), "\(set): \(error)")
            }
        }
        _ = try change("more", "ok = 0, bits = '0101', born = '2001-02-03'")
        #expect(try server.psql("SELECT ok, bits, born FROM more", database: database) == "f|0101|2001-02-03")
        // "Pet" and pet: PET names neither (PostgreSQL would read it as pet); each exact name, its own.
        #expect(throws: BatchStoreError.self) { _ = try change("PET", "name = 'changed'") }
        _ = try change("pet", "name = 'changed'")
        #expect(try server.psql("SELECT (SELECT name FROM \"Pet\") || (SELECT name FROM pet)", database: database) == "achanged")
        // A table without a primary key takes inserted rows.
        let inserted = try context.execute(BatchInsertRequest(entityName: "journal", objects: [["line": "y"], ["line": "z"]], resultType: .count), undoable: false)
        let lines = try server.psql("SELECT string_agg(line, '' ORDER BY line) FROM journal", database: database)
        #expect(inserted.count == 2 && lines == "xyz")

        // Keys bound without their length: 'abcdef' names no row (cast to varchar(3) it was 'abc').
        let entity = try context.entity(named: "k")
        let gone = try context.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: entity, key: .primaryKey([.text("abcdef")]))], resultType: .count), undoable: false)
        #expect(gone.count == 0)
        #expect(try server.psql("SELECT count(*) FROM k", database: database) == "2")
    }
}
