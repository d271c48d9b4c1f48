import BatchStore
import Foundation

/// How one undoable edit journals its rows: a temp table in the edit's session, `k0…` the rows'
/// keys before the edit, `c0…` the columns it changes as they were (an update's assigned
/// columns; a delete's every stored column), and `n0…` the keys after, when an update assigns a
/// key column (undo finds the rows by them). An insert journals the new rows' keys alone.
struct UndoPlan {
    enum Kind {
        case update(columns: [String], newKeys: Bool)
        case delete(columns: [String])
        case insert
    }
    let table: String
    let target: PostgresTable
    let entity: Entity
    let kind: Kind
    /// The target's key columns.
    let keys: [PostgresIDColumn]

    /// Plans the journal of `edit`. A delete is refused (`.undoRefused`) when another table's
    /// foreign key into this one would cascade, set NULL or set a default: undo could not bring
    /// those rows back.
    init(_ edit: PostgresContext.CompiledEdit, deleting: Bool, context: PostgresContext) throws {
        target = edit.table
        entity = edit.entity
        keys = PostgresIDColumn.of(edit.table)
        table = context.makeTableName("bs_undo")
        if deleting {
            let name = edit.table.name
            let referencing = context.store.schema.tables.filter { other in
                other.relationships.contains { $0.destinationEntityName == name && $0.deleteRule != .noAction && $0.deleteRule != .deny }
            }
            if !referencing.isEmpty {
                throw BatchStoreError(.undoRefused, "deleting from \(name) changes \(referencing.map(\.name).joined(separator: ", ")) through foreign-key actions, which undo could not restore; run it without undo")
            }
            // Generated columns are computed again as the rows come back.
            kind = .delete(columns: edit.table.columns.filter { !$0.isGenerated }.map(\.name))
        } else {
            let keyNames = Set(PostgresIDColumn.of(edit.table).map(\.source))
            let assignsKey = edit.assigned.contains { keyNames.contains("t.\(quoteIdentifier($0))") }
            kind = .update(columns: edit.assigned, newKeys: assignsKey)
        }
    }

    /// Plans the journal of an insert into `table`, which must have a primary key (undo finds
    /// the rows by it).
    init(inserting table: PostgresTable, entity: Entity, context: PostgresContext) throws {
        guard case .primaryKey = table.rowKey else {
            throw BatchStoreError(.undoRefused, "\(table.name) has no primary key, so undo could not find the inserted rows again; run it without undo (nothing was written)")
        }
        target = table
        self.entity = entity
        keys = PostgresIDColumn.of(table)
        self.table = context.makeTableName("bs_undo")
        kind = .insert
    }

    private var columns: [String] {
        switch kind {
        case .update(let columns, _), .delete(let columns): return columns
        case .insert: return []
        }
    }
    private var newKeys: Bool {
        if case .update(_, true) = kind { return true }
        return false
    }
    /// The journal's columns that hold the rows' keys as the edit left them.
    var currentKeys: [PostgresIDColumn] {
        keys.enumerated().map { i, key in key.named(newKeys ? "n\(i)" : "k\(i)") }
    }
    /// The journal's columns that hold the rows' keys before the edit.
    var oldKeys: [PostgresIDColumn] { keys.enumerated().map { i, key in key.named("k\(i)") } }

    private var oldList: [String] {
        keys.enumerated().map { "\($1.source) AS k\($0)" } + columns.enumerated().map { "t.\(quoteIdentifier($1)) AS c\($0)" }
    }
    private var newList: [String] { newKeys ? keys.enumerated().map { "\($1.source) AS n\($0)" } : [] }

    /// Makes the (empty) journal, its columns typed as the table's.
    var createSQL: String {
        "CREATE TEMP TABLE \(quoteIdentifier(table)) AS SELECT \((oldList + newList).joined(separator: ", ")) FROM \(target.qualifiedSQL) AS t WITH NO DATA"
    }

