import BatchStore
import Foundation

/// How one undoable edit journals its rows: a temp table in the edit's session, `k0…` the rows'
/// keys before the edit, `c0…` the columns it changes as they were (an update's assigned
/// columns; a delete's every stored column), and `n0…` the keys after, when an update assigns a
/// key column (undo finds the rows by them). An insert journals the new rows' keys alone. An
/// upsert journals both, marked by `is_new`: the keys of the rows it inserted, and each row it
/// updated as it was before (every stored column but the key), once, before its first change,
/// with `set_cols`, the journaled columns it set in that row (undo puts back those alone).
struct UndoPlan {
    let table: String
    let target: PostgresTable
    let entity: Entity
    let kind: JournaledEdit
    /// True when an update assigns a key column: the journal then holds the keys after it too.
    let newKeys: Bool
    /// The target's key columns.
    let keys: [PostgresIDColumn]
    /// An upsert's columns to put back in the rows it updated: those it set (``assigning(_:)``).
    private(set) var restoredColumns: [String] = []

    /// Plans the journal of `edit` (what the catalogs allow is checked when it runs: ``check(in:)``).
    init(_ edit: PostgresContext.CompiledEdit, deleting: Bool, context: PostgresContext) throws {
        target = edit.table
        entity = edit.entity
        keys = PostgresIDColumn.of(edit.table)
        table = context.makeTableName("bs_undo")
        (kind, newKeys) = Self.edit(of: edit.table, keys: keys, deleting: deleting, assigning: edit.assigned)
    }

    /// A delete journals every stored column (generated ones are computed again as the rows come
    /// back); an update its assigned columns, and the keys after it when it assigns a key column.
    private static func edit(of table: PostgresTable, keys: [PostgresIDColumn], deleting: Bool, assigning: [String]) -> (JournaledEdit, Bool) {
        if deleting { return (.delete(columns: table.columns.filter { !$0.isGenerated }.map(\.name)), false) }
        let keyNames = Set(keys.map(\.source))
        return (.update(columns: assigning), assigning.contains { keyNames.contains("t.\(quoteIdentifier($0))") })
    }

    /// Refuses undo (`.undoRefused`, inside the edit's transaction, before anything is written)
    /// when the catalogs say now that it could not put the rows back as they were:
    /// - the table has inheritance children: their rows can share a primary key with the
    ///   parent's (it binds the parent alone), so a journal by key could not tell them apart;
    /// - a delete, and another table's foreign key into this one cascades, sets NULL or sets a
    ///   default on delete; an update of a referenced column, and one does so on update: undo
    ///   would not bring those rows back.
    func check(in session: PostgresSession) throws {
        let oid = SQLValue.integer(target.oid)
        if try PostgresContext.hasInheritanceChildren(target, session) {
            throw BatchStoreError(.undoRefused, "\(target.name) has inheritance children, whose rows can share its primary key, so undo could not tell them apart; run it without undo")
        }
        try checkTriggers(in: session)
        let referencing: [[SQLValue]]
        switch kind {
        case .insert:
            return
        case .upsert(let columns) where columns.isEmpty:
            return
        case .delete:
            referencing = try session.query("""
                SELECT DISTINCT c.conrelid::regclass::text FROM pg_catalog.pg_constraint AS c
                WHERE c.contype = 'f' AND c.confrelid = CAST($1 AS oid) AND c.confdeltype IN ('c', 'n', 'd') ORDER BY 1
                """, [oid])
        case .update(let columns), .upsert(let columns):
            guard !columns.isEmpty else { return }
            let names = columns.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
            referencing = try session.query("""
                SELECT DISTINCT c.conrelid::regclass::text FROM pg_catalog.pg_constraint AS c
                WHERE c.contype = 'f' AND c.confrelid = CAST($1 AS oid) AND c.confupdtype IN ('c', 'n', 'd')
                  AND EXISTS (SELECT 1 FROM unnest(c.confkey) AS k(n) JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.confrelid AND a.attnum = k.n
                              WHERE a.attname IN (\(names))) ORDER BY 1
                """, [oid] + columns.map { .text($0) })
        }
        let tables = referencing.compactMap { $0.first?.textValue }
        guard !tables.isEmpty else { return }
        throw UndoRefusal.error("\(refusalVerb) \(target.name) can change \(tables.joined(separator: ", ")) through foreign-key actions", .foreignKeyActions)
    }

    /// The edit, as a refusal names it: `deleting from`, `this update of`, ….
    private var refusalVerb: String {
        switch kind {
        case .delete: "deleting from"
        case .upsert: "this upsert into"
        case .insert: "this insert into"
        case .update: "this update of"
        }
    }

