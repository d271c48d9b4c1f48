import Foundation
import GRDB

extension ManagedObjectContext {
    /// Compiles the WHERE clause that selects the rows of `request` for an UPDATE or DELETE on `entity`.
    private func batchWhere(_ request: FetchRequest, entity: Entity) throws -> (sql: String, arguments: [SQLValue]) {
        let compiled = try CompiledFetch(request: request, store: store)
        if request.predicate?.node.holdsSQL == true {
            // A SQL condition's names are SQLite's to check: prepared (never run) before the
            // write begins, so that a name it does not know leaves the file as it was.
            do {
                try withDatabase { db in _ = try db.makeStatement(sql: "SELECT 1\(compiled.fromWhere)") }
            } catch let error as BatchStoreError {
                throw BatchStoreError(.invalidQuery, "the SQL condition: \(error.message)")
            }
        }
        let keys = qualified(entity.keyColumns)
        let needsSubquery = !compiled.builder.joins.isEmpty || !compiled.limitClause.isEmpty || !request.sortDescriptors.isEmpty
        if !needsSubquery {
            return (compiled.whereClause, compiled.arguments)
        }
        let keyList = sqlTuple(keys)
        let inner = "SELECT \(keys.joined(separator: ", "))\(compiled.fromWhereOrder)\(compiled.limitClause)"
        return (" WHERE \(keyList) IN (\(inner))", compiled.allArguments)
    }

    private func returning(_ entity: Entity, _ type: BatchResultType) -> String {
        type == .objectIDs ? entity.returningKeysSQL : ""
    }

    private func collectIDs(_ statement: Statement, entity: Entity, arguments: [SQLValue]) throws -> [ObjectID] {
        var ids: [ObjectID] = []
        let cursor = try Row.fetchCursor(statement, arguments: arguments.statementArguments)
        while let row = try cursor.next() { ids.append(ObjectID(entity: entity, keyRow: row)) }
        return ids
    }

    /// Adds a row that broke the constraint, and how many would, to a failed update's message
    /// (one rolled-back validation run; only on this error path).
    func explainedConstraintFailure(_ error: BatchStoreError, _ request: BatchUpdateRequest) -> BatchStoreError {
        guard let report = try? validate(request), let example = report.example else { return error }
        return BatchStoreError(.constraint, "\(error.message); nothing was written. \(grouped(report.rowsFailing)) of \(grouped(report.rowsMatched)) \(report.rowsMatched == 1 ? "row" : "rows") would fail, e.g. \(example.id): \(example.reason)")
    }

    /// A compiled batch update, in parts, so variants (OR IGNORE, one row, RETURNING) are built
    /// from pieces, never by editing SQL text.
    struct CompiledUpdate {
        let entity: Entity
        /// `"c" = <expr>, …`
        let setClause: String
        let setArguments: [SQLValue]
        /// Each assigned column's new value as SQL over alias `t`, in ``columns``' order (their
        /// `?` in order, as ``setClause`` has them).
        let expressions: [String]
        /// ` WHERE …` or empty.
        let whereClause: String
        let whereArguments: [SQLValue]
        let match: FetchRequest
        let columns: [String]

        /// `UPDATE OR ABORT|IGNORE main."T" AS t SET … WHERE … [AND extra] [RETURNING keys]`. OR ABORT
        /// whatever the table declares: a column's `UNIQUE ON CONFLICT REPLACE` would otherwise
        /// delete the other row holding the value, a row nobody confirmed.
        func sql(orIgnore: Bool = false, extraCondition: String? = nil, returningKeys: Bool = false) -> String {
            var s = "UPDATE \(orIgnore ? "OR IGNORE " : "OR ABORT ")main.\(quoteIdentifier(entity.name)) AS t SET \(setClause)"
            if let extraCondition {
                s += whereClause.isEmpty ? " WHERE \(extraCondition)" : "\(whereClause) AND \(extraCondition)"
            } else {
                s += whereClause
            }
            if returningKeys { s += entity.returningKeysSQL }
            return s
        }

        var arguments: [SQLValue] { setArguments + whereArguments }

        /// The update restricted to the keys in `temp.<table>` (a ``StoredChanges`` table), which
        /// already holds exactly the rows the WHERE clause matched: takes ``setArguments`` only.
        func sql(keyedBy table: String) -> String {
            "UPDATE OR ABORT main.\(quoteIdentifier(entity.name)) AS t SET \(setClause) WHERE \(ManagedObjectContext.keyedWhere(entity, table))"
        }
    }

