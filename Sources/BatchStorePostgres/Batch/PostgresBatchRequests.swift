import BatchStore
import Foundation

/// Batch update and delete over PostgreSQL: the same requests as on a SQLite store, compiled to
/// PostgreSQL's dialect and run in one transaction each, so a request changes every matching row
/// or none (a constraint, a bad value, a statement timeout, a dropped connection, a cancel: the
/// server rolls the whole transaction back).
///
/// - `UPDATE "s"."T" AS t SET "c" = <expr>, … WHERE <predicate> [RETURNING <key>]`; a predicate
///   through a to-one relationship, or a delete's sort and limit, become
///   `WHERE (<key>) IN (SELECT <key> FROM … JOIN … WHERE … ORDER BY … LIMIT …)`.
/// - Through a result (`BatchFaultingCollection/execute(_:objectIDs:values:undoable:)`), the
///   statement runs in the result's own session and adds its membership,
///   `AND (t."id") IN (SELECT ids.key FROM pg_temp.bs_ids_N AS ids)`: rows inserted since the
///   fetch, or outside its filter, are never touched.
/// - Each new value is cast to its column's type: text parses as the type does (a bad one is an
///   error naming it); a number with a fraction into an integer column is an error, where SQLite
///   would keep the real in the integer column and PostgreSQL's own cast would round it.
/// - A delete's foreign-key actions (ON DELETE CASCADE, SET NULL, RESTRICT) are the server's, and
///   the server always applies them: ``BatchDeleteRequest/appliesDeleteRules`` asks for nothing more.
/// - Result types: `.statusOnly`, `.count`, `.objectIDs` (`RETURNING` the key, in memory);
///   `.changes` keeps the changed keys in a temp table of the session (a ``StoredChanges``: a
///   merge asks it only about the objects open results hold; ``execute(_:changedIDs:)`` streams
///   them).
/// - Undo (`undoable: true`): the rows' before-image goes into a journal, a temp table of the
///   same session, filled by the edit's own statement, so it holds exactly the rows changed, as
///   they were: an update locks its rows first (`WITH old AS MATERIALIZED (SELECT <key>,
///   <columns> … FOR UPDATE OF t)`), changes them (`UPDATE … FROM old`) and journals
///   `RETURNING old.*`; a delete journals its own `RETURNING`. See `PostgresUndo.swift`.
extension PostgresContext {
    /// A compiled batch statement: its table, its choice of rows (` WHERE …` under alias `t`), its
    /// assignments for an update, its arguments.
    struct CompiledEdit {
        let table: PostgresTable
        let entity: Entity
        /// `"c" = <expr>, …` for an update; nil for a delete.
        let sets: String?
        /// The columns an update assigns.
        let assigned: [String]
        /// Each assigned column's new value as SQL over alias `t` (``assigned``' order).
        var expressions: [String] = []
        var whereSQL: String
        var arguments: [SQLValue]

        /// The statement, without `RETURNING`.
        var sql: String {
            if let sets { return "UPDATE \(table.qualifiedSQL) AS t SET \(sets)\(whereSQL)" }
            return "DELETE FROM \(table.qualifiedSQL) AS t\(whereSQL)"
        }
        /// How many rows ``sql`` would change now. The parameters only the assignments use are
        /// still given a type (`CAST($n AS text)` in an unused CTE): a NULL bound for `c = nil` has
        /// none of its own, and the server refuses a parameter whose type it cannot tell.
        var countSQL: String {
            let inWhere = Set(whereSQL.matches(of: /\$(\d+)/).compactMap { Int($0.1) })
            let unused = arguments.indices.map { $0 + 1 }.filter { !inWhere.contains($0) }
            let typed = unused.isEmpty ? "" : "WITH bs_assigned AS (SELECT \(unused.map { "CAST($\($0) AS text)" }.joined(separator: ", "))) "
            return "\(typed)SELECT count(*) FROM \(table.qualifiedSQL) AS t\(whereSQL)"
        }
        /// True when the SQL calls `pg_temp` functions the session must have.
        var needsTextFunctions: Bool { PostgresTextFunctions.areUsed(in: sql) }
        var needsGuardFunctions: Bool { sql.contains("pg_temp.bs_integral") || sql.contains("pg_temp.bs_boolean") }

        /// The same edit on the rows `condition` (over alias `t`, no placeholders) also selects.
        func narrowed(_ condition: String?) -> CompiledEdit {
            guard let condition else { return self }
            var edit = self
            edit.whereSQL = whereSQL.isEmpty ? " WHERE \(condition)" : "\(whereSQL) AND \(condition)"
            return edit
        }

