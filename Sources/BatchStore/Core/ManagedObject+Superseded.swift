extension ManagedObject {
    /// Called by a save when `replacement`, an inserted object, took this object's key: this one
    /// (a fault registered for a row that did not exist yet, or no longer did) stops standing for
    /// the row, so that one live object per row remains: its values are dropped, and reading or
    /// changing it throws, naming the object that stands for the row now.
    package func supersede() {
        values = nil
        changes.removeAll()
        link = ContextLink()
        link.owner = SupersededOwner.shared
    }
}

/// The owner of superseded objects (``ManagedObject/supersede()``): every use says why it fails.
final class SupersededOwner: ObjectOwner, Sendable {
    static let shared = SupersededOwner()

    private func failure(_ object: ManagedObject) -> BatchStoreError {
        BatchStoreError(.objectNotFound, "\(object.objectID): an object inserted by this context took this row's key at a save and stands for the row now; registeredObject(for:) gives it")
    }

    func fulfillFault(_ object: ManagedObject) throws { throw failure(object) }
    func objectDidDeallocate(_ object: ManagedObject) {}
    func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws { throw failure(object) }
    func isPendingDelete(_ object: ManagedObject) -> Bool { false }
}
