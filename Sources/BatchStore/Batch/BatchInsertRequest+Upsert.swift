import Foundation
import GRDB
import GRDBSQLite

/// The upsert half of a batch insert: finds each row's existing row by key before writing, so the
/// INSERT's NOT NULL checks never see a row that exists.
///
/// Per row, inside the request's transaction:
///
/// 1. For each uniqueness constraint the row gives in full, primary key first:
///    `SELECT <key> FROM main."T" WHERE "c1" = ? AND … LIMIT 1` (one index probe; a NULL never
///    conflicts, so a constraint with a NULL value is skipped). The first hit is the existing row.
/// 2. Found: `UPDATE main."T" SET <given columns> = ? WHERE <key> = ? [RETURNING <key>]`; columns
///    the row does not give are left alone, and so are the primary key columns when the primary
///    key found the row (they already hold those values).
/// 3. Not found: `INSERT INTO main."T" (<given columns>) VALUES (?, …) [RETURNING <key>]`; missing
///    columns take their defaults, and a NOT NULL column without one fails naming the row.
///
/// Conflict targets are the primary key and every UNIQUE constraint or unique index over plain
/// columns (`Entity.uniquenessConstraints`); a row that conflicts only on a partial or expression
/// unique index fails with SQLite's UNIQUE error instead of updating.
///
/// With an undo journal, every write is recorded in order in a temp table: the whole before-image
/// of a row about to be updated (`INSERT INTO temp.J SELECT <key>, 1, <every column> FROM main."T"
/// WHERE <key> = ?`, its key corrected when the update changes it) and the key of an inserted row
/// (`…VALUES (?, 0)`). Undo replays them backwards (``ManagedObjectContext/undo()``), so it passes
/// only through states that were valid, and a unique value two rows swapped never collides.
/// - Complexity: per row, one probe per constraint it gives (usually one) and one write.
struct UpsertWriter {
    /// What happened to one row.
    enum Outcome {
        case inserted(key: [SQLValue]?)
        case updated(key: [SQLValue]?)
    }

    let entity: Entity
    let table: String
    let connection: OpaquePointer?
    let db: Database
    let wantKeys: Bool
    /// The undo journal's temp table name, when the request is undoable.
    let journal: String?
    /// Uniqueness constraints as attribute indexes (primary key first).
    let constraints: [[Int]]
    /// Attribute indexes of the primary key columns (a write to one of them may change the key).
    let primaryKeyColumns: Set<Int>
    private var probes: [Int: Statement] = [:]
    private var updates: [[Int]: (statement: Statement, returnsKey: Bool)] = [:]
    private var inserts: [[Int]: Statement] = [:]
    private var journalUpdated: Statement?
    private var journalInserted: Statement?
    private var journalRekey: Statement?
    /// Rows written to the journal so far.
    private(set) var journaled = 0

