import BatchStore
import Foundation

/// One undoable edit over PostgreSQL: its journal, and the session it lives in (kept open while
/// the entry is, even once the result that made it has closed).
struct PostgresUndoEntry {
    let lease: PostgresSessionLease
    let plan: UndoPlan
}

/// A context's recorded undoable edits, last on top (kept in the context's feature state).
final class PostgresUndoStack {
    var entries: [PostgresUndoEntry] = []
}

extension PostgresContext {
    /// Recorded undoable edits, last on top.
    var undoStack: [PostgresUndoEntry] {
        get { featureState(PostgresUndoStack.self) { PostgresUndoStack() }.entries }
        set { featureState(PostgresUndoStack.self) { PostgresUndoStack() }.entries = newValue }
    }
}

extension PostgresContext {
    /// True when `table` (a plain table) has inheritance children now (a partitioned table's
    /// primary key binds its partitions, so those do not count).
    static func hasInheritanceChildren(_ table: PostgresTable, _ session: PostgresSession) throws -> Bool {
        guard table.kind == .table else { return false }
        let rows = try session.query("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits WHERE inhparent = CAST($1 AS oid))", [.integer(table.oid)])
        return rows.first?.first?.integerValue.map { $0 != 0 } ?? false
    }

    /// Refuses an edit that names rows by key (marked rows, a result's membership) on a table
    /// with inheritance children: a child's row can share a key with the parent's, so the edit
    /// would change both.
    static func refuseKeyAddressing(_ table: PostgresTable, _ session: PostgresSession) throws {
        if try hasInheritanceChildren(table, session) {
            throw BatchStoreError(.readOnly, "\(table.name) has inheritance children, whose rows can share its primary key, so rows of it cannot be named by key; edit it with faultline update or delete and a predicate (nothing was changed)")
        }
    }

    /// Pushes `entry`; beyond ``undoDepth`` entries the oldest is forgotten (its journal dropped,
    /// its session closed when nothing else holds it).
    func record(_ entry: PostgresUndoEntry) {
        undoStack.append(entry)
        while undoStack.count > max(1, undoDepth) { forget(undoStack.removeFirst()) }
    }

    private func forget(_ entry: PostgresUndoEntry) {
        entry.lease.session.executeDetached("DROP TABLE IF EXISTS \(entry.plan.qualifiedName)")
    }

    /// True when ``undo()`` has something to undo.
    public var canUndo: Bool { !undoStack.isEmpty }

    /// What ``undo()`` would take back now (nil: nothing), read from its journal in the session
    /// that holds it; writes nothing.
    /// - Throws: `.serverUnavailable` when the journal's session is gone.
    public func undoSummary() throws -> UndoSummary? {
        guard let entry = undoStack.last else { return nil }
        let session = entry.lease.session
        guard !session.isClosed else {
            throw BatchStoreError(.serverUnavailable, "the last edit's undo journal was lost with its connection to PostgreSQL")
        }
        let plan = entry.plan
        let kind = try plan.kind.summaryKind {
            let counts = try session.query("SELECT count(*) FILTER (WHERE is_new), count(*) FILTER (WHERE NOT is_new) FROM \(plan.qualifiedName)")
            return (counts.first?.first?.integerValue.map(Int.init) ?? 0, counts.first?.dropFirst().first?.integerValue.map(Int.init) ?? 0)
        }
        if case .upsert(let inserted, let updated) = kind {
            return UndoSummary(kind: kind, table: plan.entity.name, rows: inserted + updated)
        }
        let rows = try session.query("SELECT count(*) FROM \(plan.qualifiedName)").first?.first?.integerValue.map(Int.init) ?? 0
        let changed = try plan.changedSinceCondition.map {
            try session.query("SELECT count(*) FROM \(plan.qualifiedName) AS u WHERE \($0)").first?.first?.integerValue.map(Int.init) ?? 0
        } ?? 0
        return UndoSummary(kind: kind, table: plan.entity.name, rows: rows, changedSince: changed)
    }

