import BatchStore
import Foundation

/// Unsaved changes and ``save()`` over PostgreSQL, as a `ManagedObjectContext` has them over a
/// SQLite file (``SavingContext``): `setValue`, ``insertObject(into:values:)`` and ``delete(_:)``
/// change nothing on the server; ``save()`` writes every change in one transaction on the
/// context's own session.
///
/// - Deletes first, then updates, then inserts (a unique value a deleted or changed row gives up
///   is free before an insert takes it), each by table and key, one statement per object:
///   `DELETE … WHERE <key>`, `UPDATE … SET "c" = <value> … WHERE <key> RETURNING <row>`,
///   `INSERT … VALUES (…) RETURNING <key>, <row>`. A saved object holds its row as the server
///   returned it: its defaults, and the column types' readings of the values given (where a
///   SQLite object keeps the values as given and reads defaults at its next access).
/// - Values are cast to their columns' types as a batch update casts them (text read by the
///   type's input function, a fraction refused for an integer column).
/// - An update whose row is gone (another session deleted it) fails the save with
///   `.objectNotFound`; a constraint, a bad value, a dropped connection fail it with the server's
///   reason and the object it was writing. Then the server rolls the whole transaction back and
///   every change stays pending, to be changed, rolled back, or saved again.
/// - Only tables with a primary key take changes (a `ctid` moves when its row is updated); a key
///   column of a saved object cannot be set (the object would go on naming the old row: change
///   keys with a batch update); a generated column is refused when it is set, not at the save;
///   deleting an object a merge marked deleted throws, as on SQLite.
/// - A connection lost while the COMMIT was on its way leaves the changes pending and says the
///   save may or may not have been written: check before saving again (an insert saved twice is
///   two rows where the table's key does not forbid it).
/// - As on SQLite, inserts go parents first and deletes children first, by the tables' foreign
///   keys (``SaveOrder``); an update that points a row at a parent inserted in the same save runs
///   before that insert (save the parent first, or make the key `DEFERRABLE INITIALLY DEFERRED`).
/// - Not built here: child contexts (`ManagedObjectContext/newChildContext()` is SQLite's).
extension PostgresContext: SavingContext {
    public var hasChanges: Bool { !graph.changed.isEmpty }

    public var changedObjects: [ManagedObject] { Array(graph.changed.values) }

    /// The table behind `object`'s entity, checked for an unsaved change.
    private func changeableTable(_ entity: Entity, verb: String) throws -> PostgresTable {
        let table = try store.table(named: entity.name)
        if let reason = table.readOnlyReason { throw BatchStoreError(.readOnly, "cannot \(verb) rows of \(table.name): \(reason)") }
        let allowed = switch verb {
        case "insert": table.canInsert
        case "delete": table.canDelete
        default: table.canUpdate
        }
        guard allowed else { throw BatchStoreError(.permissionDenied, "the role may not \(verb) rows of \(table.name)") }
        return table
    }

    /// The index of attribute `name`, checked for a new value.
    private func settableIndex(_ name: String, of entity: Entity) throws -> Int {
        guard let index = entity.indexOfAttribute(named: name) else {
            throw BatchStoreError(.noSuchAttribute, "\(entity.name) has no column named \(name.debugDescription)")
        }
        if entity.attributes[index].isGenerated {
            throw BatchStoreError(.readOnly, "\(entity.name).\(entity.attributes[index].name) is a generated column and cannot be set")
        }
        return index
    }

    /// Inserts a new object with `values`; it gets its row's key as its ID when saved.
    /// - Throws: `.noSuchEntity`, `.noSuchAttribute`, `.readOnly` (views, tables without a
    ///   primary key, generated columns), `.permissionDenied`.
    public func insertObject(into entityName: String, values: [String: SQLValue] = [:]) throws -> ManagedObject {
        let entity = try store.entity(named: entityName)
        _ = try changeableTable(entity, verb: "insert")
        var changes: [Int: SQLValue] = [:]
        for (name, value) in values { changes[try settableIndex(name, of: entity)] = value }
        return graph.insert(entity, changes: changes)
    }

