import Foundation
import GRDB

extension ManagedObjectContext: ObjectOwner {
    // MARK: - Changes and saving

    /// True when some object has unsaved changes.
    public var hasChanges: Bool { !graph.changed.isEmpty }

    /// Objects with unsaved changes (inserted, updated or deleted), in no particular order.
    public var changedObjects: [ManagedObject] { Array(graph.changed.values) }

    func noteChanged(_ object: ManagedObject) {
        graph.changed[object.objectID] = object
    }

    package func isPendingDelete(_ object: ManagedObject) -> Bool { graph.pendingDeletes.contains(object.objectID) }

    /// Keeps `value` as the unsaved value of attribute `index` of `object`, written by ``save()``.
    /// - Throws: `.readOnly` for views, generated columns and read-only stores; `.objectNotFound`
    ///   for a deleted object.
    package func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws {
        let entity = object.entity
        try checkWritable(entity)
        if entity.attributes[index].isGenerated {
            throw BatchStoreError(.readOnly, "\(entity.name).\(entity.attributes[index].name) is a generated column and cannot be set")
        }
        if object.isDeleted { throw BatchStoreError(.objectNotFound, "\(object.objectID) is deleted") }
        object.changes[index] = value
        noteChanged(object)
    }

    /// Inserts a new object with `values`; it gets a permanent ID when saved.
    /// - Throws: `.noSuchEntity`, `.noSuchAttribute`, `.readOnly`.
    public func insertObject(into entityName: String, values: [String: SQLValue] = [:]) throws -> ManagedObject {
        let entity = try store.entity(named: entityName)
        try checkWritable(entity)
        var changes: [Int: SQLValue] = [:]
        for (name, value) in values {
            guard let index = entity.indexOfAttribute(named: name) else {
                throw BatchStoreError(.noSuchAttribute, "\(entity.name) has no column named \(name.debugDescription)")
            }
            changes[index] = value
        }
        return graph.insert(entity, changes: changes)
    }

    /// Marks `object` for deletion at the next save; an inserted object is dropped at once.
    /// - Throws: `.readOnly`; `.invalidArgument` for an object of another context,
    ///   `.objectNotFound` for one whose row a merge said was deleted.
    public func delete(_ object: ManagedObject) throws {
        try graph.delete(object) { try checkWritable(object.entity) }
    }

    /// Writes every change object by object, in one transaction: an `INSERT`, `UPDATE … WHERE
    /// rowid = ?` or `DELETE … WHERE rowid = ?` per object, through cached statements.
    ///
    /// This is the path batch requests are measured against. A child context hands its changes to
    /// its parent instead (no I/O).
    /// - Throws: `.objectNotFound` when an updated row was deleted meanwhile, `.constraint` and others
    ///   from SQLite; then nothing is written and the changes stay pending.
    /// - Complexity: O(changed objects) statements.
    public func save() throws {
        guard hasChanges else { return }
        if let parent { try pushChanges(to: parent); return }
        let objects = graph.changesInSaveOrder(store.schema.entities)
        var insertedKeys: [(ManagedObject, ObjectKey)] = []
        try withDatabase { db in
            switchToWALBeforeWriting(db)
            try db.inTransaction(.immediate) {
                // Foreign keys are checked at the commit, not statement by statement: an update
                // that points a row at a parent inserted later in this save, or rows that refer
                // to each other, are valid once all are written (the pragma ends with the transaction).
                try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
                for object in objects {
                    let entity = object.entity
                    let stmts = statements(for: entity)
                    if object.isInserted {
                        let indexes = object.changes.keys.sorted()
                        let sql = stmts.insertSQL(columns: indexes)
                        try db.cachedStatement(sql: sql).bound(indexes.compactMap { object.changes[$0] }).execute()
                        if entity.isKeyedByRowid {
                            insertedKeys.append((object, .rowid(db.lastInsertedRowID)))
                        } else {
                            let key = try entity.keyColumns.map { name -> SQLValue in
                                guard let i = entity.indexOfAttribute(named: name), let v = object.changes[i] else {
                                    throw BatchStoreError(.constraint, "\(entity.name): primary key column \(name) needs a value")
                                }
                                return v
                            }
                            insertedKeys.append((object, .primaryKey(key)))
                        }
                    } else if isPendingDelete(object) {
                        try db.cachedStatement(sql: stmts.deleteByKey).bound(object.objectID.keyValues).execute()
                    } else if !object.changes.isEmpty {
                        let indexes = object.changes.keys.sorted()
                        let sql = stmts.updateSQL(columns: indexes)
                        try db.cachedStatement(sql: sql).bound(indexes.compactMap { object.changes[$0] } + object.objectID.keyValues).execute()
                        if db.changesCount == 0 {
                            throw BatchStoreError(.objectNotFound, "cannot save \(object.objectID): the row was deleted by someone else")
                        }
                    }
                }
                return .commit
            }
        }
        // Success: commit the new state in memory (an inserted object's defaults are read at its
        // next access).
        graph.didSave(objects, insertedKeys: insertedKeys) { _ in nil }
    }

    /// Discards every unsaved change.
    public func rollback() { graph.rollback() }

    private func pushChanges(to parent: ManagedObjectContext) throws {
        for object in graph.changed.values {
            if object.isInserted {
                let values = Dictionary(uniqueKeysWithValues: object.changes.map { (object.entity.attributes[$0.key].name, $0.value) })
                _ = try parent.insertObject(into: object.entity.name, values: values)
            } else if isPendingDelete(object) {
                try parent.delete(parent.object(with: object.objectID))
            } else {
                let target = parent.object(with: object.objectID)
                for (i, v) in object.changes { target.changes[i] = v }
                parent.noteChanged(target)
            }
            object.changes.removeAll()
        }
        graph.changed.removeAll()
        graph.pendingDeletes.removeAll()
    }
}