    /// Why an edit of `rows` rows could not be undone, or nil: over ``undoLimit``, or what the
    /// catalogs say now (`UndoPlan/check(in:)`: inheritance children, foreign-key actions), the
    /// same refusals the edit meets when it runs, so its question can say so before `y`.
    public func undoRefusal(_ entity: Entity, rows: Int, deleting: Bool, assigning: [String]) -> String? {
        if rows > undoLimit {
            return UndoRefusal.tooBigReason(rows: rows, limit: undoLimit)
        }
        do {
            let table = try store.table(named: entity.name)
            guard case .primaryKey = table.rowKey else { return nil }
            // The columns as the table spells them (a name is matched without regard to case, as the edit matches it).
            let columns = assigning.map { table.column(named: $0)?.name ?? $0 }
            try UndoPlan(checking: table, entity: entity, deleting: deleting, assigning: columns).check(in: try sessionLease().session)
            return nil
        } catch let error as BatchStoreError where error.code == .undoRefused {
            return error.undoRefusalReason
        } catch {
            // Not a refusal of undo (the session, the table): the edit itself will say it.
            return nil
        }
    }

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
    /// deleted by key (the server's ON DELETE actions apply). Rows changed since the edit are left
    /// as they are and counted in `ChangeSet/changedSince` (`UndoPlan/changedSinceCondition`:
    /// an updated row changed or gone, a deleted row's key taken again); an insert's rows, and rows
    /// of a table without a key, keep no after-image, and changes to them since are overwritten.
    /// Triggers run again, and the server checks every constraint: a row that would break one
    /// (its foreign key's row gone) fails the undo, which then changes nothing and stays on the stack.
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
        let counts: [Int]
        var leftAlone = 0
        var upserted: [StoredChanges] = []
        do {
            counts = try inTransaction(session) {
                // Rows changed since the edit leave the journal (in this transaction: a failure
                // puts them back) and so stay as they are; the rest are restored.
                var journaled = 0
                if case .update = plan.kind {
                    journaled = Int(try session.query("SELECT count(*) FROM \(plan.qualifiedName)").first?.first?.integerValue ?? 0)
                }
                leftAlone = try plan.changedSinceCondition.map { try watched(session, "DELETE FROM \(plan.qualifiedName) AS u WHERE \($0)", [], phase: .writing) ?? 0 } ?? 0
                let n = try plan.undoStatements.map { try watched(session, $0, [], phase: .writing) ?? 0 }
                // An update's rows changed just before their lock (its WHERE checked again) are left alone too.
                if case .update = plan.kind, plan.changedSinceCondition != nil { leftAlone = max(leftAlone, journaled - n.reduce(0, +)) }
                // An upsert's two kinds of rows, listed before the commit (a failure then undoes the undo).
                if case .upsert = plan.kind {
                    upserted = try upsertChanges(plan, lease: entry.lease, updated: n.count > 1 ? n[0] : 0, deleted: n.last ?? 0)
                }
                try flushStatistics(session)
                return n
            }
        } catch let error as BatchStoreError where session.isClosed {
            // The journal went with the connection: nothing can undo this edit any more.
            undoStack.removeLast()
            throw BatchStoreError(.serverUnavailable, "\(error.message); the last edit's undo journal was lost with its connection to PostgreSQL")
        }
        undoStack.removeLast()
        let restored = counts.reduce(0, +)
        guard let kind = plan.kind.undoneChange else {
            // Two kinds of rows: the journal was split into a table of each, and goes.
            session.executeDetached("DROP TABLE IF EXISTS \(plan.qualifiedName)")
            let changes = ChangeSet(stored: upserted)
            merge(changes)
            return changes
        }
        // The journal now lists the rows put back, by the keys they have again; it is dropped
        // with the change set.
        var changes = ChangeSet(stored: [StoredChanges(entity: plan.entity, kind: kind, count: restored,
                                                       keys: PostgresChangedKeys(lease: entry.lease, table: plan.table, columns: plan.oldKeys))])
        changes.changedSince = leftAlone
        merge(changes)
        return changes
    }

    /// An undone upsert's changes: the rows it had updated (their columns put back) and those it
    /// had inserted (deleted), each kind's keys in a table of the journal's session.
    private func upsertChanges(_ plan: UndoPlan, lease: PostgresSessionLease, updated: Int, deleted: Int) throws -> [StoredChanges] {
        let session = lease.session
        let keys = plan.oldKeys.map(\.name).joined(separator: ", ")
        var stored: [StoredChanges] = []
        for (isNew, kind, count) in [(false, StoredChanges.Kind.updated, updated), (true, StoredChanges.Kind.deleted, deleted)] where count > 0 {
            let name = makeTableName("bs_changed")
            try session.execute("CREATE TEMP TABLE \(quoteIdentifier(name)) AS SELECT \(keys) FROM \(plan.qualifiedName) WHERE \(isNew ? "" : "NOT ")is_new")
            stored.append(StoredChanges(entity: plan.entity, kind: kind, count: count, keys: PostgresChangedKeys(lease: lease, table: name, columns: plan.oldKeys)))
        }
        return stored
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
