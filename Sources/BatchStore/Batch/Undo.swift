import Foundation
import GRDB

/// One recorded batch operation: its before-image lives in a temp table on the context's
/// connection, never in Swift memory.
struct UndoEntry {
    enum Kind { case update(columns: [String]), delete(columns: [String]), insert }
    let entity: Entity
    let kind: Kind
    let table: String
}

extension ManagedObjectContext {
    /// Throws when recording undo for `rows` rows is not allowed or not exact.
    func checkUndoable(_ entity: Entity, rows: Int, deleting: Bool) throws {
        if rows > undoLimit {
            throw BatchStoreError(.invalidArgument, "this change touches \(rows) rows, more than the undo limit of \(undoLimit); run it without undo, or raise undoLimit")
        }
        if deleting {
            // Rows removed by ON DELETE CASCADE / SET NULL in other tables would not come back.
            let referencing = store.schema.entities.filter { other in
                other.relationships.contains { $0.destinationEntityName.caseInsensitiveCompare(entity.name) == .orderedSame && $0.deleteRule != .noAction && $0.deleteRule != .deny }
            }
            if !referencing.isEmpty {
                throw BatchStoreError(.invalidArgument, "deleting from \(entity.name) changes \(referencing.map(\.name).joined(separator: ", ")) through foreign-key actions, which undo could not restore; run it without undo")
            }
        }
    }

    /// Creates the journal table and fills it with `select` (run inside the batch's transaction).
    func recordJournal(_ db: Database, entity: Entity, columns: [String], whereSQL: String, arguments: [SQLValue]) throws -> String {
        let table = makeTempTableName("bs_undo")
        let keys = entity.keyColumns
        let keyCols = (0..<keys.count).map { "k\($0)" }
        let valueCols = (0..<columns.count).map { "c\($0)" }
        try db.execute(sql: "CREATE TEMP TABLE \(quoteIdentifier(table)) (\((keyCols + valueCols).joined(separator: ", ")))")
        let select = qualified(keys + columns).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO temp.\(quoteIdentifier(table)) SELECT \(select) FROM main.\(quoteIdentifier(entity.name)) AS t\(whereSQL)", arguments: arguments.statementArguments)
        return table
    }

    /// True when ``undo()`` has something to undo.
    public var canUndo: Bool { !undoStack.isEmpty }

    /// Undoes the last batch operation recorded with `undoable: true`, in one transaction, and
    /// returns what changed so it can be merged (it is already merged into this context).
    ///
    /// An update gets its assigned columns back; a delete gets its rows back with the same keys; an
    /// insert is deleted. Changes made to those rows since are overwritten; triggers run again as
    /// SQLite defines them.
    /// - Throws: `.invalidArgument` when there is nothing to undo; SQLite errors roll back and keep
    ///   the entry, so undo can be tried again.
    @discardableResult
    public func undo() throws -> ChangeSet {
        guard let entry = undoStack.last else { throw BatchStoreError(.invalidArgument, "nothing to undo") }
        let entity = entry.entity
        let keys = entity.keyColumns
        let table = "main.\(quoteIdentifier(entity.name))"
        let journal = "temp.\(quoteIdentifier(entry.table))"
        let match = keys.enumerated().map { "t.\(quoteIdentifier($1)) = u.k\($0)" }.joined(separator: " AND ")
        let keyTuple = sqlTuple(keys.map(quoteIdentifier))
        let keyCols = (0..<keys.count).map { "u.k\($0)" }.joined(separator: ", ")
        var changes = ChangeSet()
        // The changed keys move from the journal into a StoredChanges table: no ID array in Swift,
        // and merging costs what the contexts hold, however many rows the undo restores.
        let stored = makeTempTableName("bs_changes")
        let queue = db
        try withDatabase { db in
            switchToWALBeforeWriting(db)
            try db.inTransaction(.immediate) {
                try db.execute(sql: StoredChanges.createSQL(stored, entity: entity))
                try db.execute(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(stored)) SELECT \(keyCols) FROM \(journal) AS u")
                let rows = db.changesCount
                let kind: StoredChanges.Kind
                switch entry.kind {
                case .update(let columns):
                    let sets = columns.enumerated().map { "\(quoteIdentifier($1)) = u.c\($0)" }.joined(separator: ", ")
                    try db.execute(sql: "UPDATE \(table) AS t SET \(sets) FROM \(journal) AS u WHERE \(match)")
                    kind = .updated
                case .delete(let columns):
                    let names = (keys + columns).map(quoteIdentifier).joined(separator: ", ")
                    let values = (keys.indices.map { "u.k\($0)" } + columns.indices.map { "u.c\($0)" }).joined(separator: ", ")
                    try db.execute(sql: "INSERT INTO \(table) (\(names)) SELECT \(values) FROM \(journal) AS u")
                    kind = .inserted
                case .insert:
                    try db.execute(sql: "DELETE FROM \(table) WHERE \(keyTuple) IN (SELECT \(keyCols) FROM \(journal) AS u)")
                    kind = .deleted
                }
                try db.execute(sql: "DROP TABLE \(journal)")
                changes = ChangeSet(stored: [StoredChanges(entity: entity, kind: kind, count: rows, queue: queue, table: stored)])
                return .commit
            }
        }
        undoStack.removeLast()
        mergeChanges(changes)
        return changes
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