    /// `whereSQL` (` WHERE …` or empty) narrowed to the rows that also meet `condition` (SQL over
    /// alias `t` without arguments, such as a result's membership): ` WHERE <condition> AND (…)`.
    static func restricting(_ whereSQL: String, to condition: String?) -> String {
        guard let condition else { return whereSQL }
        guard whereSQL.hasPrefix(" WHERE ") else {
            precondition(whereSQL.isEmpty, "a batch WHERE clause starts with WHERE")
            return " WHERE \(condition)"
        }
        return " WHERE \(condition) AND (\(whereSQL.dropFirst(" WHERE ".count)))"
    }

    /// `SELECT count(*) FROM main."T" AS t <whereSQL>`: the rows a batch statement with the same
    /// WHERE clause changes.
    func countRows(_ entity: Entity, whereSQL: String, arguments: [SQLValue]) throws -> Int {
        try withDatabase { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(quoteIdentifier(entity.name)) AS t\(whereSQL)", arguments: arguments.statementArguments) ?? 0
        }
    }

    func compileUpdate(_ request: BatchUpdateRequest, within: String? = nil) throws -> CompiledUpdate {
        let entity = try store.entity(named: request.entityName)
        try checkWritable(entity)
        let builder = QueryBuilder(entity: entity, schema: store.schema, alias: "t", allowsJoins: false)
        let (columns, sets, expressions) = try request.compiledAssignments(of: entity.name, columns: entity.attributes, named: { entity.attribute(named: $0) }) {
            try builder.compile($1.node)
        }
        let match = FetchRequest(entityName: entity.name, predicate: request.predicate)
        let (unrestricted, whereArgs) = try batchWhere(match, entity: entity)
        let whereSQL = Self.restricting(unrestricted, to: within)
        return CompiledUpdate(entity: entity, setClause: sets, setArguments: builder.arguments,
                              expressions: expressions, whereClause: whereSQL, whereArguments: whereArgs, match: match, columns: columns)
    }

    /// Runs a batch update in one transaction: all rows or none.
    /// - Throws: `.constraint` (naming SQLite's rule) and others; then nothing was written.
    /// - Complexity: one UPDATE statement; memory O(1) unless `.objectIDs` is asked for.
    ///
    /// With `undoable`, the assigned columns' before-image of every matching row is journaled in a
    /// temp table in the same transaction, for ``undo()`` (up to ``undoLimit`` rows).
    public func execute(_ request: BatchUpdateRequest, undoable: Bool = false) throws -> BatchResult {
        try execute(request, undoable: undoable, within: nil)
    }

    /// The update, narrowed to the rows that meet `within` (SQL over alias `t`, no arguments).
    func execute(_ request: BatchUpdateRequest, undoable: Bool, within: String?) throws -> BatchResult {
        let update = try compileUpdate(request, within: within)
        let entity = update.entity, columns = update.columns
        let sql = update.sql(returningKeys: request.resultType == .objectIDs)
        let capture = ChangeCapture(kind: .updated, whereSQL: update.whereClause, arguments: update.whereArguments) { table in
            (update.sql(keyedBy: table), update.setArguments)
        }
        do {
            guard undoable else { return try runBatchStatement(sql: sql, arguments: update.arguments, entity: entity, resultType: request.resultType, capture: capture) }
        } catch let error as BatchStoreError where error.code == .constraint {
            throw explainedConstraintFailure(error, request)
        }
        try checkUndoable(entity, rows: try countRows(entity, whereSQL: update.whereClause, arguments: update.whereArguments), deleting: false, assigning: columns)
        var journal = ""
        let result = try runBatchStatement(sql: sql, arguments: update.arguments, entity: entity, resultType: request.resultType, capture: capture, before: { db in
            journal = try self.recordJournal(db, entity: entity, columns: columns, whereSQL: update.whereClause, arguments: update.whereArguments, afterImage: true)
        }, after: { db in
            // What the update wrote, for undo to tell the rows another program changed since.
            try self.recordAfterImage(db, entity: entity, columns: columns, journal: journal)
        })
        undoStack.append(UndoEntry(entity: entity, kind: .update(columns: columns), table: journal))
        return result
    }

