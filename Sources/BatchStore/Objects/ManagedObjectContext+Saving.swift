import Foundation
import GRDB

extension ManagedObjectContext {
    // MARK: - Changes and saving

    /// True when some object has unsaved changes.
    public var hasChanges: Bool { !changed.isEmpty }

    /// Objects with unsaved changes (inserted, updated or deleted), in no particular order.
    public var changedObjects: [ManagedObject] { Array(changed.values) }

    func noteChanged(_ object: ManagedObject) {
        changed[object.objectID] = object
    }

    func isPendingDelete(_ object: ManagedObject) -> Bool { pendingDeletes.contains(object.objectID) }

    /// Inserts a new object with `values`; it gets a permanent ID when saved.
    /// - Throws: `.noSuchEntity`, `.noSuchAttribute`, `.readOnly`.
    public func insertObject(into entityName: String, values: [String: SQLValue] = [:]) throws -> ManagedObject {
        let entity = try store.entity(named: entityName)
        try checkWritable(entity)
        let id = ObjectID(entity: entity, key: .temporary(nextTemporaryID))
        nextTemporaryID += 1
        let object = ManagedObject(objectID: id, link: link, values: nil)
        object.isInserted = true
        for (k, v) in values {
            let i = try object.attributeIndex(k)
            object.changes[i] = v
        }
        register(object)
        changed[id] = object
        return object
    }

    /// Marks `object` for deletion at the next save.
    public func delete(_ object: ManagedObject) throws {
        try checkWritable(object.entity)
        precondition(object.link.context === self, "delete(_:) got an object of another context")
        if object.isInserted {
            changed[object.objectID] = nil
            unregister(object)
            object.isDeleted = true
            return
        }
        object.isDeleted = true
        pendingDeletes.insert(object.objectID)
        changed[object.objectID] = object
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
        guard !changed.isEmpty else { return }
        if let parent { try pushChanges(to: parent); return }
        let order = SaveOrder(store.schema.entities)
        let objects = Array(changed.values).sorted(by: order.writesBefore)
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
                    } else if pendingDeletes.contains(object.objectID) {
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
        // Success: commit the new state in memory.
        for object in objects {
            if pendingDeletes.contains(object.objectID) {
                unregister(object)
                object.values = nil
            } else if !object.isInserted, var values = object.values {
                for (i, v) in object.changes { values[i] = v }
                object.values = values
            }
            object.changes.removeAll()
        }
        for (object, key) in insertedKeys {
            unregister(object)
            let id = ObjectID(entity: object.entity, key: key)
            // One live object per row: a fault that held this key before stops standing for it.
            if let earlier = registeredObject(for: id), earlier !== object { earlier.supersede() }
            object.objectID = id
            object.isInserted = false
            object.values = nil // defaults are read on next access
            register(object)
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    /// Discards every unsaved change.
    public func rollback() {
        for object in changed.values {
            object.changes.removeAll()
            if object.isInserted { unregister(object); object.isDeleted = true }
            if pendingDeletes.contains(object.objectID) { object.isDeleted = false }
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    private func pushChanges(to parent: ManagedObjectContext) throws {
        for object in changed.values {
            if object.isInserted {
                let values = Dictionary(uniqueKeysWithValues: object.changes.map { (object.entity.attributes[$0.key].name, $0.value) })
                _ = try parent.insertObject(into: object.entity.name, values: values)
            } else if pendingDeletes.contains(object.objectID) {
                try parent.delete(parent.object(with: object.objectID))
            } else {
                let target = parent.object(with: object.objectID)
                for (i, v) in object.changes { target.changes[i] = v }
                parent.noteChanged(target)
            }
            object.changes.removeAll()
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }
}
