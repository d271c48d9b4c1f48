import BatchStore
import Foundation

/// Batch update and delete over PostgreSQL: the same requests as on a SQLite store, compiled to
/// PostgreSQL's dialect and run as one statement in one transaction each, so a request changes
/// every matching row or none (a constraint, a bad value, a statement timeout, a dropped
/// connection: the server rolls the whole transaction back).
///
/// - `UPDATE "s"."T" AS t SET "c" = <expr>, … WHERE <predicate> [RETURNING <key>]`; a predicate
///   through a to-one relationship, or a delete's sort and limit, become
///   `WHERE (<key>) IN (SELECT <key> FROM … JOIN … WHERE … ORDER BY … LIMIT …)`.
/// - Each new value is cast to its column's type: text parses as the type does (a bad one is an
///   error naming it); a number with a fraction into an integer column is an error, where SQLite
///   would keep the real in the integer column and PostgreSQL's own cast would round it.
/// - A delete's foreign-key actions (ON DELETE CASCADE, SET NULL, RESTRICT) are the server's, and
///   the server always applies them: ``BatchDeleteRequest/appliesDeleteRules`` asks for nothing more.
/// - Result types: `.statusOnly`, `.count`, `.objectIDs` (`RETURNING` the key); `.changes` answers
///   the IDs as a ``ChangeSet`` in memory (O(rows changed); ``execute(_:changedIDs:)`` streams
///   them from a server temp table instead).
/// - Not built yet: undo journals (`undoable: true` is refused before anything runs) and merging
///   into live results (results over PostgreSQL hold no context).
extension PostgresContext {
    /// A compiled batch statement: its table, its SQL without `RETURNING`, its arguments.
    struct CompiledEdit {
        let table: PostgresTable
        let entity: Entity
        let sql: String
        let arguments: [SQLValue]
        /// True when the SQL calls `pg_temp` functions the session must have.
        var needsTextFunctions: Bool { PostgresTextFunctions.areUsed(in: sql) }
    }

    /// The table `name`, checked for the edit: not a view, keyed, and allowed to the role.
    func editableTable(_ name: String, verb: String) throws -> PostgresTable {
        let table = try store.table(named: name)
        if let reason = table.readOnlyReason { throw BatchStoreError(.readOnly, "cannot \(verb) rows of \(table.name): \(reason)") }
        let allowed = verb == "update" ? table.canUpdate : table.canDelete
        guard allowed else { throw BatchStoreError(.permissionDenied, "the role may not \(verb) rows of \(table.name)") }
        guard table.canSelect else { throw BatchStoreError(.permissionDenied, "the role may not read \(table.name), so it cannot choose rows of it to \(verb)") }
        return table
    }

    /// ` WHERE …` (or nothing) choosing the rows of `request` under alias `t`, with the builder's
    /// arguments; a join, a sort or a limit move the choice into a key subquery.
    func editWhere(_ request: FetchRequest, table: PostgresTable, builder: PostgresQueryBuilder) throws -> String {
        guard request.fetchLimit >= 0, request.fetchOffset >= 0 else {
            throw BatchStoreError(.invalidArgument, "fetchLimit and fetchOffset must not be negative")
        }
        let condition = try request.predicate.map { try builder.compile($0.node) }
        let limited = request.fetchLimit > 0 || request.fetchOffset > 0
        guard !builder.joins.isEmpty || limited || !request.sortDescriptors.isEmpty else {
            return condition.map { " WHERE \($0)" } ?? ""
        }
        let keys = PostgresIDColumn.of(table)
        var order = try request.sortDescriptors.map { try builder.order($0) }
        order += keys.map(\.orderSQL)
        var inner = "SELECT \(keys.map(\.source).joined(separator: ", ")) FROM \(builder.fromClause)"
        if let condition { inner += " WHERE \(condition)" }
        if limited || !request.sortDescriptors.isEmpty {
            inner += " ORDER BY \(order.joined(separator: ", "))"
            if request.fetchLimit > 0 { inner += " LIMIT \(request.fetchLimit)" }
            if request.fetchOffset > 0 { inner += " OFFSET \(request.fetchOffset)" }
        }
        // The subquery's own `t` shadows the statement's inside it.
        return " WHERE (\(keys.map(\.source).joined(separator: ", "))) IN (\(inner))"
    }

    /// `RETURNING` the key columns, read as the IDs of results read them.
    static func returningKeys(_ table: PostgresTable) -> String {
        " RETURNING " + PostgresIDColumn.of(table).map(\.readSource).joined(separator: ", ")
    }