        /// The same edit on the rows of `ids` only (their keys bound after the edit's arguments).
        func narrowed(to ids: [ObjectID]?) throws -> CompiledEdit {
            guard let ids else { return self }
            let keys = PostgresIDColumn.of(table)
            guard ids.allSatisfy({ $0.entity.name == table.name && $0.isAddressable && $0.keyValues.count == keys.count }) else {
                throw BatchStoreError(.invalidArgument, "an object ID given is not a stored row of \(table.name); nothing was changed")
            }
            guard !ids.isEmpty else { return narrowed("false") }
            var edit = self
            let tuples = ids.map { id in
                "(" + zip(keys, id.keyValues).map { key, value in
                    edit.arguments.append(value)
                    return key.cast("$\(edit.arguments.count)")
                }.joined(separator: ", ") + ")"
            }
            let condition = "(\(keys.sourceList)) IN (VALUES \(tuples.joined(separator: ", ")))"
            edit.whereSQL = whereSQL.isEmpty ? " WHERE \(condition)" : "\(whereSQL) AND \(condition)"
            return edit
        }
    }

    /// Where an edit runs: a session and what keeps it open (the context's own session, or a
    /// result's, where its ID table is), how to give the session the `pg_temp` text functions a
    /// statement calls, and a condition every row changed must also meet (a result's membership).
    struct EditSite {
        let lease: PostgresSessionLease
        let prepare: (String) throws -> Void
        var within: String?
        var session: PostgresSession { lease.session }
    }

    /// The context's own session as an edit's site.
    func ownSite() throws -> EditSite {
        let lease = try sessionLease()
        return EditSite(lease: lease, prepare: { [unowned self] sql in
            try self.installTextFunctions(in: lease.session, if: PostgresTextFunctions.areUsed(in: sql))
        }, within: nil)
    }