    /// Marks `object` for deletion at the next save; an inserted object is dropped at once.
    /// - Throws: `.invalidArgument` for an object of another context, `.objectNotFound` for one
    ///   whose row a merge said was deleted, `.readOnly`, `.permissionDenied`.
    public func delete(_ object: ManagedObject) throws {
        try graph.delete(object) { _ = try changeableTable(object.entity, verb: "delete") }
    }

    // MARK: ObjectOwner

    package func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws {
        guard object.link === link else { throw BatchStoreError(.invalidArgument, "\(object.objectID): its context is gone") }
        let entity = object.entity
        let table = try changeableTable(entity, verb: object.isInserted ? "insert" : "update")
        let attribute = entity.attributes[index]
        _ = try settableIndex(attribute.name, of: entity)
        if object.isDeleted { throw BatchStoreError(.objectNotFound, "\(object.objectID) is deleted") }
        if !object.isInserted, case .primaryKey(let names) = table.rowKey, names.contains(attribute.name) {
            throw BatchStoreError(.invalidArgument, "\(table.name).\(attribute.name) is part of the primary key: a saved object keeps its row's key (change keys with a batch update)")
        }
        object.changes[index] = value
        graph.changed[object.objectID] = object
    }

    package func isPendingDelete(_ object: ManagedObject) -> Bool { graph.pendingDeletes.contains(object.objectID) }

    // MARK: Saving

    /// One statement of a save: its SQL and arguments, and for an insert the object whose key
    /// it returns.
    private struct SaveStatement {
        let object: ManagedObject
        let sql: String
        let arguments: [SQLValue]
        let kind: Kind
        enum Kind {
            case delete, update
            /// Its row comes back after the key's `keyCount` columns.
            case insert(keyCount: Int)
        }
    }

    /// The statement that writes `object`'s change.
    private func saveStatement(_ object: ManagedObject) throws -> SaveStatement? {
        let table = try store.table(named: object.entity.name)
        let builder = PostgresQueryBuilder(table: table, schema: store.schema)
        func assignments() throws -> [(name: String, value: String)] {
            try object.changes.keys.sorted().map { index in
                let name = object.entity.attributes[index].name
                guard let column = table.column(named: name) else {
                    throw BatchStoreError(.noSuchAttribute, "\(table.name) has no column named \(name.debugDescription)")
                }
                let value = object.changes[index] ?? .null
                return (quoteIdentifier(column.name), try builder.assignment(try builder.operand(.value(value)), to: column, in: table))
            }
        }
        /// ` WHERE <key> = …`, its values bound after the assignments'.
        func keyCondition() throws -> (sql: String, arguments: [SQLValue]) {
            let keys = PostgresIDColumn.of(table)
            let values = object.objectID.keyValues
            guard table.hasPrimaryKey, values.count == keys.count else {
                throw BatchStoreError(.objectNotFound, "\(object.objectID): not a key of \(table.name)")
            }
            let first = builder.arguments.count + 1
            let sql = keys.enumerated().map { "\($1.source) = \($1.cast("$\(first + $0)"))" }.joined(separator: " AND ")
            return (" WHERE " + sql, builder.arguments + values)
        }
        // The row as the server now holds it (its defaults, its conversions of the values given).
        let columns = table.columns.map { $0.selectExpression(alias: "t") }.joined(separator: ", ")
        if object.isInserted {
            let sets = try assignments()
            let insert = sets.isEmpty
                ? "INSERT INTO \(table.qualifiedSQL) AS t DEFAULT VALUES"
                : "INSERT INTO \(table.qualifiedSQL) AS t (\(sets.map(\.name).joined(separator: ", "))) VALUES (\(sets.map(\.value).joined(separator: ", ")))"
            return SaveStatement(object: object, sql: insert + Self.returningKeys(table) + ", " + columns, arguments: builder.arguments,
                                 kind: .insert(keyCount: PostgresIDColumn.of(table).count))
        }
        if isPendingDelete(object) {
            let key = try keyCondition()
            return SaveStatement(object: object, sql: "DELETE FROM \(table.qualifiedSQL) AS t" + key.sql, arguments: key.arguments, kind: .delete)
        }
        guard !object.changes.isEmpty else { return nil }
        let sets = try assignments()
        let key = try keyCondition()
        let sql = "UPDATE \(table.qualifiedSQL) AS t SET \(sets.map { "\($0.name) = \($0.value)" }.joined(separator: ", "))" + key.sql + " RETURNING " + columns
        return SaveStatement(object: object, sql: sql, arguments: key.arguments, kind: .update)
    }