    private var keyCount: Int { entity.keyColumns.count }
    private var keyMatch: String { entity.keyColumns.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ") }
    private var keyList: String { entity.keyColumns.map(quoteIdentifier).joined(separator: ", ") }

    /// Columns of the journal besides the key and the operation: every stored column, in order.
    static func journalColumns(_ entity: Entity) -> [String] { entity.attributes.filter { !$0.isGenerated }.map(\.name) }

    /// The temp table definition of an upsert's journal: one row per write, in order (its rowid):
    /// `k0…` the row's key after the write, `op` 0 inserted / 1 updated, `c0…` the before-image.
    static func journalDefinition(_ entity: Entity) -> String {
        let keys = (0..<entity.keyColumns.count).map { "k\($0)" }
        let values = journalColumns(entity).indices.map { "c\($0)" }
        return "(\((keys + ["op INTEGER NOT NULL"] + values).joined(separator: ", ")))"
    }

    init(entity: Entity, db: Database, wantKeys: Bool, journal: String?) {
        self.entity = entity
        self.table = "main.\(quoteIdentifier(entity.name))"
        self.db = db
        self.connection = db.sqliteConnection
        self.wantKeys = wantKeys
        self.journal = journal
        self.constraints = entity.uniquenessConstraints.compactMap { names in
            let indexes = names.compactMap { entity.indexOfAttribute(named: $0) }
            return indexes.count == names.count && !indexes.isEmpty ? indexes : nil
        }
        self.primaryKeyColumns = Set(entity.primaryKey.compactMap { entity.indexOfAttribute(named: $0) })
    }

    /// Writes one row (`pairs` sorted by column, no column twice).
    mutating func write(_ pairs: [(column: Int, value: SQLValue)]) throws -> Outcome {
        if let (existing, byPrimaryKey) = try probe(pairs) {
            // Found by its primary key, the row already has the given key values: writing them
            // again would make SQLite move the row (a rowid change is a delete and an insert).
            let written = byPrimaryKey ? pairs.filter { !primaryKeyColumns.contains($0.column) } : pairs
            return .updated(key: try update(written, key: existing))
        }
        return .inserted(key: try insert(pairs))
    }

    /// The key of the existing row that `pairs` conflicts with, and whether the primary key found
    /// it; nil when none.
    private mutating func probe(_ pairs: [(column: Int, value: SQLValue)]) throws -> ([SQLValue], Bool)? {
        guard !pairs.isEmpty else { return nil }
        constraintLoop: for (n, columns) in constraints.enumerated() {
            var values: [SQLValue] = []
            values.reserveCapacity(columns.count)
            for column in columns {
                guard let pair = pairs.first(where: { $0.column == column }), !pair.value.isNull else { continue constraintLoop }
                values.append(pair.value)
            }
            let statement: Statement
            if let known = probes[n] {
                statement = known
            } else {
                let match = columns.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }.joined(separator: " AND ")
                statement = try db.makeStatement(sql: "SELECT \(keyList) FROM \(table) WHERE \(match) LIMIT 1")
                probes[n] = statement
            }
            if let key = try stepForKey(statement.sqliteStatement, binding: values) { return (key, Set(columns) == primaryKeyColumns) }
        }
        return nil
    }

