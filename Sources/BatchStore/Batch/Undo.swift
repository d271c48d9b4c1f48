import Foundation
import GRDB
import GRDBSQLite

/// One recorded batch operation: its before-image lives in a temp table on the context's
/// connection, never in Swift memory.
/// An upsert's journal is `k…, op, c…`, op 0 for an inserted row and 1 for an updated one (whose
/// before-image of the columns is in `c…`); see ``UpsertWriter``.
struct UndoEntry {
    let entity: Entity
    let kind: JournaledEdit
    let table: String
}

/// The undo state of one context: its recorded batch operations, last on top, and how many rows
/// one of them may journal.
final class UndoJournal {
    var entries: [UndoEntry] = []
    var limit = 1_000_000
}

extension ManagedObjectContext {
    /// This context's undo journal.
    var undoJournal: UndoJournal { featureState(UndoJournal.self) { UndoJournal() } }

    /// The most rows one undoable batch operation may journal (before-images live in SQLite).
    public var undoLimit: Int {
        get { undoJournal.limit }
        set { undoJournal.limit = newValue }
    }

    /// Recorded batch operations, last on top; each journal is a temp table.
    var undoStack: [UndoEntry] {
        get { undoJournal.entries }
        _modify { yield &undoJournal.entries }
    }

    /// Throws `.tooBigToUndo` when `rows` passes ``undoLimit``, `.undoRefused` when a delete's
    /// foreign-key actions would change rows the journal does not record, or when an update
    /// assigns a column its rows are found again by (the journal keys rows by it as they were).
    func checkUndoable(_ entity: Entity, rows: Int, deleting: Bool, assigning: [String] = []) throws {
        // A rowid table's INTEGER PRIMARY KEY is its rowid: assigning it moves the row's key.
        let rowidAlias = entity.isKeyedByRowid && entity.primaryKey.count == 1
            && entity.attributes.first { $0.name == entity.primaryKey[0] }?.declaredType.uppercased() == "INTEGER" ? entity.primaryKey : []
        if let key = assigning.first(where: { name in (entity.keyColumns + rowidAlias).contains { $0.caseInsensitiveCompare(name) == .orderedSame } }) {
            throw BatchStoreError(.undoRefused, "the update assigns \(entity.name).\(key), which its rows are found again by, so undo could not find them; run it without undo")
        }
        if rows > undoLimit {
            throw UndoRefusal.tooBig(rows: rows, limit: undoLimit)
        }
        // Rows changed by ON DELETE / ON UPDATE CASCADE, SET NULL or SET DEFAULT in other tables
        // would not come back: the schema's relationships, and the file's keys as they are now
        // (another program may have added one since the store was opened).
        var referencing = Set<String>()
        if deleting {
            for other in store.schema.entities where other.relationships.contains(where: {
                $0.destinationEntityName.caseInsensitiveCompare(entity.name) == .orderedSame && $0.deleteRule != .noAction && $0.deleteRule != .deny
            }) { referencing.insert(other.name) }
        }
        if deleting || !assigning.isEmpty {
            try referencing.formUnion(withDatabase { db in
                try Self.referencingWithActions(db, entity.name, deleting: deleting, assigning: assigning, primaryKey: entity.primaryKey)
            })
        }
        if !referencing.isEmpty {
            throw UndoRefusal.error("\(deleting ? "deleting from" : "this update of") \(entity.name) can change \(referencing.sorted().joined(separator: ", ")) through foreign-key actions", .foreignKeyActions)
        }
        // A trigger's writes (an audit row, a counter in another table) are not in the journal.
        if deleting || !assigning.isEmpty {
            let triggers = try withDatabase { db in try Self.triggersFired(db, entity.name, deleting: deleting, assigning: assigning) }
            let edit = triggers.filter { !$0.byUndo }.map(\.name), undo = triggers.filter(\.byUndo).map(\.name)
            var fired: [String] = []
            if !edit.isEmpty { fired.append("\(deleting ? "deleting from" : "this update of") \(entity.name) fires \(edit.count == 1 ? "trigger" : "triggers") \(edit.joined(separator: ", "))") }
            // Undo puts deleted rows back with an INSERT: the table's insert triggers fire then.
            if !undo.isEmpty { fired.append("putting the rows back into \(entity.name) would fire \(undo.count == 1 ? "trigger" : "triggers") \(undo.joined(separator: ", "))") }
            if !fired.isEmpty {
                throw UndoRefusal.error(fired.joined(separator: ", and "), .triggerWrites)
            }
        }
    }