    /// Throws `.undoRefused` when the edit fires an enabled user trigger on its table (a delete's
    /// ON DELETE, an update's ON UPDATE of any column or of one it assigns, an insert's or an
    /// upsert's ON INSERT and ON UPDATE): what a trigger writes is not in the journal.
    func checkTriggers(in session: PostgresSession) throws {
        // pg_trigger.tgtype bits: 4 INSERT, 8 DELETE, 16 UPDATE.
        let mask: Int, columns: [String]
        switch kind {
        // A delete's undo inserts its rows again: insert triggers fire then.
        case .delete: (mask, columns) = (12, [])
        case .update(let assigned): (mask, columns) = (16, assigned)
        case .insert: (mask, columns) = (4, [])
        case .upsert(let assigned): (mask, columns) = (assigned.isEmpty ? 4 : 20, assigned)
        }
        let names = columns.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
        let ofColumns = columns.isEmpty ? "" : """
             AND ((g.tgtype & 16) = 0 OR cardinality(CAST(g.tgattr AS int2[])) = 0 OR EXISTS (
                  SELECT 1 FROM unnest(CAST(g.tgattr AS int2[])) AS k(n) JOIN pg_catalog.pg_attribute AS a ON a.attrelid = g.tgrelid AND a.attnum = k.n
                  WHERE a.attname IN (\(names))))
            """
        let rows = try session.query("""
            SELECT g.tgname FROM pg_catalog.pg_trigger AS g
            WHERE g.tgrelid = CAST($1 AS oid) AND NOT g.tgisinternal AND g.tgenabled <> 'D' AND (g.tgtype & \(mask)) <> 0\(ofColumns)
            ORDER BY 1
            """, [SQLValue.integer(target.oid)] + columns.map { .text($0) })
        let triggers = rows.compactMap { $0.first?.textValue }
        guard !triggers.isEmpty else { return }
        // PostgreSQL cannot say what a trigger function writes: the question says so, not that it writes.
        let undoToo = { if case .delete = kind { return " (or its undo)" } else { return "" } }()
        throw UndoRefusal.error("\(refusalVerb) \(target.name)\(undoToo) fires \(triggers.count == 1 ? "trigger" : "triggers") \(triggers.joined(separator: ", "))", .triggerFunctions)
    }

    /// A plan made only to run ``check(in:)`` before an edit's question: the edit of `table`
    /// that deletes rows or assigns `assigning` (its journal is never created).
    init(checking table: PostgresTable, entity: Entity, deleting: Bool, assigning: [String]) {
        target = table
        self.entity = entity
        keys = PostgresIDColumn.of(table)
        self.table = ""
        (kind, newKeys) = Self.edit(of: table, keys: keys, deleting: deleting, assigning: assigning)
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
        newKeys = false
    }

    /// Plans the journal of an upsert into `table` (primary key needed, as for an insert): the
    /// rows it updates are journaled whole (every stored column but the key), the rows it inserts
    /// by key.
    init(upserting table: PostgresTable, entity: Entity, context: PostgresContext) throws {
        let plan = try UndoPlan(inserting: table, entity: entity, context: context)
        target = plan.target
        self.entity = entity
        keys = plan.keys
        self.table = plan.table
        let keyNames = Set(keys.map(\.source))
        kind = .upsert(columns: table.columns.filter { !$0.isGenerated && !keyNames.contains("t.\(quoteIdentifier($0.name))") }.map(\.name))
        newKeys = false
    }

    /// Records that the upsert set `columns` in rows it updated (undo puts those back).
    mutating func assigning(_ columns: [String]) {
        guard case .upsert(let journaled) = kind else { return }
        for name in columns where journaled.contains(name) && !restoredColumns.contains(name) { restoredColumns.append(name) }
    }

    private var columns: [String] { kind.columns }
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
    /// An update's after-image: the assigned columns as the update left them (`a0…`), which undo
    /// compares with the rows then to leave alone those changed since.
    private var afterList: [String] {
        guard case .update(let columns) = kind else { return [] }
        return columns.enumerated().map { "t.\(quoteIdentifier($1)) AS a\($0)" }
    }

