import Foundation

extension ManagedObjectContext {
    /// Turns `object` back into a fault so its next access reads the store. With `mergeChanges`,
    /// unsaved changes are kept and laid over the fresh values; without, they are discarded (a
    /// pending delete too). An object of another context, or one a merge marked deleted, is left
    /// alone.
    /// - Complexity: O(1); no I/O until the next access.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) { graph.refresh(object, mergeChanges: mergeChanges) }

    /// Refreshes every registered object, keeping unsaved changes (Core Data's `refreshAllObjects`).
    /// - Complexity: O(registered objects).
    public func refreshAllObjects() { graph.refreshAll() }

    /// Forgets every object and unsaved change. Registered objects held elsewhere become detached
    /// faults (their context is nil).
    public func reset() { graph.reset() }
}