    /// The table `name`, checked for the edit: not a view, keyed, and allowed to the role.
    /// The table an edit of `name` may change, after the refusals it would meet: a view, no
    /// privilege; with `needsKey` (an edit that names rows by key: undoable, marked rows, IDs
    /// returned), a table without a primary key too. A predicate statement alone needs no key.
    func editableTable(_ name: String, verb: String, needsKey: Bool = true) throws -> PostgresTable {
        let table = try store.table(named: name)
        if needsKey, let reason = table.readOnlyReason { throw BatchStoreError(.readOnly, "cannot \(verb) rows of \(table.name): \(reason)") }
        if !needsKey, let reason = table.unkeyedEditRefusal { throw BatchStoreError(.readOnly, "cannot \(verb) rows of \(table.name): \(reason)") }
        let allowed = verb == "update" ? table.canUpdate : table.canDelete
        guard allowed else { throw BatchStoreError(.permissionDenied, "the role may not \(verb) rows of \(table.name)") }
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name), so it cannot choose rows of it to \(verb)") }
        return table
    }

    /// ` WHERE …` (or nothing) choosing the rows of `request` under alias `t`, with the builder's
    /// arguments; a join, a sort or a limit move the choice into a key subquery.
    func editWhere(_ request: FetchRequest, table: PostgresTable, builder: PostgresQueryBuilder) throws -> String {
        try request.checkBounds()
        let condition = try request.predicate.map { try builder.compile($0.node) }
        let limited = request.fetchLimit > 0 || request.fetchOffset > 0
        guard !builder.joins.isEmpty || limited || !request.sortDescriptors.isEmpty else {
            return condition.map { " WHERE \($0)" } ?? ""
        }
        let keys = PostgresIDColumn.of(table)
        var order = try request.sortDescriptors.map { try builder.order($0) }
        order += keys.map(\.orderSQL)
        var inner = "SELECT \(keys.sourceList) FROM \(builder.fromClause)"
        if let condition { inner += " WHERE \(condition)" }
        if limited || !request.sortDescriptors.isEmpty {
            inner += " ORDER BY \(order.joined(separator: ", "))"
            if request.fetchLimit > 0 { inner += " LIMIT \(request.fetchLimit)" }
            if request.fetchOffset > 0 { inner += " OFFSET \(request.fetchOffset)" }
        }
        // The subquery's own `t` shadows the statement's inside it.
        return " WHERE (\(keys.sourceList)) IN (\(inner))"
    }

    /// `RETURNING` the key columns, read as the IDs of results read them.
    static func returningKeys(_ table: PostgresTable) -> String {
        " RETURNING " + PostgresIDColumn.of(table).map(\.readSource).joined(separator: ", ")
    }

    func compileUpdate(_ request: BatchUpdateRequest, needsKey: Bool = true) throws -> CompiledEdit {
        let table = try editableTable(request.entityName, verb: "update", needsKey: needsKey)
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let (assigned, sets, expressions) = try request.compiledAssignments(of: table.name, columns: table.columns, named: { table.column(named: $0) }) {
            try builder.assignment(try builder.operand($1.node), to: $0, in: table)
        }
        // A new value is read from the row itself: a key path through a relationship would need
        // a join the UPDATE does not have (SQLite refuses it the same way).
        if !builder.joins.isEmpty {
            throw BatchStoreError(.invalidQuery, "an assignment reads the row's own columns: a key path that crosses a relationship is not allowed here")
        }
        let whereSQL = try editWhere(FetchRequest(entityName: table.name, predicate: request.predicate), table: table, builder: builder)
        return CompiledEdit(table: table, entity: try store.entity(named: table.name), sets: sets, assigned: assigned,
                            expressions: expressions, whereSQL: whereSQL, arguments: builder.arguments)
    }

    /// The delete's statements: one for a fetch request; for object IDs, one per 1,000 IDs (keys
    /// bound as `VALUES` lists), all in the same transaction.
    func compileDelete(_ request: BatchDeleteRequest, needsKey: Bool = true) throws -> [CompiledEdit] {
        if let ids = request.objectIDs {
            guard let first = ids.first else { return [] }
            let table = try editableTable(first.entity.name, verb: "delete")
            guard ids.allSatisfy({ $0.entity.name == table.name && $0.isAddressable }) else {
                throw BatchStoreError(.invalidArgument, "a batch delete by object IDs takes stored rows of one entity")
            }
            let entity = try store.entity(named: table.name)
            let keys = PostgresIDColumn.of(table)
            guard ids.allSatisfy({ $0.keyValues.count == keys.count }) else {
                throw BatchStoreError(.invalidArgument, "an object ID does not hold \(table.name)'s key (\(keys.count) \(keys.count == 1 ? "column" : "columns"))")
            }
            let all = CompiledEdit(table: table, entity: entity, sets: nil, assigned: [], whereSQL: "", arguments: [])
            return try ids.chunks(of: 1_000).map { try all.narrowed(to: Array($0)) }
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        // A sort or a limit chooses rows by key (editWhere's subquery): that needs one.
        let choosesByKey = fetch.fetchLimit > 0 || fetch.fetchOffset > 0 || !fetch.sortDescriptors.isEmpty
        let table = try editableTable(fetch.entityName, verb: "delete", needsKey: needsKey || choosesByKey)
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let whereSQL = try editWhere(fetch, table: table, builder: builder)
        return [CompiledEdit(table: table, entity: try store.entity(named: table.name), sets: nil, assigned: [], whereSQL: whereSQL, arguments: builder.arguments)]
    }

    /// Runs a batch update as one statement in one transaction: all rows or none. With
    /// `undoable`, the rows' old values of the assigned columns are journaled (see ``undo()``).
    /// - Throws: `.constraint` naming the server's rule, `.readOnly` for a view or a table without
    ///   a primary key, `.permissionDenied`, `.tooBigToUndo` (undoable, more rows than
    ///   ``undoLimit``); then nothing was written.
    public func execute(_ request: BatchUpdateRequest, undoable: Bool) throws -> BatchResult {
        try execute(request, objectIDs: nil, undoable: undoable, at: try ownSite(), needsKey: Self.needsKey(request.resultType, undoable: undoable))
    }

    /// True when an edit with this result type names its rows by key (undo's journal, IDs or
    /// changed keys returned); a count or a status needs none, so a table without a key takes it.
    static func needsKey(_ resultType: BatchResultType, undoable: Bool) -> Bool {
        undoable || resultType == .objectIDs || resultType == .changes
    }

    /// Runs a batch delete as one transaction: all rows or none; the server's foreign-key actions
    /// apply (see the extension's notes). With `undoable`, the deleted rows are journaled whole.
    /// - Throws: `.undoRefused` (undoable) when another table's foreign key would cascade or set
    ///   NULL: undo could not bring those back; then nothing was written.
    public func execute(_ request: BatchDeleteRequest, undoable: Bool) throws -> BatchResult {
        try execute(request, undoable: undoable, at: try ownSite(), needsKey: Self.needsKey(request.resultType, undoable: undoable))
    }

    /// How many rows `request` would delete now, after every refusal the delete itself would make
    /// (a view, a table without a key where one is needed, no DELETE privilege); writes nothing.
    public func countDelete(_ request: BatchDeleteRequest) throws -> Int {
        let site = try ownSite()
        return try count(try compileDelete(request, needsKey: Self.needsKey(request.resultType, undoable: false)), at: site)
    }

    /// The update's statements on the rows `site` allows: one, or with `objectIDs`, one per
    /// 1,000 IDs (PostgreSQL takes at most 65,535 parameters a statement), all in one transaction.
    func compileUpdate(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, at site: EditSite, needsKey: Bool = true) throws -> [CompiledEdit] {
        let all = try compileUpdate(request, needsKey: needsKey || objectIDs != nil || site.within != nil)
        guard let objectIDs else { return [all.narrowed(site.within)] }
        try Self.refuseKeyAddressing(all.table, site.session)
        guard !objectIDs.isEmpty else { return [try all.narrowed(to: []).narrowed(site.within)] }
        return try objectIDs.chunks(of: 1_000).map { try all.narrowed(to: Array($0)).narrowed(site.within) }
    }

    /// The delete's statements on the rows `site` allows.
    func compileDelete(_ request: BatchDeleteRequest, at site: EditSite, needsKey: Bool = true) throws -> [CompiledEdit] {
        let edits = try compileDelete(request, needsKey: needsKey || site.within != nil)
        if request.objectIDs != nil, let first = edits.first { try Self.refuseKeyAddressing(first.table, site.session) }
        return edits.map { $0.narrowed(site.within) }
    }

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, undoable: Bool, at site: EditSite, needsKey: Bool = true) throws -> BatchResult {
        try run(try compileUpdate(request, objectIDs: objectIDs, at: site, needsKey: needsKey), resultType: request.resultType, kind: .updated, undoable: undoable, at: site)
    }

    func execute(_ request: BatchDeleteRequest, undoable: Bool, at site: EditSite, needsKey: Bool = true) throws -> BatchResult {
        try run(try compileDelete(request, at: site, needsKey: needsKey), resultType: request.resultType, kind: .deleted, undoable: undoable, at: site)
    }

    /// How many rows `edits` would change now (one `SELECT count(*)` each).
    func count(_ edits: [CompiledEdit], at site: EditSite) throws -> Int {
        try prepare(site, for: edits)
        var total = 0
        for edit in edits {
            total += Int(try watchedQuery(site.session, edit.countSQL, edit.arguments, phase: .reading).first?.first?.integerValue ?? 0)
        }
        return total
    }

    /// What the update `edits` would do (``UpdatePreview``): per statement, one pass counting
    /// its rows and the non-NULL values each assignment would turn into NULL, and the first
    /// `sample` rows by key, each assigned column read now and as the update would write it.
    func preview(_ edits: [CompiledEdit], at site: EditSite, sample: Int) throws -> UpdatePreview {
        try prepare(site, for: edits)
        var parts: [UpdatePreview] = []
        for edit in edits {
            let columns = edit.assigned.compactMap { edit.table.column(named: $0) }
            let nulling = zip(columns, edit.expressions).map { "count(*) FILTER (WHERE t.\(quoteIdentifier($0.name)) IS NOT NULL AND (\($1)) IS NULL)" }
            let counts = try watchedQuery(site.session, "SELECT \((["count(*)"] + nulling).joined(separator: ", ")) FROM \(edit.table.qualifiedSQL) AS t\(edit.whereSQL)",
                                          edit.arguments, phase: .reading).first ?? []
            func int(_ i: Int) -> Int { i < counts.count ? Int(counts[i].integerValue ?? 0) : 0 }
            var part = UpdatePreview(rows: int(0), nulled: columns.enumerated().map { (column: $1.name, count: int($0 + 1)) }, sample: [])
            let shown = parts.reduce(0) { $0 + $1.sample.count }
            if sample > shown, part.rows > 0 {
                let keys = PostgresIDColumn.of(edit.table)
                let keyNames: [String]
                if case .primaryKey(let names) = edit.table.rowKey { keyNames = names } else { keyNames = ["ctid"] }
                let pairs = zip(columns, edit.expressions).flatMap { [$0.selectExpression(), $0.kind.selectExpression("(\($1))", typeOID: $0.baseTypeOID)] }
                let sql = "SELECT \((keys.map(\.readSource) + pairs).joined(separator: ", ")) FROM \(edit.table.qualifiedSQL) AS t\(edit.whereSQL) ORDER BY \(keys.map(\.orderSQL).joined(separator: ", ")) LIMIT \(sample - shown)"
                for row in try watchedQuery(site.session, sql, edit.arguments, phase: .reading) {
                    let changes = columns.enumerated().map { i, column in
                        UpdatePreview.Change(column: column.name, old: row[keys.count + 2 * i], new: row[keys.count + 2 * i + 1], isNumericText: column.kind == .numeric)
                    }
                    part.sample.append(UpdatePreview.SampleRow(keyNames: keyNames, key: Array(row.prefix(keys.count)), changes: changes))
                }
            }
            parts.append(part)
        }
        return UpdatePreview.combining(parts, sample: sample)
    }

    /// Runs `request`, keeping the changed rows' keys in a temp table of the server until the
    /// transaction has committed, then calls `body` with each changed row's ID (in key order) as
    /// it streams back: client memory O(1) however many rows changed. Returns how many changed.
    public func execute(_ request: BatchUpdateRequest, changedIDs body: (ObjectID) throws -> Void) throws -> Int {
        try runCapturing([try compileUpdate(request)], body)
    }

    /// ``execute(_:changedIDs:)`` for a delete.
    public func execute(_ request: BatchDeleteRequest, changedIDs body: (ObjectID) throws -> Void) throws -> Int {
        try runCapturing(try compileDelete(request), body)
    }

    /// Checks a batch update against the table's constraints and the columns' types by running it
    /// in a transaction that is always rolled back; commits nothing.
    ///
    /// PostgreSQL stops at the first row that fails, so a failing update is not counted row by
    /// row as on SQLite: the call throws `.constraint` (or the type's error) with the server's
    /// reason and the row it names, prefixed "the update would fail". While it runs, the matched
    /// rows are locked against other writers, as the update itself would lock them.
    public func validate(_ request: BatchUpdateRequest) throws -> ValidationReport {
        let edit = try compileUpdate(request, needsKey: Self.needsKey(request.resultType, undoable: false))
        let site = try ownSite()
        try prepare(site, for: [edit])
        let session = site.session
        try session.execute("BEGIN")
        defer { _ = try? session.execute("ROLLBACK") }
        do {
            // What it would do, read before it runs in the rolled-back transaction.
            let preview = try preview([edit], at: site, sample: 3)
            let n = try session.execute(edit.sql, edit.arguments) ?? 0
            var report = ValidationReport(rowsMatched: n, rowsFailing: 0, example: nil)
            report.preview = preview
            return report
        } catch let error as BatchStoreError where error.code != .serverUnavailable && error.code != .cancelled {
            throw BatchStoreError(error.code, "the update would fail: \(error.message) (checked in a transaction that was rolled back; nothing was written)")
        }
    }

    /// Gives the site's session the `pg_temp` functions `edits` call.
    func prepare(_ site: EditSite, for edits: [CompiledEdit]) throws {
        for edit in edits where edit.needsTextFunctions { try site.prepare(edit.sql) }
        if edits.contains(where: \.needsGuardFunctions) {
            for function in PostgresQueryBuilder.guardFunctions { try site.session.execute(function) }
        }
    }

    /// Runs `edits` in one transaction; rolls back on any error.
    func inTransaction<T>(_ session: PostgresSession, _ body: () throws -> T) throws -> T {
        // A batch read ahead, or a sweep's stream, of an open result would not show the edit
        // (those of other contexts of the store see the store's count move).
        discardReadAheadOfOpenResults()
        store.countEdit()
        try session.execute("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            if !session.isClosed { _ = try? session.execute("ROLLBACK") }
            throw error
        }
        do {
            try session.execute("COMMIT")
        } catch let error as BatchStoreError where error.code == .serverUnavailable {
            // The server may have committed before the connection went: nobody can say which.
            throw BatchStoreError(.serverUnavailable, "\(error.message) while committing: the edit may or may not have been written; check before running it again")
        } catch {
            if !session.isClosed { _ = try? session.execute("ROLLBACK") }
            throw error
        }
        return value
    }

    /// A temp-table name no other table of this process's sessions has.
    func makeTableName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
    }

    /// Asks the session to report its statistics as its transaction ends (PostgreSQL 15 and
    /// later): the edit's own row counts then reach `pg_stat_user_tables` before the browser reads
    /// ``dataVersion()`` again, so they are not taken for another session's commit.
    func flushStatistics(_ session: PostgresSession) throws {
        if store.serverVersionNumber >= 150_000 { try session.execute("SELECT pg_stat_force_next_flush()") }
    }
}

extension PostgresColumn: AssignableColumn {
    package var holdsNumbers: Bool { [.integer, .real, .numeric].contains(kind) }
}