    /// The journal rows (`u`) whose rows changed since the edit, which undo leaves as they are:
    /// for an update, those whose row is gone or whose assigned columns no longer hold what the
    /// update wrote (compared as text: every type has a text form, not every one an equality);
    /// for a delete, those whose key names a row again. Nil where nothing is compared: inserts,
    /// upserts, and rows named by `ctid` (a restored row gets a new one).
    var changedSinceCondition: String? {
        guard !keys.contains(where: { $0.source == "t.ctid" }) else { return nil }
        let q = target.qualifiedSQL
        switch kind {
        case .update(let columns):
            let match = "(\(keys.sourceList)) = (\(keys.indices.map { "u.\(newKeys ? "n" : "k")\($0)" }.joined(separator: ", ")))"
            let same = columns.enumerated().map { "CAST(t.\(quoteIdentifier($1)) AS text) IS NOT DISTINCT FROM CAST(u.a\($0) AS text)" }
            return "NOT EXISTS (SELECT 1 FROM \(q) AS t WHERE \(([match] + same).joined(separator: " AND ")))"
        case .delete:
            return "EXISTS (SELECT 1 FROM \(q) AS t WHERE (\(keys.sourceList)) = (\(keys.indices.map { "u.k\($0)" }.joined(separator: ", "))))"
        case .insert, .upsert:
            return nil
        }
    }

    /// The journal in SQL.
    var qualifiedName: String { "pg_temp.\(quoteIdentifier(table))" }

    /// Makes the (empty) journal, its columns typed as the table's.
    var createSQL: String {
        var list = oldList + newList + afterList
        if case .upsert = kind { list += ["true AS is_new", "CAST('{}' AS int4[]) AS set_cols"] }
        return "CREATE TEMP TABLE \(quoteIdentifier(table)) AS SELECT \(list.joined(separator: ", ")) FROM \(target.qualifiedSQL) AS t WITH NO DATA"
    }

    /// For an upsert, the statement that journals, locked, the rows whose keys `keysSQL` (a
    /// subquery) gives and that the journal does not hold yet (a row the upsert inserted or
    /// updated before keeps its first entry): run before the UPDATE that changes them.
    func journalingOld(keys keysSQL: String) -> String {
        "INSERT INTO \(qualifiedName) SELECT \(oldList.joined(separator: ", ")), false, CAST('{}' AS int4[]) FROM \(target.qualifiedSQL) AS t "
            + "WHERE (\(keys.sourceList)) IN (\(keysSQL)) AND NOT \(holds("(\(keys.sourceList))")) FOR UPDATE OF t"
    }

    /// `EXISTS (SELECT 1 FROM journal AS u WHERE (u.k0, …) = <key>)`: the journal holds the row
    /// whose key is the tuple `key` (an upsert's UPDATE changes only rows it journaled, and its
    /// INSERT writes only keys it did not: a row another session inserts in between fails it).
    func holds(_ key: String) -> String {
        "EXISTS (SELECT 1 FROM \(qualifiedName) AS u WHERE (\(keys.indices.map { "u.k\($0)" }.joined(separator: ", "))) = \(key))"
    }

    /// For an upsert, the statement that records, in the journal rows of the keys `keysSQL` gives
    /// that it updated, which journaled columns it sets there (`set_cols`); nil when it sets none.
    func markingSet(_ columns: [String], keys keysSQL: String) -> String? {
        guard case .upsert(let journaled) = kind else { return nil }
        let indexes = columns.compactMap { journaled.firstIndex(of: $0) }
        guard !indexes.isEmpty else { return nil }
        let keyList = keys.indices.map { "u.k\($0)" }.joined(separator: ", ")
        return "UPDATE \(qualifiedName) AS u SET set_cols = u.set_cols || CAST('{\(indexes.map(String.init).joined(separator: ","))}' AS int4[]) "
            + "WHERE NOT u.is_new AND (\(keyList)) IN (\(keysSQL))"
    }

    /// `edit` as one statement that changes its rows and journals them as they were (an update
    /// locks them first).
    func fillSQL(_ edit: PostgresContext.CompiledEdit) -> String {
        let q = target.qualifiedSQL
        guard let sets = edit.sets else {
            // A delete's RETURNING gives the rows as they were deleted (no lock clause: that would
            // need the UPDATE privilege, which a delete does not).
            return "WITH gone AS (DELETE FROM \(q) AS t\(edit.whereSQL) RETURNING \(oldList.joined(separator: ", "))) INSERT INTO \(qualifiedName) SELECT * FROM gone"
        }
        let old = "SELECT \(oldList.joined(separator: ", ")) FROM \(q) AS t\(edit.whereSQL) FOR UPDATE OF t"
        let match = "(\(keys.sourceList)) = (\(keys.indices.map { "old.k\($0)" }.joined(separator: ", ")))"
        let returned = (keys.indices.map { "old.k\($0)" } + columns.indices.map { "old.c\($0)" }).joined(separator: ", ")
        let now = (newKeys ? ", " + keys.sourceList : "") + afterList.map { ", " + $0 }.joined()
        return "WITH old AS MATERIALIZED (\(old)), changed AS (UPDATE \(q) AS t SET \(sets) FROM old WHERE \(match) RETURNING \(returned)\(now)) INSERT INTO \(qualifiedName) SELECT * FROM changed"
    }