    private mutating func update(_ pairs: [(column: Int, value: SQLValue)], key: [SQLValue]) throws -> [SQLValue]? {
        let columns = pairs.map(\.column)
        var entry: Int64 = 0
        if journal != nil {
            if journalUpdated == nil, let journal {
                let keys = (0..<keyCount).map { "k\($0)" }
                let values = Self.journalColumns(entity)
                journalUpdated = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(journal)) (\((keys + ["op"] + values.indices.map { "c\($0)" }).joined(separator: ", "))) SELECT \(keyList), 1\(values.map { ", \(quoteIdentifier($0))" }.joined()) FROM \(table) WHERE \(keyMatch)")
            }
            if let journalUpdated {
                journaled += try run(journalUpdated.sqliteStatement, binding: key)
                entry = sqlite3_last_insert_rowid(connection)
            }
        }
        if columns.isEmpty { return wantKeys ? key : nil } // the row gave its key and nothing else
        let update: (statement: Statement, returnsKey: Bool)
        if let known = updates[columns] {
            update = known
        } else {
            // The key can only change when a primary key column is written.
            let returnsKey = columns.contains { primaryKeyColumns.contains($0) }
            let sets = columns.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }.joined(separator: ", ")
            update = (try db.makeStatement(sql: "UPDATE OR ABORT \(table) SET \(sets) WHERE \(keyMatch)\(returnsKey ? entity.returningKeysSQL : "")"), returnsKey)
            updates[columns] = update
        }
        let arguments = pairs.map(\.value) + key
        guard update.returnsKey else {
            try run(update.statement.sqliteStatement, binding: arguments)
            return wantKeys ? key : nil
        }
        let newKey = try stepForKey(update.statement.sqliteStatement, binding: arguments) ?? key
        if newKey != key, journal != nil {
            // The journal names a row by its key after the write.
            if journalRekey == nil, let journal {
                let keys = (0..<keyCount).map { "k\($0) = ?" }
                journalRekey = try db.makeStatement(sql: "UPDATE temp.\(quoteIdentifier(journal)) SET \(keys.joined(separator: ", ")) WHERE rowid = ?")
            }
            if let journalRekey { try run(journalRekey.sqliteStatement, binding: newKey + [.integer(entry)]) }
        }
        return newKey
    }

    private mutating func insert(_ pairs: [(column: Int, value: SQLValue)]) throws -> [SQLValue]? {
        let columns = pairs.map(\.column)
        let returnsKey = wantKeys || journal != nil
        let statement: Statement
        if let known = inserts[columns] {
            statement = known
        } else {
            let names = columns.map { quoteIdentifier(entity.attributes[$0].name) }
            let sql = columns.isEmpty
                ? "INSERT OR ABORT INTO \(table) DEFAULT VALUES"
                : "INSERT OR ABORT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
            statement = try db.makeStatement(sql: sql + (returnsKey ? entity.returningKeysSQL : ""))
            inserts[columns] = statement
        }
        guard returnsKey else {
            try run(statement.sqliteStatement, binding: pairs.map(\.value))
            return nil
        }
        guard let key = try stepForKey(statement.sqliteStatement, binding: pairs.map(\.value)) else {
            preconditionFailure("BatchStore: an INSERT … RETURNING returned no row")
        }
        if let journal {
            if journalInserted == nil {
                let keys = (0..<keyCount).map { "k\($0)" }
                journalInserted = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(journal)) (\(keys.joined(separator: ", ")), op) VALUES (\(keys.map { _ in "?" }.joined(separator: ", ")), 0)")
            }
            if let journalInserted { journaled += try run(journalInserted.sqliteStatement, binding: key) }
        }
        return key
    }

    // MARK: - The C API: bind, step, read the key

    /// Binds, steps to the end and resets; returns the rows the statement changed.
    @discardableResult
    private func run(_ stmt: OpaquePointer?, binding values: [SQLValue]) throws -> Int {
        sqlite3_reset(stmt)
        for (n, value) in values.enumerated() { value.bind(to: stmt, at: Int32(n + 1)) }
        var code = sqlite3_step(stmt)
        while code == SQLITE_ROW { code = sqlite3_step(stmt) }
        try check(code, stmt)
        let changes = Int(sqlite3_changes(connection))
        sqlite3_reset(stmt)
        return changes
    }

    /// Binds, steps, and returns the first row's key columns (nil when there is no row); the
    /// statement is run to its end and reset.
    private func stepForKey(_ stmt: OpaquePointer?, binding values: [SQLValue]) throws -> [SQLValue]? {
        sqlite3_reset(stmt)
        for (n, value) in values.enumerated() { value.bind(to: stmt, at: Int32(n + 1)) }
        var code = sqlite3_step(stmt)
        var key: [SQLValue]?
        if code == SQLITE_ROW {
            key = (0..<Int32(keyCount)).map { SQLValue(statement: stmt, column: $0) }
            while code == SQLITE_ROW { code = sqlite3_step(stmt) }
        }
        try check(code, stmt)
        sqlite3_reset(stmt)
        return key
    }

    private func check(_ code: Int32, _ stmt: OpaquePointer?) throws {
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(stmt)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
    }
}

extension ObjectID {
    /// The ID of the row with these key values (a rowid, or the primary key values in key order).
    init(entity: Entity, keyValues values: [SQLValue]) {
        if entity.isKeyedByRowid, case .integer(let rowid) = values.first {
            self.init(entity: entity, key: .rowid(rowid))
        } else {
            self.init(entity: entity, key: .primaryKey(values))
        }
    }
}