    /// Runs a batch delete in one transaction: all rows or none. The store's own foreign-key actions
    /// (ON DELETE CASCADE, SET NULL, RESTRICT) apply as SQLite defines them.
    /// - Complexity: one DELETE statement (object IDs go through a temp table).
    ///
    /// With `undoable`, the deleted rows are journaled whole in a temp table in the same transaction,
    /// for ``undo()``; refused when other tables' foreign-key actions would change too.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool = false) throws -> BatchResult {
        try execute(request, undoable: undoable, within: nil)
    }

    /// The rows a batch delete touches: its entity, its ` WHERE …` over alias `t` (narrowed to
    /// `within`), and the temp table of its object IDs, which the caller drops. Nil for no IDs.
    func deleteTarget(_ request: BatchDeleteRequest, within: String?) throws -> (entity: Entity, whereSQL: String, arguments: [SQLValue], idTable: String?)? {
        if let ids = request.objectIDs {
            guard let entity = ids.first?.entity else { return nil }
            try checkWritable(entity)
            guard ids.allSatisfy({ $0.entity === entity && $0.isAddressable }) else {
                throw BatchStoreError(.invalidArgument, "a batch delete by object IDs takes stored rows of one entity")
            }
            let table = makeTempTableName("bs_del")
            let keys = entity.keyColumns
            let cols = (0..<keys.count).map { "k\($0)" }
            try withDatabase { db in
                try connection.createTempTable(db, named: table, "(\(cols.joined(separator: ", ")))")
                let insert = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(table)) VALUES (\(cols.map { _ in "?" }.joined(separator: ", ")))")
                for id in ids { try insert.bound(id.keyValues).execute() }
            }
            let keyList = sqlTuple(qualified(keys))
            let whereSQL = Self.restricting(" WHERE \(keyList) IN (SELECT \(cols.joined(separator: ", ")) FROM temp.\(quoteIdentifier(table)))", to: within)
            return (entity, whereSQL, [], table)
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        let entity = try store.entity(named: fetch.entityName)
        try checkWritable(entity)
        let (whereSQL, arguments) = try batchWhere(fetch, entity: entity)
        return (entity, Self.restricting(whereSQL, to: within), arguments, nil)
    }

    /// How many rows `request` would delete (with `within`, as ``deleteTarget(_:within:)``); writes nothing.
    func count(forDelete request: BatchDeleteRequest, within: String?) throws -> Int {
        guard let target = try deleteTarget(request, within: within) else { return 0 }
        defer { if let table = target.idTable { dropTempTable(table) } }
        return try countRows(target.entity, whereSQL: target.whereSQL, arguments: target.arguments)
    }

    /// The delete, narrowed to the rows that meet `within` (SQL over alias `t`, no arguments).
    func execute(_ request: BatchDeleteRequest, undoable: Bool, within: String?) throws -> BatchResult {
        guard let target = try deleteTarget(request, within: within) else {
            return BatchResult(request.resultType, count: 0)
        }
        let entity = target.entity, whereSQL = target.whereSQL, arguments = target.arguments, cleanup = target.idTable
        defer { if let cleanup { dropTempTable(cleanup) } }
        let sql = "DELETE FROM main.\(quoteIdentifier(entity.name)) AS t\(whereSQL)\(returning(entity, request.resultType))"
        let rules: ((Database) throws -> Void)? = request.appliesDeleteRules
            ? { [whereSQL, arguments] db in _ = try self.applyDeleteRules(db, entity: entity, whereSQL: whereSQL, arguments: arguments) }
            : nil
        if request.appliesDeleteRules && undoable {
            throw BatchStoreError(.undoRefused, "a delete that applies delete rules cannot be undone (the rows it changes in other tables are not journaled); run it without undo")
        }
        let capture = ChangeCapture(kind: .deleted, whereSQL: whereSQL, arguments: arguments) { table in
            ("DELETE FROM main.\(quoteIdentifier(entity.name)) AS t WHERE \(ManagedObjectContext.keyedWhere(entity, table))", [])
        }
        guard undoable else { return try runBatchStatement(sql: sql, arguments: arguments, entity: entity, resultType: request.resultType, capture: capture, largerCache: true, before: rules) }
        try checkUndoable(entity, rows: try countRows(entity, whereSQL: whereSQL, arguments: arguments), deleting: true)
        let columns = entity.attributes.filter { !$0.isGenerated }.map(\.name)
        var journal = ""
        let result = try runBatchStatement(sql: sql, arguments: arguments, entity: entity, resultType: request.resultType, capture: capture, largerCache: true) { db in
            journal = try self.recordJournal(db, entity: entity, columns: columns, whereSQL: whereSQL, arguments: arguments)
        }
        undoStack.append(UndoEntry(entity: entity, kind: .delete(columns: columns), table: journal))
        return result
    }

    /// How a `.changes` result captures its keys: the rows `whereSQL` matches go into a
    /// ``StoredChanges`` table first, then `keyed(table)` changes exactly those rows.
    struct ChangeCapture {
        let kind: StoredChanges.Kind
        let whereSQL: String
        let arguments: [SQLValue]
        let keyed: (String) -> (sql: String, arguments: [SQLValue])
    }

    /// `<key> IN (SELECT k0 FROM temp.<table>)` for `entity` under alias `t`.
    static func keyedWhere(_ entity: Entity, _ table: String) -> String {
        let cols = (0..<entity.keyColumns.count).map { "k\($0)" }.joined(separator: ", ")
        return "\(sqlTuple(qualified(entity.keyColumns))) IN (SELECT \(cols) FROM temp.\(quoteIdentifier(table)))"
    }

    /// Runs one batch statement in one IMMEDIATE transaction; `before` runs first in the same
    /// transaction (the undo journal), so both commit or neither does. For `.changes`, the matching
    /// keys are captured into a temp table before anything else, and the statement from
    /// `capture.keyed` runs instead of `sql`.
    private func runBatchStatement(sql: String, arguments: [SQLValue], entity: Entity, resultType: BatchResultType,
                                   capture: ChangeCapture? = nil, largerCache: Bool = false, before: ((Database) throws -> Void)? = nil,
                                   after: ((Database) throws -> Void)? = nil) throws -> BatchResult {
        let storedTable = resultType == .changes && capture != nil ? makeTempTableName("bs_changes") : nil
        let queue = connection.queue
        return try withDatabase { db in
            var result = BatchResult(succeeded: false, count: nil, objectIDs: nil)
            try self.inBatchWriteTransaction(db, largerCache: largerCache) {
                if let storedTable, let capture {
                    let keys = qualified(entity.keyColumns).joined(separator: ", ")
                    try connection.createTempTable(db, named: storedTable, StoredChanges.keyTableDefinition(entity))
                    // In key order: the table's primary key is the key, so rows append instead of
                    // landing at random (which made a 1M-row capture 7x slower), and the change
                    // below then visits rows in key order too.
                    try db.execute(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(storedTable)) SELECT \(keys) FROM main.\(quoteIdentifier(entity.name)) AS t\(capture.whereSQL) ORDER BY \(keys)",
                                   arguments: capture.arguments.statementArguments)
                    let rows = db.changesCount
                    try before?(db)
                    let (keyedSQL, keyedArguments) = capture.keyed(storedTable)
                    try db.execute(sql: keyedSQL, arguments: keyedArguments.statementArguments)
                    let count = db.changesCount
                    try after?(db)
                    let stored = StoredChanges(entity: entity, kind: capture.kind, count: rows, queue: queue, table: storedTable)
                    result = BatchResult(resultType, count: count, changes: ChangeSet(stored: [stored]))
                    return .commit
                }
                try before?(db)
                let statement = try db.makeStatement(sql: sql)
                if resultType == .objectIDs {
                    let ids = try collectIDs(statement, entity: entity, arguments: arguments)
                    result = BatchResult(resultType, count: ids.count, ids: ids, changes: ChangeSet(capture?.kind ?? .updated, ids))
                } else {
                    try statement.execute(arguments: arguments.statementArguments)
                    result = BatchResult(resultType, count: db.changesCount)
                }
                try after?(db)
                return .commit
            }
            return result
        }
    }
}