    /// `edit` as one statement that locks its rows, changes them and journals them as they were.
    func fillSQL(_ edit: PostgresContext.CompiledEdit) -> String {
        let q = target.qualifiedSQL
        let old = "SELECT \(oldList.joined(separator: ", ")) FROM \(q) AS t\(edit.whereSQL) FOR UPDATE OF t"
        let match = "(\(keys.map(\.source).joined(separator: ", "))) = (\(keys.indices.map { "old.k\($0)" }.joined(separator: ", ")))"
        let returned = (keys.indices.map { "old.k\($0)" } + columns.indices.map { "old.c\($0)" }).joined(separator: ", ")
        let journal = "pg_temp.\(quoteIdentifier(table))"
        if let sets = edit.sets {
            let now = newKeys ? ", " + keys.map(\.source).joined(separator: ", ") : ""
            return "WITH old AS MATERIALIZED (\(old)), changed AS (UPDATE \(q) AS t SET \(sets) FROM old WHERE \(match) RETURNING \(returned)\(now)) INSERT INTO \(journal) SELECT * FROM changed"
        }
        return "WITH old AS MATERIALIZED (\(old)), gone AS (DELETE FROM \(q) AS t USING old WHERE \(match) RETURNING \(returned)) INSERT INTO \(journal) SELECT * FROM gone"
    }

    /// The statement that puts the journaled rows back.
    var undoSQL: String {
        let q = target.qualifiedSQL
        let journal = "pg_temp.\(quoteIdentifier(table))"
        switch kind {
        case .update(let columns, let newKeys):
            let sets = columns.enumerated().map { "\(quoteIdentifier($1)) = u.c\($0)" }.joined(separator: ", ")
            let match = "(\(keys.map(\.source).joined(separator: ", "))) = (\(keys.indices.map { "u.\(newKeys ? "n" : "k")\($0)" }.joined(separator: ", ")))"
            return "UPDATE \(q) AS t SET \(sets) FROM \(journal) AS u WHERE \(match)"
        case .delete(let columns):
            let names = columns.map(quoteIdentifier).joined(separator: ", ")
            let values = columns.indices.map { "u.c\($0)" }.joined(separator: ", ")
            // Identity columns GENERATED ALWAYS take their old values back too.
            return "INSERT INTO \(q) (\(names)) OVERRIDING SYSTEM VALUE SELECT \(values) FROM \(journal) AS u"
        case .insert:
            return "DELETE FROM \(q) AS t WHERE (\(keys.map(\.source).joined(separator: ", "))) IN (SELECT \(keys.indices.map { "u.k\($0)" }.joined(separator: ", ")) FROM \(journal) AS u)"
        }
    }

    /// An insert statement (`INSERT … AS t …`, without `RETURNING`) that also journals its rows'
    /// keys, answering `isNew` and, with `keys`, the keys as ``PostgresIDColumn/readSource`` reads them.
    func journaling(insert sql: String, isNew: String, keys readKeys: Bool) -> String {
        let returned = keys.enumerated().map { "\($1.source) AS k\($0)" }.joined(separator: ", ")
        let reads = readKeys ? ", " + oldKeys.map { $0.read("ins") }.joined(separator: ", ") : ""
        return "WITH ins AS (\(sql) RETURNING \(isNew) AS is_new, \(returned)), journaled AS (INSERT INTO pg_temp.\(quoteIdentifier(table)) "
            + "SELECT \(keys.indices.map { "k\($0)" }.joined(separator: ", ")) FROM ins) SELECT ins.is_new\(reads) FROM ins"
    }
}

/// One undoable edit over PostgreSQL: its journal, and the session it lives in (kept open while
/// the entry is, even once the result that made it has closed).
struct PostgresUndoEntry {
    let lease: PostgresSessionLease
    let plan: UndoPlan
    let rows: Int
}

extension PostgresContext {
    /// Pushes `entry`; beyond ``undoDepth`` entries the oldest is forgotten (its journal dropped,
    /// its session closed when nothing else holds it).
    func record(_ entry: PostgresUndoEntry) {
        undoStack.append(entry)
        while undoStack.count > max(1, undoDepth) { forget(undoStack.removeFirst()) }
    }

    private func forget(_ entry: PostgresUndoEntry) {
        entry.lease.session.executeDetached("DROP TABLE IF EXISTS pg_temp.\(quoteIdentifier(entry.plan.table))")
    }

    /// True when ``undo()`` has something to undo.
    public var canUndo: Bool { !undoStack.isEmpty }

    /// Forgets every recorded edit (drops their journals).
    public func discardUndoHistory() {
        for entry in undoStack { forget(entry) }
        undoStack.removeAll()
    }

