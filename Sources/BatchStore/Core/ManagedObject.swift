import Foundation

/// One row of an entity, living in a context (a ``ManagedObjectContext`` or another engine's).
///
/// Its stored properties are read on every value of every sweep, so they opt out of Swift's
/// run-time exclusivity checks (`@exclusivity(unchecked)`: a `swift_beginAccess` per read was 3%
/// of a sweep). Nothing modifies an object while one of its properties is being accessed: an
/// object is used on one thread, and no accessor calls back into code that writes the object.
///
/// An object starts as a fault (no values in memory) and is fulfilled with one indexed query on
/// first access to a value, unless a ``BatchFaultingCollection`` already fulfilled it with its batch.
/// Not `Sendable`: use it on its context's thread or actor only.
public final class ManagedObject: CustomStringConvertible {
    /// The row this object stands for.
    @exclusivity(unchecked) public package(set) var objectID: ObjectID
    /// The link to the context that owns the object (of either engine; nil once it is gone).
    /// Shared by all objects of a context (no weak reference per object: weak references give the
    /// context a side table, which slows every retain and release of it on the fault path).
    @exclusivity(unchecked) package var link: ContextLink
    /// Committed values: none (a fault), decoded, or one row of a batch's ``PackedRows``.
    @exclusivity(unchecked) package var storage: Storage
    /// Unsaved changes by attribute index.
    @exclusivity(unchecked) package var changes: [Int: SQLValue] = [:]
    /// True once deleted in the context (before save) or deleted in the store and merged.
    @exclusivity(unchecked) public package(set) var isDeleted = false
    /// True for objects inserted in the context and not saved yet.
    @exclusivity(unchecked) public package(set) var isInserted = false

    package init(objectID: ObjectID, link: ContextLink, values: [SQLValue]?) {
        self.objectID = objectID
        self.link = link
        self.storage = values.map { .decoded($0) } ?? .fault
    }

    package init(objectID: ObjectID, link: ContextLink, storage: Storage) {
        self.objectID = objectID
        self.link = link
        self.storage = storage
    }

    init(objectID: ObjectID, link: ContextLink, packed: PackedRows, row: Int) {
        self.objectID = objectID
        self.link = link
        self.storage = .packed(packed, row)
    }

    package enum Storage {
        case fault
        case decoded([SQLValue])
        case packed(PackedRows, Int)
    }

    /// Committed values, one per attribute of the entity; nil while a fault. Reading it decodes a
    /// packed row in full; hot paths use ``hasValues`` and ``storedValue(at:)`` instead.
    package var values: [SQLValue]? {
        get {
            switch storage {
            case .fault: return nil
            case .decoded(let v): return v
            case .packed(let rows, let row): return rows.values(row: row)
            }
        }
        set { storage = newValue.map { .decoded($0) } ?? .fault }
    }

    /// True when committed values are in memory (decoded or packed).
    @inline(__always)
    var hasValues: Bool { if case .fault = storage { return false } else { return true } }

    /// The committed value at `index` if in memory.
    @inline(__always)
    func storedValue(at index: Int) -> SQLValue? {
        switch storage {
        case .fault: return nil
        case .decoded(let v): return index < v.count ? v[index] : nil
        case .packed(let rows, let row): return index < rows.columns ? rows.value(row: row, column: index) : nil
        }
    }

    /// True when the values live in `rows`.
    @inline(__always)
    func isPacked(in rows: PackedRows) -> Bool {
        if case .packed(let r, _) = storage { return r === rows }
        return false
    }

    /// Gives the object its own decoded copy of a packed row, so it no longer keeps the batch's
    /// buffers alive.
    func detachFromPackedRows() {
        if case .packed(let rows, let row) = storage { storage = .decoded(rows.values(row: row)) }
    }

    deinit {
        link.owner?.objectDidDeallocate(self)
    }

    /// The object's entity.
    public var entity: Entity { objectID.entity }

    /// True while no values are in memory. Reading a value fulfils the fault.
    public var isFault: Bool { !hasValues && !isInserted }

    /// True when the object has unsaved changes, is inserted (and not deleted since), or is deleted
    /// and not saved.
    public var hasChanges: Bool {
        // An inserted object deleted (or rolled back) before any save is no change at all.
        if isInserted { return !isDeleted }
        guard changes.isEmpty else { return true }
        guard isDeleted else { return false }
        return link.owner?.isPendingDelete(self) == true
    }

