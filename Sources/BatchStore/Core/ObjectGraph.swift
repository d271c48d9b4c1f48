import Foundation

/// The objects of one context and their unsaved changes, with the rules both engines' contexts
/// follow (a ``ManagedObjectContext`` over a SQLite file, PostgreSQL's context over a server):
/// at most one live object per row, inserts under temporary IDs until a save gives them their
/// row's key, deletes pending until a save, refresh and rollback, the merge of another writer's
/// changes, and the state a committed save leaves. An engine supplies what touches its store:
/// reading a fault's row and writing an ordered change set.
///
/// Not thread-safe: used on its context's thread.
package final class ObjectGraph {
    /// At most one live object per row (held weakly).
    package let identity = IdentityMap()
    /// Shared by every object of the context; its context is cleared when the context goes, so
    /// objects that outlive it see it as gone.
    package let link: ContextLink
    /// How a merge treats objects with unsaved changes whose rows a batch updated.
    package var mergePolicy: MergePolicy = .error
    /// Objects with unsaved changes, held strongly until saved or rolled back.
    package var changed: [ObjectID: ManagedObject] = [:]
    /// Objects marked for deletion at the next save.
    package var pendingDeletes: Set<ObjectID> = []
    /// The next inserted object's temporary key.
    private var nextTemporaryID: UInt64 = 1
    /// Per-context state of the folders that build on a context, by type.
    private var features: [ObjectIdentifier: AnyObject] = [:]

    package init(link: ContextLink) { self.link = link }

    /// The context's instance of `type`, made by `make` on first use: per-context state of a
    /// feature built on the context (open results, the undo journal), kept without the context
    /// naming the feature's type, so no type of a context's folder refers to a folder that builds on it.
    /// - Complexity: one dictionary lookup.
    package func featureState<S: AnyObject>(_ type: S.Type, make: () -> S) -> S {
        if let state = features[ObjectIdentifier(type)] as? S { return state }
        let state = make()
        features[ObjectIdentifier(type)] = state
        return state
    }

    // MARK: Inserting and deleting

    /// A new object of `entity` holding `changes` as unsaved values, registered under a temporary
    /// ID until a save gives it its row's key.
    package func insert(_ entity: Entity, changes: [Int: SQLValue]) -> ManagedObject {
        let id = ObjectID(entity: entity, key: .temporary(nextTemporaryID))
        nextTemporaryID += 1
        let object = ManagedObject(objectID: id, link: link, values: nil)
        object.isInserted = true
        object.changes = changes
        identity.register(object)
        changed[id] = object
        return object
    }

    /// Marks `object` for deletion at the next save; an inserted one is dropped at once.
    /// - Throws, in this order: `.invalidArgument` for an object of another context,
    ///   `.objectNotFound` for one whose row is deleted (a merge said so, or a save of this
    ///   context, or of a child pushed into it, deleted it: nothing is left to delete), then
    ///   whatever `check` throws.
    /// `check` runs before a saved object is marked (the engine's refusals: a read-only table).
    package func delete(_ object: ManagedObject, checking check: () throws -> Void) throws {
        guard object.link === link else { throw BatchStoreError(.invalidArgument, "\(object.objectID) belongs to another context") }
        let id = object.objectID
        if object.isInserted {
            changed[id] = nil
            identity.unregister(object)
            object.isDeleted = true
            return
        }
        if pendingDeletes.contains(id) { return }
        if object.isDeleted { throw BatchStoreError(.objectNotFound, "\(id) was deleted") }
        try check()
        object.isDeleted = true
        pendingDeletes.insert(id)
        changed[id] = object
    }

    /// The unsaved changes in the order a save writes them (``SaveOrder`` over `entities`).
    package func changesInSaveOrder(_ entities: [Entity]) -> [ManagedObject] {
        let order = SaveOrder(entities)
        return changed.values.sorted(by: order.writesBefore)
    }

    /// The state a committed save leaves: deleted objects leave the identity map, updated ones
    /// hold `written(object)` (the row as the store now has it) or, without it, their values with
    /// the changes laid over, inserted ones take their row's key (a fault that held that key
    /// stops standing for the row) and `written(object)`, or become faults (the store's defaults
    /// are read at the next access).
    package func didSave(_ objects: [ManagedObject], insertedKeys: [(ManagedObject, ObjectKey)], written: (ManagedObject) -> [SQLValue]?) {
        for object in objects where !object.isInserted {
            if pendingDeletes.contains(object.objectID) {
                identity.unregister(object)
                object.values = nil
            } else if let row = written(object) {
                object.values = row
            } else if var values = object.values {
                for (i, v) in object.changes { values[i] = v }
                object.values = values
            }
            object.changes.removeAll()
        }
        for (object, key) in insertedKeys {
            identity.unregister(object)
            let id = ObjectID(entity: object.entity, key: key)
            if let earlier = identity.object(for: id), earlier !== object { earlier.supersede() }
            object.objectID = id
            object.isInserted = false
            object.changes.removeAll()
            object.values = written(object)
            identity.register(object)
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    /// Discards every unsaved change: inserted objects are dropped (and read as deleted), pending
    /// deletes are undone.
    package func rollback() {
        for object in changed.values {
            object.changes.removeAll()
            if object.isInserted { identity.unregister(object); object.isDeleted = true }
            if pendingDeletes.contains(object.objectID) { object.isDeleted = false }
        }
        changed.removeAll()
        pendingDeletes.removeAll()
    }

    // MARK: Refreshing

    /// Turns `object` back into a fault, so that its next access reads its row as it is now. With
    /// `mergeChanges`, its unsaved changes are kept and laid over the fresh values; without, they
    /// are discarded (a pending delete too). An object of another context, or one whose row is
    /// deleted (a merge said so, or a save deleted it), is left alone.
    /// - Complexity: O(1); no I/O until the next access.
    package func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        guard object.link === link, !object.isDeleted || object.isInserted || pendingDeletes.contains(object.objectID) else { return }
        object.values = nil
        if !mergeChanges {
            object.changes.removeAll()
            if !object.isInserted {
                changed[object.objectID] = nil
                if pendingDeletes.remove(object.objectID) != nil { object.isDeleted = false }
            }
        }
    }

    /// Turns every registered object that has a row back into a fault (unsaved changes kept).
    package func refreshAll() {
        for object in identity.allObjects() where !object.isInserted { object.values = nil }
    }

    /// Forgets every object and unsaved change (unsaved changes first, so that no detached object
    /// claims a change nothing can save); objects held elsewhere become detached.
    package func reset() {
        rollback()
        let objects = identity.allObjects()
        identity.removeAll()
        let detached = ContextLink()
        for object in objects { object.link = detached }
    }

    /// Marks an object whose row was deleted outside the context: it drops its values, its unsaved
    /// changes and pending delete, and leaves the identity map, so results show the row as gone.
    package func markDeleted(_ object: ManagedObject) {
        object.isDeleted = true
        object.values = nil
        object.changes.removeAll()
        changed[object.objectID] = nil
        pendingDeletes.remove(object.objectID)
        identity.unregister(object)
    }
}