    /// Undoes the last edit recorded with `undoable: true`, in one transaction in the session that
    /// holds its journal, and returns what changed (merged into open results already).
    ///
    /// An update gets its assigned columns back (rows found by their keys as the update left
    /// them; a row deleted since stays deleted); a delete gets its rows back whole, with the same
    /// keys (identity columns included; generated columns computed again); an insert's rows are
    /// deleted by key (the server's ON DELETE actions apply). Changes made to those
    /// rows since are overwritten; triggers run again, and the server checks every constraint: a
    /// row that would break one (its key taken since, its foreign key's row gone) fails the undo,
    /// which then changes nothing and stays on the stack.
    /// - Throws: `.nothingToUndo`; `.serverUnavailable` when the journal's session is gone (the
    ///   entry is dropped: its journal went with the session).
    @discardableResult
    public func undo() throws -> ChangeSet {
        guard let entry = undoStack.last else { throw BatchStoreError(.nothingToUndo, "nothing to undo") }
        let session = entry.lease.session
        guard !session.isClosed else {
            undoStack.removeLast()
            throw BatchStoreError(.serverUnavailable, "the last edit's undo journal was lost with its connection to PostgreSQL; nothing was restored")
        }
        let plan = entry.plan
        let restored: Int
        do {
            restored = try inTransaction(session) {
                let n = try watched(session, plan.undoSQL, [], phase: .writing) ?? 0
                try flushStatistics(session)
                return n
            }
        } catch let error as BatchStoreError where session.isClosed {
            // The journal went with the connection: nothing can undo this edit any more.
            undoStack.removeLast()
            throw BatchStoreError(.serverUnavailable, "\(error.message); the last edit's undo journal was lost with its connection to PostgreSQL")
        }
        undoStack.removeLast()
        let kind: StoredChanges.Kind
        switch plan.kind {
        case .delete: kind = .inserted
        case .update: kind = .updated
        case .insert: kind = .deleted
        }
        // The journal now lists the rows put back, by the keys they have again; it is dropped
        // with the change set.
        let changes = ChangeSet(stored: [StoredChanges(entity: plan.entity, kind: kind, count: restored,
                                                       keys: PostgresChangedKeys(lease: entry.lease, table: plan.table, columns: plan.oldKeys))])
        merge(changes)
        return changes
    }

    // MARK: Cancelling

    /// Runs `body` so that `progress` can cancel its statements on the server (PostgreSQL's cancel
    /// request): a statement cancelled inside an edit's transaction rolls the edit back, and the
    /// call throws `.cancelled` with nothing changed. `progress` is asked about every 50 ms while
    /// a statement runs; once an edit has committed, nothing is cancelled.
    public func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T {
        let outer = interruption
        interruption = (progress, DispatchTime.now().uptimeNanoseconds)
        defer { interruption = outer }
        return try body()
    }

    /// Runs one statement (`execute`), cancellable while ``interruptible(_:_:)`` runs.
    func watched(_ session: PostgresSession, _ sql: String, _ arguments: [SQLValue], phase: EditProgress.Phase) throws -> Int? {
        try watching(session, phase: phase) { watch, cancel in
            try session.execute(sql, arguments, every: 0.05, watch: watch, cancel: cancel)
        } plain: {
            try session.execute(sql, arguments)
        }
    }

    /// Runs one query, cancellable while ``interruptible(_:_:)`` runs.
    func watchedQuery(_ session: PostgresSession, _ sql: String, _ arguments: [SQLValue], phase: EditProgress.Phase) throws -> [[SQLValue]] {
        try watching(session, phase: phase) { watch, cancel in
            try session.query(sql, arguments, every: 0.05, watch: watch, cancel: cancel)
        } plain: {
            try session.query(sql, arguments)
        }
    }

    private func watching<T>(_ session: PostgresSession, phase: EditProgress.Phase,
                             _ body: (_ watch: (Double) -> Bool, _ cancel: () -> Void) throws -> T, plain: () throws -> T) throws -> T {
        guard let (progress, started) = interruption else { return try plain() }
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        if progress(EditProgress(phase: phase, elapsed: elapsed())) == .cancel {
            throw BatchStoreError(.cancelled, "the edit was cancelled; nothing was changed")
        }
        let pid = try session.backendPID()
        var cancelled = false
        let value: T
        do {
            value = try body({ _ in progress(EditProgress(phase: phase, elapsed: elapsed())) == .proceed }, {
                cancelled = true
                _ = store.cancelStatement(of: pid)
            })
        } catch let error as BatchStoreError where cancelled && error.code == .cancelled {
            throw BatchStoreError(.cancelled, "the edit was cancelled; nothing was changed")
        }
        // A cancel that came as the statement ended: the transaction around it rolls back.
        if cancelled { throw BatchStoreError(.cancelled, "the edit was cancelled; nothing was changed") }
        return value
    }
}