    /// The triggers on `table` (the file's and this connection's temporary ones) that a delete
    /// fires (and, `byUndo`, the insert triggers its undo fires), or an update of `assigning` (`UPDATE OF` names columns; without it any update
    /// fires), and whose body writes (one that only checks, `SELECT RAISE(…)`, is not counted).
    /// A trigger whose text cannot be read is counted.
    static func triggersFired(_ db: Database, _ table: String, deleting: Bool, assigning: [String]) throws -> [(name: String, byUndo: Bool)] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE
            UNION ALL SELECT name, sql FROM temp.sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE
            """, arguments: [table, table])
        let assigned = Set(assigning.map { $0.lowercased() })
        return rows.compactMap { row -> (name: String, byUndo: Bool)? in
            let name: String = row[0]
            let sql: String = row[1] ?? ""
            guard let event = TriggerEvent(sql: sql) else { return (name, false) }
            guard TriggerEvent.bodyWrites(sql: sql) else { return nil }
            switch event {
            case .delete: return deleting ? (name, false) : nil
            // A delete's undo inserts the rows again.
            case .insert: return deleting ? (name, true) : nil
            case .update(let columns):
                guard !deleting else { return nil }
                return columns.isEmpty || columns.contains(where: { assigned.contains($0.lowercased()) }) ? (name, false) : nil
            }
        }.sorted { $0.name < $1.name }
    }

    /// The tables of the main file whose foreign keys into `table` act on a delete (or, for an
    /// update, on a change of one of `assigning`; a key declared without parent columns names
    /// `primaryKey`): CASCADE, SET NULL, SET DEFAULT.
    static func referencingWithActions(_ db: Database, _ table: String, deleting: Bool, assigning: [String], primaryKey: [String] = []) throws -> [String] {
        let actions = "('CASCADE', 'SET NULL', 'SET DEFAULT')"
        if deleting {
            return try String.fetchAll(db, sql: """
                SELECT DISTINCT m.name FROM main.sqlite_schema AS m, pragma_foreign_key_list(m.name) AS f
                WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE AND upper(f.on_delete) IN \(actions)
                """, arguments: [table])
        }
        let assigned = Set(assigning.map { $0.lowercased() })
        let keyAssigned = primaryKey.contains { assigned.contains($0.lowercased()) }
        let rows = try Row.fetchAll(db, sql: """
            SELECT m.name, f."to" FROM main.sqlite_schema AS m, pragma_foreign_key_list(m.name) AS f
            WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE AND upper(f.on_update) IN \(actions)
            """, arguments: [table])
        var names: [String] = []
        for row in rows {
            let name: String = row[0]
            let to: String? = row[1]
            if to.map({ assigned.contains($0.lowercased()) }) ?? keyAssigned, !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// Creates the journal table and fills it with `select` (run inside the batch's transaction).
    /// With `afterImage` (an update's), it also has `a0…`, the columns' values as the update left
    /// them (``recordAfterImage(_:entity:columns:journal:)`` fills them once it has run), which undo
    /// compares with the rows then to leave alone those changed since.
    func recordJournal(_ db: Database, entity: Entity, columns: [String], whereSQL: String, arguments: [SQLValue], afterImage: Bool = false) throws -> String {
        let table = makeTempTableName("bs_undo")
        let keys = entity.keyColumns
        let keyCols = (0..<keys.count).map { "k\($0)" }
        let valueCols = (0..<columns.count).map { "c\($0)" }
        let afterCols = afterImage ? (0..<columns.count).map { "a\($0)" } + Self.witnessColumns(entity, assigned: columns).indices.map { "w\($0)" } : []
        try connection.createTempTable(db, named: table, "(\((keyCols + valueCols + afterCols).joined(separator: ", ")))")
        let select = qualified(keys + columns).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO temp.\(quoteIdentifier(table))\(afterImage ? " (\((keyCols + valueCols).joined(separator: ", ")))" : "") SELECT \(select) FROM main.\(quoteIdentifier(entity.name)) AS t\(whereSQL)", arguments: arguments.statementArguments)
        return table
    }

    /// Fills an update journal's after-image (`a0…`) from the rows as the update left them (in
    /// its transaction, after its statement).
    /// - Complexity: one pass over the journal, each row found by its key.
    func recordAfterImage(_ db: Database, entity: Entity, columns: [String], journal: String) throws {
        let sets = (columns.enumerated().map { "a\($0) = t.\(quoteIdentifier($1))" }
            + Self.witnessColumns(entity, assigned: columns).enumerated().map { "w\($0) = t.\(quoteIdentifier($1))" }).joined(separator: ", ")
        try db.execute(sql: "UPDATE temp.\(quoteIdentifier(journal)) AS u SET \(sets) FROM main.\(quoteIdentifier(entity.name)) AS t WHERE \(Self.journalMatch(entity))")
    }

    /// The columns an update's journal keeps the after-image of beside the assigned ones (`w0…`):
    /// for a table whose rowid no column declares, every other column, so that a row SQLite put
    /// under a reused rowid since (the updated row deleted, another inserted) is told from the
    /// row the update wrote, and left alone by undo. None for other tables (their key is theirs).
    static func witnessColumns(_ entity: Entity, assigned: [String]) -> [String] {
        guard entity.hasHiddenRowid else { return [] }
        return entity.attributes.map(\.name).filter { name in !assigned.contains { $0.caseInsensitiveCompare(name) == .orderedSame } }
    }

    /// `t.<key> = u.k0 AND …`: a journal row (`u`) and its table row (`t`).
    static func journalMatch(_ entity: Entity) -> String {
        entity.keyColumns.enumerated().map { "t.\(quoteIdentifier($1)) = u.k\($0)" }.joined(separator: " AND ")
    }

    /// The journal rows (`u`) whose rows changed since the edit: for an update, those whose row is
    /// gone or whose assigned columns no longer hold what the update wrote; for a delete, those
    /// whose key names a row again. Nil for the kinds that keep no after-image (insert, upsert).
    static func changedSinceCondition(_ kind: JournaledEdit, entity: Entity) -> String? {
        let table = "main.\(quoteIdentifier(entity.name))"
        switch kind {
        case .update(let columns):
            // Byte for byte and class for class: a column's own collation (NOCASE) would take
            // 'abc' → 'ABC' for no change, and IS takes 1.0 for 1.
            let same = columns.enumerated().map { "(t.\(quoteIdentifier($1)) IS u.a\($0) COLLATE BINARY AND typeof(t.\(quoteIdentifier($1))) = typeof(u.a\($0)))" }
                + witnessColumns(entity, assigned: columns).enumerated().map { "(t.\(quoteIdentifier($1)) IS u.w\($0) COLLATE BINARY AND typeof(t.\(quoteIdentifier($1))) = typeof(u.w\($0)))" }
            return "NOT EXISTS (SELECT 1 FROM \(table) AS t WHERE \(([journalMatch(entity)] + same).joined(separator: " AND ")))"
        case .delete(let columns):
            guard entity.hasHiddenRowid else { return "EXISTS (SELECT 1 FROM \(table) AS t WHERE \(journalMatch(entity)))" }
            // A rowid no column declares is not the row's identity: SQLite gives it to the next
            // new row once the row is gone. A row is taken again only when its declared key is
            // (a key-less table's rows always come back, under a new rowid if theirs went).
            let key = entity.primaryKey.compactMap { name in columns.firstIndex { $0.caseInsensitiveCompare(name) == .orderedSame } }
            guard !key.isEmpty, key.count == entity.primaryKey.count else { return nil }
            let match = zip(entity.primaryKey, key).map { "t.\(quoteIdentifier($0)) = u.c\($1)" }.joined(separator: " AND ")
            return "EXISTS (SELECT 1 FROM \(table) AS t WHERE \(match))"
        case .insert, .upsert:
            return nil
        }
    }

    /// True when ``undo()`` has something to undo.
    public var canUndo: Bool { !undoStack.isEmpty }

    /// What ``undo()`` would take back now (nil: nothing): the last entry's kind and table, and
    /// the rows its journal holds. Reads the journal (a temp table); writes nothing.
    public func undoSummary() throws -> UndoSummary? {
        guard let entry = undoStack.last else { return nil }
        let journal = "temp.\(quoteIdentifier(entry.table))"
        return try withDatabase { db in
            let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal)") ?? 0
            let changed = try Self.changedSinceCondition(entry.kind, entity: entry.entity).map {
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal) AS u WHERE \($0)") ?? 0
            } ?? 0
            let kind = try entry.kind.summaryKind {
                let inserted = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal) WHERE op = 0") ?? 0
                return (inserted, rows - inserted)
            }
            let renumbered = try Self.renumberedCondition(entry.kind, entity: entry.entity).map {
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal) AS u WHERE \($0)") ?? 0
            } ?? 0
            return UndoSummary(kind: kind, table: entry.entity.name, rows: rows, changedSince: changed, renumbered: renumbered)
        }
    }

    /// The journal rows (`u`) of a delete that undo puts back under a new rowid: those of a table
    /// whose rowid no column declares, whose rowid SQLite gave to another row since, and that are
    /// not left alone as changed since (``changedSinceCondition(_:entity:)``). Nil for other kinds.
    static func renumberedCondition(_ kind: JournaledEdit, entity: Entity) -> String? {
        guard case .delete = kind, entity.hasHiddenRowid else { return nil }
        let taken = "EXISTS (SELECT 1 FROM main.\(quoteIdentifier(entity.name)) AS t WHERE \(journalMatch(entity)))"
        return changedSinceCondition(kind, entity: entity).map { "\(taken) AND NOT (\($0))" } ?? taken
    }

    /// Why an edit of `rows` rows of `entity` could not be undone (see `checkUndoable(_:rows:deleting:assigning:)`), or nil.
    public func undoRefusal(_ entity: Entity, rows: Int, deleting: Bool, assigning: [String]) -> String? {
        do {
            try checkUndoable(entity, rows: rows, deleting: deleting, assigning: assigning)
            return nil
        } catch let error as BatchStoreError {
            return error.undoRefusalReason
        } catch {
            return "\(error)"
        }
    }

    /// Undoes the last batch operation recorded with `undoable: true`, in one transaction, and
    /// returns what changed so it can be merged (it is already merged into this context).
    ///
    /// An update gets its assigned columns back; a delete gets its rows back with the same keys; an
    /// insert is deleted; an upsert deletes the rows it inserted, then gives the rows it updated
    /// their before-image (every column). Rows changed since the edit are left as they are and
    /// counted in ``ChangeSet/changedSince``: an updated row whose assigned columns no longer hold
    /// what the update wrote (or that is gone), a deleted row whose key names a row again. (An
    /// insert's and an upsert's rows keep no after-image: changes to them since are overwritten.)
    /// Triggers run again as SQLite defines them (an edit that fires one that writes is refused
    /// undo before it runs: `triggersFired(_:_:deleting:assigning:)`). A key-less table's deleted
    /// row whose rowid SQLite gave to a new row since comes back under a new rowid (``ChangeSet/renumbered``).
    /// - Throws: `.nothingToUndo` when there is nothing to undo; SQLite errors roll back and keep
    ///   the entry, so undo can be tried again.
    @discardableResult
    public func undo() throws -> ChangeSet {
        guard let entry = undoStack.last else { throw BatchStoreError(.nothingToUndo, "nothing to undo") }
        let entity = entry.entity
        let keys = entity.keyColumns
        let table = "main.\(quoteIdentifier(entity.name))"
        let journal = "temp.\(quoteIdentifier(entry.table))"
        let match = keys.enumerated().map { "t.\(quoteIdentifier($1)) = u.k\($0)" }.joined(separator: " AND ")
        let keyTuple = sqlTuple(keys.map(quoteIdentifier))
        let keyCols = (0..<keys.count).map { "u.k\($0)" }.joined(separator: ", ")
        var changes = ChangeSet()
        var dangling = 0
        // The changed keys move from the journal into a StoredChanges table: no ID array in Swift,
        // and merging costs what the contexts hold, however many rows the undo restores.
        let stored = makeTempTableName("bs_changes")
        let queue = connection.queue
        try withDatabase { db in
            // Deleted rows come back as they were, dangling keys included: SQLite's key checks
            // (on in every connection here) would refuse a row that already referred to nothing
            // before the delete, and the undo would fail with the rows still gone. Off for this
            // transaction only (the pragma cannot change inside one); the rows that dangle are counted.
            let restoresRows = entry.kind.undoneChange == .inserted
            if restoresRows { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
            defer { if restoresRows { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
            try inBatchWriteTransaction(db, largerCache: true) {
                try connection.createTempTable(db, named: stored, StoredChanges.keyTableDefinition(entity))
                guard let kind = entry.kind.undoneChange else {
                    let restored = makeTempTableName("bs_changes")
                    try connection.createTempTable(db, named: restored, StoredChanges.keyTableDefinition(entity))
                    try db.execute(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(stored)) SELECT \(keyCols) FROM \(journal) AS u WHERE u.op = 0")
                    let deleted = db.changesCount
                    try db.execute(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(restored)) SELECT \(keyCols) FROM \(journal) AS u WHERE u.op = 1")
                    let updated = db.changesCount
                    try replayUpsertJournal(db, entity: entity, columns: entry.kind.columns, journal: journal)
                    try connection.dropTempTable(db, named: entry.table)
                    changes = ChangeSet(stored: [StoredChanges(entity: entity, kind: .deleted, count: deleted, queue: queue, table: stored),
                                                 StoredChanges(entity: entity, kind: .updated, count: updated, queue: queue, table: restored)])
                    return .commit
                }
                // Rows changed since the edit are left as they are now (and counted): undo puts
                // back only what the edit itself did. The rest are restored, their keys stored.
                // Rows whose hidden rowid went to another row since get new rowids, above every
                // rowid in use (the journal's keys are renumbered in this transaction only).
                var renumbered = 0
                if let taken = Self.renumberedCondition(entry.kind, entity: entity) {
                    // Read once: the UPDATE below raises the journal's own max(k0) as it goes.
                    let base = try Int64.fetchOne(db, sql: "SELECT max(coalesce((SELECT max(rowid) FROM \(table)), 0), coalesce((SELECT max(k0) FROM \(journal)), 0))") ?? 0
                    // The rows to move, listed first: the UPDATE takes them out of `taken` as it goes.
                    let moved = makeTempTableName("bs_moved")
                    try connection.createTempTable(db, named: moved, "(r INTEGER PRIMARY KEY, n INTEGER)")
                    try db.execute(sql: "INSERT INTO temp.\(quoteIdentifier(moved)) SELECT u.rowid, row_number() OVER (ORDER BY u.rowid) FROM \(journal) AS u WHERE \(taken)")
                    renumbered = db.changesCount
                    try db.execute(sql: "UPDATE \(journal) AS u SET k0 = ? + m.n FROM temp.\(quoteIdentifier(moved)) AS m WHERE m.r = u.rowid", arguments: [base])
                    try connection.dropTempTable(db, named: moved)
                }
                let changedSince = Self.changedSinceCondition(entry.kind, entity: entity)
                let untouched = changedSince.map { " WHERE NOT (\($0))" } ?? ""
                let journaled = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal)") ?? 0
                try db.execute(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(stored)) SELECT \(keyCols) FROM \(journal) AS u\(untouched)")
                let rows = db.changesCount
                let leftAlone = changedSince == nil ? 0 : journaled - rows
                let restoring = changedSince == nil ? journal
                    : "(SELECT * FROM \(journal) WHERE (\(keys.indices.map { "k\($0)" }.joined(separator: ", "))) IN (SELECT \(keys.indices.map { "k\($0)" }.joined(separator: ", ")) FROM temp.\(quoteIdentifier(stored))))"
                switch entry.kind {
                case .update(let columns):
                    let sets = columns.enumerated().map { "\(quoteIdentifier($1)) = u.c\($0)" }.joined(separator: ", ")
                    try db.execute(sql: "UPDATE OR ABORT \(table) AS t SET \(sets) FROM \(restoring) AS u WHERE \(match)")
                case .delete(let columns):
                    let names = (keys + columns).map(quoteIdentifier).joined(separator: ", ")
                    let values = (keys.indices.map { "u.k\($0)" } + columns.indices.map { "u.c\($0)" }).joined(separator: ", ")
                    try db.execute(sql: "INSERT OR ABORT INTO \(table) (\(names)) SELECT \(values) FROM \(restoring) AS u")
                    // Counted once they are back (a row may refer to another the undo restores),
                    // over the rows restored: those left alone are not back to dangle.
                    dangling = try danglingReferences(db, entity: entity, keys: keys, columns: columns, journal: restoring)
                case .insert:
                    try db.execute(sql: "DELETE FROM \(table) WHERE \(keyTuple) IN (SELECT \(keyCols) FROM \(journal) AS u)")
                case .upsert:
                    preconditionFailure("BatchStore: an upsert's undo runs above")
                }
                try connection.dropTempTable(db, named: entry.table)
                changes = ChangeSet(stored: [StoredChanges(entity: entity, kind: kind, count: rows, queue: queue, table: stored)])
                changes.danglingReferences = dangling
                changes.changedSince = leftAlone
                changes.renumbered = renumbered
                return .commit
            }
        }
        undoStack.removeLast()
        mergeChanges(changes)
        return changes
    }

    /// How many of a delete's journaled rows refer through one of `entity`'s foreign keys to a row
    /// of the destination table that is not there now (a key with a NULL column refers to nothing,
    /// as SQLite sees it). One `NOT EXISTS` per key over the journal, served by the destination's key.
    private func danglingReferences(_ db: Database, entity: Entity, keys: [String], columns: [String], journal: String) throws -> Int {
        // A key column is journaled twice when it is also among the columns: either copy holds it.
        let journaled = Dictionary(keys.enumerated().map { ($1, "u.k\($0)") } + columns.enumerated().map { ($1, "u.c\($0)") }, uniquingKeysWith: { first, _ in first })
        var conditions: [String] = []
        for relationship in entity.relationships {
            let source = relationship.sourceColumns.compactMap { journaled[$0] }
            guard source.count == relationship.sourceColumns.count, !source.isEmpty else { continue }
            var destination = relationship.destinationColumns
            if destination.isEmpty { destination = store.schema.entity(named: relationship.destinationEntityName)?.primaryKey ?? [] }
            guard destination.count == source.count else { continue }
            let present = source.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
            let match = zip(destination, source).map { "p.\(quoteIdentifier($0)) = \($1)" }.joined(separator: " AND ")
            conditions.append("(\(present) AND NOT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(relationship.destinationEntityName)) AS p WHERE \(match)))")
        }
        guard !conditions.isEmpty else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT count(*) FROM \(journal) AS u WHERE \(conditions.joined(separator: " OR "))") ?? 0
    }

    /// Undoes an upsert by replaying its journal backwards, one write at a time: an inserted row is
    /// deleted, an updated row gets its before-image back (every column, its old key included).
    /// Each step returns to a state the upsert itself passed through, so no step can break a
    /// UNIQUE constraint. Values are read and bound through the C API, so text keeps its NULs.
    /// - Complexity: one statement per journaled write, streamed (memory O(1)).
    private func replayUpsertJournal(_ db: Database, entity: Entity, columns: [String], journal: String) throws {
        let keys = entity.keyColumns
        let table = "main.\(quoteIdentifier(entity.name))"
        let keyMatch = keys.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
        let read = try db.makeStatement(sql: "SELECT \((keys.indices.map { "k\($0)" } + ["op"] + columns.indices.map { "c\($0)" }).joined(separator: ", ")) FROM \(journal) ORDER BY rowid DESC")
        let delete = try db.makeStatement(sql: "DELETE FROM \(table) WHERE \(keyMatch)")
        let restore = columns.isEmpty ? nil : try db.makeStatement(sql: "UPDATE OR ABORT \(table) SET \(columns.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: ", ")) WHERE \(keyMatch)")
        let connection = db.sqliteConnection
        func fail(_ code: Int32, _ stmt: OpaquePointer?) throws -> Never {
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(stmt)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
        func run(_ stmt: OpaquePointer?, _ values: [SQLValue]) throws {
            sqlite3_reset(stmt)
            for (n, value) in values.enumerated() { value.bind(to: stmt, at: Int32(n + 1)) }
            let code = sqlite3_step(stmt)
            guard code == SQLITE_DONE else { try fail(code, stmt) }
            sqlite3_reset(stmt)
        }
        let cursor = read.sqliteStatement
        sqlite3_reset(cursor)
        defer { sqlite3_reset(cursor) }
        while true {
            let code = sqlite3_step(cursor)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { try fail(code, cursor) }
            let key = (0..<Int32(keys.count)).map { SQLValue(statement: cursor, column: $0) }
            if sqlite3_column_int64(cursor, Int32(keys.count)) == 0 {
                try run(delete.sqliteStatement, key)
            } else if let restore {
                let before = (0..<Int32(columns.count)).map { SQLValue(statement: cursor, column: Int32(keys.count) + 1 + $0) }
                try run(restore.sqliteStatement, before + key)
            }
        }
    }

    /// Forgets the last recorded operation (drops its journal).
    func discardLastUndo() {
        if let entry = undoStack.popLast() { dropTempTable(entry.table) }
    }

    /// Forgets every recorded operation (drops their journals).
    public func discardUndoHistory() {
        for entry in undoStack { dropTempTable(entry.table) }
        undoStack.removeAll()
    }
}