    func compileUpdate(_ request: BatchUpdateRequest) throws -> CompiledEdit {
        let table = try editableTable(request.entityName, verb: "update")
        guard !request.propertiesToUpdate.isEmpty else { throw BatchStoreError(.invalidArgument, "a batch update needs at least one assignment") }
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        var sets: [String] = []
        var assigned: [String] = []
        for (name, value) in request.propertiesToUpdate {
            guard let column = table.column(named: name) else {
                throw BatchStoreError(.noSuchAttribute, "\(table.name) has no column named \(name.debugDescription); columns: \(table.columns.map(\.name).joined(separator: ", "))")
            }
            if column.isGenerated { throw BatchStoreError(.readOnly, "\(table.name).\(column.name) is a generated column and cannot be set") }
            guard !assigned.contains(column.name) else { throw BatchStoreError(.invalidArgument, "\(column.name) is assigned twice") }
            assigned.append(column.name)
            let operand = try builder.operand(value.node)
            sets.append("\(quoteIdentifier(column.name)) = \(try builder.assignment(operand, to: column, in: table))")
        }
        // A new value is read from the row itself: a key path through a relationship would need
        // a join the UPDATE does not have (SQLite refuses it the same way).
        if !builder.joins.isEmpty {
            throw BatchStoreError(.invalidQuery, "an assignment reads the row's own columns: a key path that crosses a relationship is not allowed here")
        }
        let whereSQL = try editWhere(FetchRequest(entityName: table.name, predicate: request.predicate), table: table, builder: builder)
        let sql = "UPDATE \(table.qualifiedSQL) AS t SET \(sets.joined(separator: ", "))\(whereSQL)"
        return CompiledEdit(table: table, entity: try store.entity(named: table.name), sql: sql, arguments: builder.arguments)
    }

    /// The delete's statements: one for a fetch request; for object IDs, one per 1,000 IDs (keys
    /// bound as `VALUES` lists), all in the same transaction.
    func compileDelete(_ request: BatchDeleteRequest) throws -> [CompiledEdit] {
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
            return stride(from: 0, to: ids.count, by: 1_000).map { start in
                let chunk = ids[start..<min(start + 1_000, ids.count)]
                var arguments: [SQLValue] = []
                let tuples = chunk.map { id in
                    "(" + zip(keys, id.keyValues).map { key, value in
                        arguments.append(value)
                        return key.cast("$\(arguments.count)")
                    }.joined(separator: ", ") + ")"
                }
                let sql = "DELETE FROM \(table.qualifiedSQL) AS t WHERE (\(keys.map(\.source).joined(separator: ", "))) IN (VALUES \(tuples.joined(separator: ", ")))"
                return CompiledEdit(table: table, entity: entity, sql: sql, arguments: arguments)
            }
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        let table = try editableTable(fetch.entityName, verb: "delete")
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let whereSQL = try editWhere(fetch, table: table, builder: builder)
        return [CompiledEdit(table: table, entity: try store.entity(named: table.name), sql: "DELETE FROM \(table.qualifiedSQL) AS t\(whereSQL)", arguments: builder.arguments)]
    }

    private func refuseUndo(_ undoable: Bool) throws {
        if undoable {
            throw BatchStoreError(.undoRefused, "undo is not built for PostgreSQL yet: run the edit without undo (nothing was written)")
        }
    }

    /// Runs a batch update as one statement in one transaction: all rows or none.
    /// - Throws: `.constraint` naming the server's rule, `.readOnly` for a view or a table without
    ///   a primary key, `.permissionDenied`, `.undoRefused` for `undoable`; then nothing was written.
    public func execute(_ request: BatchUpdateRequest, undoable: Bool) throws -> BatchResult {
        try refuseUndo(undoable)
        let edit = try compileUpdate(request)
        return try run([edit], resultType: request.resultType, kind: .updated)
    }

    /// Runs a batch delete as one transaction: all rows or none; the server's foreign-key actions
    /// apply (see the extension's notes).
    public func execute(_ request: BatchDeleteRequest, undoable: Bool) throws -> BatchResult {
        try refuseUndo(undoable)
        let edits = try compileDelete(request)
        return try run(edits, resultType: request.resultType, kind: .deleted)
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
        let edit = try compileUpdate(request)
        let session = try editSession(for: [edit])
        try session.execute("BEGIN")
        defer { _ = try? session.execute("ROLLBACK") }
        do {
            let n = try session.execute(edit.sql, edit.arguments) ?? 0
            return ValidationReport(rowsMatched: n, rowsFailing: 0, example: nil)
        } catch let error as BatchStoreError where error.code != .serverUnavailable && error.code != .cancelled {
            throw BatchStoreError(error.code, "the update would fail: \(error.message) (checked in a transaction that was rolled back; nothing was written)")
        }
    }

