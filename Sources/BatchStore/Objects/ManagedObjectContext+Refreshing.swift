import Foundation

extension ManagedObjectContext {
    /// Marks an object whose row was deleted outside the context: it drops its values and unsaved
    /// changes and leaves the identity map, so collections show the row as gone.
    func markDeleted(_ object: ManagedObject) {
        object.isDeleted = true
        object.values = nil
        object.changes.removeAll()
        changed[object.objectID] = nil
        pendingDeletes.remove(object.objectID)
        unregister(object)
    }


    /// Turns `object` back into a fault so its next access reads the store. With `mergeChanges`,
    /// unsaved changes are kept and laid over the fresh values; without, they are discarded.
    /// - Complexity: O(1); no I/O until the next access.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        object.values = nil
        if !mergeChanges {
            object.changes.removeAll()
            if !object.isInserted {
                changed[object.objectID] = nil
                if pendingDeletes.remove(object.objectID) != nil { object.isDeleted = false }
            }
        }
    }

    /// Refreshes every registered object, keeping unsaved changes (Core Data's `refreshAllObjects`).
    /// - Complexity: O(registered objects).
    public func refreshAllObjects() {
        for o in allRegisteredObjects() where !o.isInserted { o.values = nil }
    }

    /// Forgets every object and unsaved change. Registered objects held elsewhere become detached
    /// faults (their context is nil).
    public func reset() {
        // Unsaved changes go first, as a rollback drops them, so that no detached object claims
        // a change nothing can save.
        rollback()
        let objects = allRegisteredObjects()
        identity.removeAll()
        let detached = ContextLink(nil)
        for object in objects { object.link = detached }
    }
}