    /// The value of the attribute at `index` of ``Entity/attributes``, fulfilling the fault first.
    /// - Throws: `.objectNotFound` when the row was deleted since the object was registered.
    public func value(at index: Int) throws -> SQLValue {
        if !changes.isEmpty, let changed = changes[index] { return changed }
        // Resident values first: each storage knows its column count, so the range check needs
        // no trip through the entity.
        switch storage {
        case .packed(let rows, let row):
            precondition(index >= 0 && index < rows.columns, "attribute index \(index) out of range")
            return rows.value(row: row, column: index)
        case .decoded(let values):
            precondition(index >= 0 && index < values.count, "attribute index \(index) out of range")
            return values[index]
        case .fault:
            break
        }
        precondition(index >= 0 && index < entity.attributes.count, "attribute index \(index) out of range")
        if isInserted { return .null }
        if let owner = link.owner {
            try owner.fulfillFault(self)
        } else {
            throw BatchStoreError(.objectNotFound, "\(objectID): its context is gone, so the fault cannot be fulfilled")
        }
        guard let value = storedValue(at: index) else { throw BatchStoreError(.objectNotFound, "\(objectID): no values") }
        return value
    }

    /// The value of the attribute named `key`.
    /// - Throws: `.noSuchAttribute` for an unknown name, `.objectNotFound` when the row is gone.
    public func value(forKey key: String) throws -> SQLValue {
        try value(at: try attributeIndex(key))
    }

    /// Same as ``value(forKey:)``.
    public subscript(key: String) -> SQLValue {
        get throws { try value(forKey: key) }
    }

    /// The value at `index` when it is in memory, without fulfilling a fault (nil for a fault).
    public func valueIfResident(at index: Int) -> SQLValue? {
        if let changed = changes[index] { return changed }
        return storedValue(at: index)
    }

    /// Sets an attribute; the change is written by the context's ``SavingContext/save()``.
    /// - Throws: `.noSuchAttribute`, or `.readOnly` for views, generated columns and read-only stores.
    public func setValue(_ value: SQLValue, forKey key: String) throws {
        let index = try attributeIndex(key)
        guard let owner = link.owner else {
            throw BatchStoreError(.invalidArgument, "\(objectID): no context holds it (its context is gone, or it was read without one), so it cannot take unsaved changes")
        }
        try owner.takeUnsavedChange(value, at: index, of: self)
    }

    /// The unsaved changes, by attribute name.
    public var changedValues: [String: SQLValue] {
        Dictionary(uniqueKeysWithValues: changes.map { (entity.attributes[$0.key].name, $0.value) })
    }

    /// All attribute values by name, fulfilling the fault if needed.
    public func dictionaryRepresentation() throws -> [String: SQLValue] {
        var d: [String: SQLValue] = [:]
        for (i, a) in entity.attributes.enumerated() { d[a.name] = try value(at: i) }
        return d
    }

    func attributeIndex(_ key: String) throws -> Int {
        guard let i = entity.indexOfAttribute(named: key) else {
            throw BatchStoreError(.noSuchAttribute, "\(entity.name) has no column named \(key.debugDescription)")
        }
        return i
    }

    /// Describes the object without fulfilling it: `<movie r42 fault>`.
    public var description: String {
        var state = isFault ? "fault" : "fulfilled"
        if isDeleted { state = "deleted" }
        if isInserted { state = "inserted" }
        if !changes.isEmpty { state += ", \(changes.count) change\(changes.count == 1 ? "" : "s")" }
        return "<\(entity.name) \(objectID.keyString) \(state)>"
    }
}

/// The one reference from a context's objects back to it. The context clears it in `deinit`, so
/// objects that outlive their context see nil instead of a dangling pointer.
package final class ContextLink {
    /// The context that owns the objects (of either engine), or nil once it is gone.
    package unowned(unsafe) var owner: (any ObjectOwner)?
    package init() {}
}

/// What a context (of either engine) does for the objects of its identity map: fulfil a fault,
/// forget an object that went away, and keep an object's unsaved changes.
package protocol ObjectOwner: AnyObject {
    /// Reads the object's row into it; throws `.objectNotFound` when the row is gone.
    func fulfillFault(_ object: ManagedObject) throws
    /// Called from the object's `deinit`: removes its identity-map entry.
    func objectDidDeallocate(_ object: ManagedObject)
    /// Records `value` as the unsaved value of the attribute at `index` of `object` (written by
    /// the context's save), or throws why it cannot be.
    func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws
    /// True when `object` is marked for deletion at the context's next save.
    func isPendingDelete(_ object: ManagedObject) -> Bool
}