extension ManagedObjectContext {
    /// How many rows `request` would delete now, after the refusals the delete makes (a read-only
    /// file, a view); writes nothing. For object IDs, how many of them name a row now.
    public func countDelete(_ request: BatchDeleteRequest) throws -> Int {
        if let ids = request.objectIDs {
            guard let first = ids.first else { return 0 }
            try checkWritable(try store.entity(named: first.entity.name))
            return ids.filter { (try? existingObject(with: $0)) != nil }.count
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        try checkWritable(try store.entity(named: fetch.entityName))
        return try count(for: fetch)
    }

    /// What `update` would do (``UpdatePreview``): one pass counting the rows and the non-NULL
    /// values each assignment would turn into NULL, and the first `sample` rows by key with
    /// their values now and the new ones. Writes nothing.
    func previewUpdate(_ update: CompiledUpdate, sample: Int) throws -> UpdatePreview {
        try withDatabase { db in try previewUpdate(update, sample: sample, db) }
    }

    /// ``previewUpdate(_:sample:)`` on `db` (the context's connection, already held).
    func previewUpdate(_ update: CompiledUpdate, sample: Int, _ db: Database) throws -> UpdatePreview {
        let table = "main.\(quoteIdentifier(update.entity.name)) AS t"
        let old = update.columns.map { "t.\(quoteIdentifier($0))" }
        // The expressions' `?` come before the WHERE clause's, as in the UPDATE.
        let arguments = (update.setArguments + update.whereArguments).statementArguments
        let nulling = zip(old, update.expressions).map { ", total(\($0) IS NOT NULL AND (\($1)) IS NULL)" }.joined()
        let entity = update.entity
        let keys = entity.keyColumns
        // Rows are named by the key the user knows: the declared primary key (an INTEGER PRIMARY
        // KEY is the rowid; a text key of a rowid table is not, but names the row all the same),
        // the rowid only for a table that declares none.
        let keyNames = entity.primaryKey.isEmpty ? keys : entity.primaryKey
        do {
            let counts = try Row.fetchOne(db, sql: "SELECT count(*)\(nulling) FROM \(table)\(update.whereClause)", arguments: arguments)
            let rows: Int = counts?[0] ?? 0
            let nulled = update.columns.enumerated().map { (column: $1, count: Int((counts?[$0 + 1] as Double?) ?? 0)) }
            var preview = UpdatePreview(rows: rows, nulled: nulled, sample: [])
            guard sample > 0, rows > 0 else { return preview }
            let pairs = zip(old, update.expressions).map { "\($0), (\($1))" }.joined(separator: ", ")
            let keyList = keys.map { "t.\(quoteIdentifier($0))" }
            let shownList = keyNames.map { "t.\(quoteIdentifier($0))" }
            let sql = "SELECT \((shownList + [pairs]).joined(separator: ", ")) FROM \(table)\(update.whereClause) ORDER BY \(keyList.joined(separator: ", ")) LIMIT \(sample)"
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try cursor.next() {
                let key = keyNames.indices.map { SQLValue(row: row, at: $0) }
                let changes = update.columns.enumerated().map { i, column in
                    UpdatePreview.Change(column: column, old: SQLValue(row: row, at: keyNames.count + 2 * i), new: SQLValue(row: row, at: keyNames.count + 2 * i + 1))
                }
                preview.sample.append(UpdatePreview.SampleRow(keyNames: keyNames, key: key, changes: changes))
            }
            try applyAffinity(&preview, entity: entity, columns: update.columns, db)
            return preview
        }
    }

    /// The sample's new values as the columns will store them: through a temp table whose
    /// columns have the same declared types, so SQLite's affinity turns `"5"` into 5 in an
    /// INTEGER column and 7 into '7' in a TEXT one, as the UPDATE will.
    private func applyAffinity(_ preview: inout UpdatePreview, entity: Entity, columns: [String], _ db: Database) throws {
        guard !preview.sample.isEmpty else { return }
        let name = connection.makeTempTableName("bs_preview")
        let definitions = columns.enumerated().map { i, column in
            // Declared as the affinity itself (BLOB: none), never the file's own type text.
            "c\(i) \(entity.attribute(named: column)?.affinity ?? "BLOB")"
        }
        try connection.createTempTable(db, named: name, "(\(definitions.joined(separator: ", ")))")
        defer { try? connection.dropTempTable(db, named: name) }
        let insert = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(name)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))")
        for row in preview.sample { try insert.execute(arguments: row.changes.map(\.new).statementArguments) }
        let stored = try Row.fetchAll(db, sql: "SELECT * FROM temp.\(quoteIdentifier(name)) ORDER BY rowid")
        for (i, row) in stored.enumerated() where i < preview.sample.count {
            for j in preview.sample[i].changes.indices { preview.sample[i].changes[j].new = SQLValue(row: row, at: j) }
        }
    }

    /// How many rows `request` would update, after checking its assignments compile; writes nothing.
    public func count(forUpdate request: BatchUpdateRequest) throws -> Int {
        try count(for: try compileUpdate(request).match)
    }
}