    /// The lookup session, with the `pg_temp` functions `edits` call.
    private func editSession(for edits: [CompiledEdit]) throws -> PostgresSession {
        let session = try session()
        try installTextFunctions(in: session, if: edits.contains { $0.needsTextFunctions })
        if edits.contains(where: { $0.sql.contains("pg_temp.bs_integral") || $0.sql.contains("pg_temp.bs_boolean") }) {
            for function in PostgresQueryBuilder.guardFunctions { try session.execute(function) }
        }
        return session
    }

    /// Runs `edits` in one transaction; rolls back on any error.
    func inTransaction<T>(_ session: PostgresSession, _ body: () throws -> T) throws -> T {
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

    private func run(_ edits: [CompiledEdit], resultType: BatchResultType, kind: StoredChanges.Kind) throws -> BatchResult {
        guard let first = edits.first else {
            return BatchResult(succeeded: true, count: resultType == .statusOnly ? nil : 0, objectIDs: resultType == .objectIDs ? [] : nil,
                               changes: resultType == .changes ? ChangeSet() : nil)
        }
        let session = try editSession(for: edits)
        let wantsIDs = resultType == .objectIDs || resultType == .changes
        return try inTransaction(session) {
            var count = 0
            var ids: [ObjectID] = []
            for edit in edits {
                if wantsIDs {
                    for row in try session.query(edit.sql + Self.returningKeys(edit.table), edit.arguments) {
                        ids.append(ObjectID(entity: first.entity, key: .primaryKey(row)))
                    }
                } else {
                    count += try session.execute(edit.sql, edit.arguments) ?? 0
                }
            }
            if !wantsIDs { return BatchResult(succeeded: true, count: resultType == .statusOnly ? nil : count, objectIDs: nil) }
            let changes = kind == .deleted ? ChangeSet(deleted: ids) : ChangeSet(updated: ids)
            return BatchResult(succeeded: true, count: ids.count, objectIDs: resultType == .objectIDs ? ids : nil, changes: changes)
        }
    }

    private func runCapturing(_ edits: [CompiledEdit], _ body: (ObjectID) throws -> Void) throws -> Int {
        guard let first = edits.first else { return 0 }
        let session = try editSession(for: edits)
        let keys = PostgresIDColumn.of(first.table)
        let reads = keys.enumerated().map { i, k in "\(k.readSource) AS k\(i)" }.joined(separator: ", ")
        let name = "bs_changed_\(UUID().uuidString.prefix(8).lowercased())"
        let table = "pg_temp.\(name)"
        defer { _ = try? session.execute("DROP TABLE IF EXISTS \(table)") }
        let count = try inTransaction(session) {
            try session.execute("CREATE TEMP TABLE \(name) AS SELECT \(reads) FROM \(first.table.qualifiedSQL) AS t WITH NO DATA")
            var count = 0
            for edit in edits {
                count += try session.execute("WITH changed AS (\(edit.sql) RETURNING \(reads)) INSERT INTO \(table) SELECT * FROM changed", edit.arguments) ?? 0
            }
            return count
        }
        // Committed: only now does an ID reach the caller.
        let order = (0..<keys.count).map { "k\($0)" }.joined(separator: ", ")
        let entity = first.entity
        try withoutActuallyEscaping(body) { body in
            let box = RowCallback { row in try body(ObjectID(entity: entity, key: .primaryKey(row))) }
            defer { box.body = nil }
            do {
                _ = try session.streamRows("SELECT \(order) FROM \(table) ORDER BY \(order)") { values in
                    do { try box.body?(values) } catch { box.error = error; throw error }
                }
            } catch {
                let failure = box.error ?? error
                // The edit stands: say so, so that nobody runs it again.
                let reason = (failure as? BatchStoreError)?.message ?? "\(failure)"
                throw BatchStoreError((failure as? BatchStoreError)?.code ?? .serverUnavailable,
                                      "the edit committed (\(count) \(count == 1 ? "row" : "rows")), but listing their IDs failed: \(reason)")
            }
        }
        return count
    }
}