    /// Writes every unsaved change in one transaction on the context's session: a statement per
    /// object, deletes, then updates, then inserts. Saved objects take their rows as written;
    /// inserted ones their row's key as their ID; deleted ones leave the identity map. Open results show updated values at once, and
    /// inserted rows after `BatchFaultingCollection/refresh(keeping:)`.
    /// - Throws: `.objectNotFound` when an updated row was deleted meanwhile, `.constraint` and
    ///   the server's other errors, naming the object; then nothing is written and every change
    ///   stays pending.
    /// - Complexity: one statement per changed object.
    public func save() throws {
        guard hasChanges else { return }
        let objects = graph.changesInSaveOrder(entities)
        let statements = try objects.compactMap { object -> SaveStatement? in
            do {
                return try saveStatement(object)
            } catch let error as BatchStoreError {
                let what = object.isInserted ? "an inserted \(object.entity.name)" : "\(object.objectID)"
                throw BatchStoreError(error.code, "\(error.message) (saving \(what); nothing was written)")
            }
        }
        let lease = try sessionLease()
        let session = lease.session
        if statements.contains(where: { $0.sql.contains("pg_temp.bs_integral") || $0.sql.contains("pg_temp.bs_boolean") }) {
            for function in PostgresQueryBuilder.guardFunctions { try session.execute(function) }
        }
        var written: [ObjectIdentifier: [SQLValue]] = [:]
        var insertedKeys: [(ManagedObject, [SQLValue])] = []
        try inTransaction(session) {
            for statement in statements {
                let id = statement.object.objectID
                do {
                    switch statement.kind {
                    case .delete:
                        try session.execute(statement.sql, statement.arguments)
                    case .update:
                        guard let row = try session.query(statement.sql, statement.arguments).first else {
                            throw BatchStoreError(.objectNotFound, "cannot save \(id): another session deleted its row")
                        }
                        written[ObjectIdentifier(statement.object)] = row
                    case .insert(let keyCount):
                        guard let row = try session.query(statement.sql, statement.arguments).first, row.count >= keyCount else {
                            throw BatchStoreError(.postgres("XX000"), "the server did not answer the inserted row")
                        }
                        insertedKeys.append((statement.object, Array(row.prefix(keyCount))))
                        written[ObjectIdentifier(statement.object)] = Array(row.dropFirst(keyCount))
                    }
                } catch let error as BatchStoreError where error.code != .serverUnavailable && error.code != .cancelled && error.code != .objectNotFound {
                    let what = statement.object.isInserted ? "an inserted \(statement.object.entity.name)" : "\(id)"
                    throw BatchStoreError(error.code, "\(error.message) (saving \(what); nothing was written)")
                }
            }
            try flushStatistics(session)
        }
        // Committed: the objects take the state the server now holds.
        graph.didSave(objects, insertedKeys: insertedKeys.map { ($0.0, .primaryKey($0.1)) }) { written[ObjectIdentifier($0)] }
    }

    public func rollback() { graph.rollback() }
}