    /// The statements that put the journaled rows back, in order (one, but for an upsert: its
    /// updated rows' columns back, then its inserted rows deleted).
    var undoStatements: [String] {
        guard case .upsert(let journaled) = kind else { return [undoSQL] }
        let q = target.qualifiedSQL
        let match = "(\(keys.sourceList)) = (\(keys.indices.map { "u.k\($0)" }.joined(separator: ", ")))"
        // Each row gets back the columns the upsert set in it (another session's change to the
        // others stays); the SET names only columns some row had set.
        let sets = restoredColumns.compactMap { name in
            journaled.firstIndex(of: name).map { "\(quoteIdentifier(name)) = CASE WHEN \($0) = ANY (u.set_cols) THEN u.c\($0) ELSE t.\(quoteIdentifier(name)) END" }
        }
        var statements: [String] = []
        if !sets.isEmpty {
            statements.append("UPDATE \(q) AS t SET \(sets.joined(separator: ", ")) FROM \(qualifiedName) AS u WHERE NOT u.is_new AND \(match)")
        }
        statements.append("DELETE FROM \(q) AS t WHERE (\(keys.sourceList)) IN (SELECT \(keys.indices.map { "u.k\($0)" }.joined(separator: ", ")) FROM \(qualifiedName) AS u WHERE u.is_new)")
        return statements
    }

    /// The statement that puts the journaled rows back (not an upsert's: ``undoStatements``).
    private var undoSQL: String {
        let q = target.qualifiedSQL
        switch kind {
        case .update(let columns):
            let sets = columns.enumerated().map { "\(quoteIdentifier($1)) = u.c\($0)" }.joined(separator: ", ")
            let match = "(\(keys.sourceList)) = (\(keys.indices.map { "u.\(newKeys ? "n" : "k")\($0)" }.joined(separator: ", ")))"
            // Checked again as each row is locked (PostgreSQL re-evaluates an UPDATE's WHERE on
            // the row's latest version): a change committed after the changed-since rows left the
            // journal, and before this lock, is not overwritten either.
            let unchanged = keys.contains(where: { $0.source == "t.ctid" }) ? []
                : columns.enumerated().map { " AND CAST(t.\(quoteIdentifier($1)) AS text) IS NOT DISTINCT FROM CAST(u.a\($0) AS text)" }
            return "UPDATE \(q) AS t SET \(sets) FROM \(qualifiedName) AS u WHERE \(match)\(unchanged.joined())"
        case .delete(let columns):
            let names = columns.map(quoteIdentifier).joined(separator: ", ")
            let values = columns.indices.map { "u.c\($0)" }.joined(separator: ", ")
            // Identity columns GENERATED ALWAYS take their old values back too.
            return "INSERT INTO \(q) (\(names)) OVERRIDING SYSTEM VALUE SELECT \(values) FROM \(qualifiedName) AS u"
        case .insert, .upsert:
            return "DELETE FROM \(q) AS t WHERE (\(keys.sourceList)) IN (SELECT \(keys.indices.map { "u.k\($0)" }.joined(separator: ", ")) FROM \(qualifiedName) AS u)"
        }
    }

    /// An insert statement (`INSERT … AS t …`, without `RETURNING`) that also journals its rows'
    /// keys, answering `true` (each row is new) and, with `keys`, the keys as ``PostgresIDColumn/readSource`` reads them.
    func journaling(insert sql: String, keys readKeys: Bool) -> String {
        let returned = keys.enumerated().map { "\($1.source) AS k\($0)" }.joined(separator: ", ")
        let reads = readKeys ? ", " + oldKeys.map { $0.read("ins") }.joined(separator: ", ") : ""
        let journalKeys = keys.indices.map { "k\($0)" }.joined(separator: ", ")
        // An upsert's journal names its columns: the old values stay NULL for a new row.
        let into: String
        if case .upsert = kind { into = "\(qualifiedName) (\(journalKeys), is_new) SELECT \(journalKeys), true" } else { into = "\(qualifiedName) SELECT \(journalKeys)" }
        return "WITH ins AS (\(sql) RETURNING true AS is_new, \(returned)), journaled AS (INSERT INTO \(into) FROM ins) SELECT ins.is_new\(reads) FROM ins"
    }
}
