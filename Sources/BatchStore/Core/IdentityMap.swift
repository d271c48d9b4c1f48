import Foundation

/// A context's identity map: at most one live object per ``ObjectID``.
///
/// Entries are unretained: each object removes its own entry in `deinit` (through its
/// ``ContextLink``), so no entry outlives its object and no weak-reference side table is allocated
/// per object. Rowid-keyed objects, the common case, live in one ``RowidRegistry`` per entity (open
/// addressing on the rowid, no hashing of the ID); other keys in a dictionary.
///
/// Every row read from SQLite becomes an object through one path, ``adopt(_:link:storage:)``
/// (or its rowid-keyed form for a batch that looked up its entity's registry once): the registered
/// object when there is one, a new registered object otherwise, nil for an object marked deleted.
package final class IdentityMap {
    package init() {}
    private var registry: [ObjectID: Unmanaged<ManagedObject>] = [:]
    private var rowidRegistries: [(entity: Entity, table: RowidRegistry)] = []
    private var lastRowidRegistry: (entity: Entity, table: RowidRegistry)?
    /// Objects that a dropped batch held alone, clean and unregistered, kept for the next rows
    /// this context adopts (see ``recycle(_:)``): a sweep reuses one batch's worth of objects
    /// instead of allocating and freeing one per row.
    @exclusivity(unchecked) private var spare: [ManagedObject] = []
    /// Packed rows of dropped batches, emptied, for the next batches (see ``packedRows(rows:columns:)``).
    @exclusivity(unchecked) private var spareRows: [PackedRows] = []
    /// The most objects kept in ``spare`` (a few batches' worth; about 100 bytes each).
    static let spareLimit = 4096

    /// How many registered objects are alive.
    /// - Complexity: O(entities).
    package var count: Int { registry.count + rowidRegistries.reduce(0) { $0 + $1.table.count } }

    /// The registry of `entity`'s rowid-keyed objects (a batch looks it up once).
    @inline(__always)
    func rowidTable(for entity: Entity) -> RowidRegistry {
        if let last = lastRowidRegistry, last.entity === entity { return last.table }
        for entry in rowidRegistries where entry.entity === entity {
            lastRowidRegistry = entry
            return entry.table
        }
        let entry = (entity: entity, table: RowidRegistry())
        rowidRegistries.append(entry)
        lastRowidRegistry = entry
        return entry.table
    }

    /// The registered object for `id`, if one is alive; never does I/O.
    package func object(for id: ObjectID) -> ManagedObject? {
        if case .rowid(let r) = id.key {
            return rowidTable(for: id.entity).find(r).map { Unmanaged<ManagedObject>.fromOpaque($0).takeUnretainedValue() }
        }
        return registry[id]?.takeUnretainedValue()
    }

    /// Every registered object (strong references, for refresh, reset and merges).
    /// - Complexity: O(registered objects).
    package func allObjects() -> [ManagedObject] {
        registry.values.map { $0.takeUnretainedValue() }
            + rowidRegistries.flatMap { $0.table.allValues().map { Unmanaged<ManagedObject>.fromOpaque($0).takeUnretainedValue() } }
    }

    package func register(_ object: ManagedObject) {
        if case .rowid(let r) = object.objectID.key {
            rowidTable(for: object.entity).insert(r, Unmanaged.passUnretained(object).toOpaque())
            return
        }
        registry[object.objectID] = Unmanaged.passUnretained(object)
    }

    /// Removes `object`'s entry, unless the entry is another object's by now.
    package func unregister(_ object: ManagedObject) {
        let pointer = Unmanaged.passUnretained(object).toOpaque()
        if case .rowid(let r) = object.objectID.key {
            rowidTable(for: object.entity).remove(r, ifValue: pointer)
            return
        }
        if let entry = registry[object.objectID], entry.toOpaque() == pointer {
            registry[object.objectID] = nil
        }
    }

    package func removeAll() {
        registry.removeAll()
        for entry in rowidRegistries { entry.table.removeAll() }
        let dropped = spare
        spare = []
        _ = dropped
    }

    // MARK: Reusing objects

    /// Takes, from a dropped batch's `objects`, each object the batch was the only holder of, for
    /// reuse by the next rows this context adopts; the others stay in `objects`. An object is
    /// reused only when that is safe:
    ///
    /// - nothing else holds it: no other strong reference (`isKnownUniquelyReferenced`), no weak
    ///   or unowned one (which would otherwise see another row's object where they expect the old
    ///   one, or nil);
    /// - it is clean: no unsaved change, not inserted, not deleted (the context holds objects with
    ///   changes strongly, so uniqueness already excludes them; this is the second check);
    /// - it belongs to this context (`link`).
    ///
    /// A reused object is unregistered here and gets its new ID and values in ``adopt``, so no path
    /// reaches it in between.
    func recycle(_ objects: inout [ManagedObject?], link: ContextLink) {
        for i in objects.indices {
            guard spare.count < Self.spareLimit else { return }
            // Another context's object (a batch across stores) is left for its own context.
            guard objects[i]?.link === link, var object = objects[i].take() else { continue }
            guard isKnownUniquelyReferenced(&object),
                  object.changes.isEmpty, !object.isInserted, !object.isDeleted,
                  _getWeakRetainCount(object) <= 1, _getUnownedRetainCount(object) <= 1
            else {
                objects[i] = object
                continue
            }
            unregister(object)
            object.storage = .fault
            spare.append(object)
        }
    }

    /// A new object for `entity`'s row `key`: a spare one of this context when there is one (its
    /// entity reference kept when it is the same entity), else a fresh one.
    @inline(__always)
    private func makeObject(entity: Entity, key: ObjectKey, link: ContextLink, storage: () -> ManagedObject.Storage) -> ManagedObject {
        // Never frees an object here (a free would unregister, from inside a registry probe).
        if let reused = spare.last, reused.link === link {
            spare.removeLast()
            if reused.objectID.entity === entity {
                reused.objectID.key = key
            } else {
                reused.objectID = ObjectID(entity: entity, key: key)
            }
            reused.storage = storage()
            return reused
        }
        return ManagedObject(objectID: ObjectID(entity: entity, key: key), link: link, storage: storage())
    }

    /// Packed rows for a batch of `rows` rows of `columns` values: a dropped batch's buffers when
    /// they fit, else new ones.
    func packedRows(rows: Int, columns: Int) -> PackedRows {
        if let last = spareRows.last, last.columns == columns, last.capacity >= rows {
            spareRows.removeLast()
            return last
        }
        return PackedRows(rows: rows, columns: columns)
    }

    /// Takes the packed rows of a dropped batch for reuse when nothing refers to them any more.
    func recycle(_ rows: inout PackedRows) {
        guard spareRows.count < 2, isKnownUniquelyReferenced(&rows) else { return }
        rows.reset()
        spareRows.append(rows)
    }

    /// Spare objects held for reuse (for tests and statistics).
    var spareCount: Int { spare.count }

    // MARK: Adopting rows

    /// The object for a row just read: the registered one (a fault takes `storage()`), or a new
    /// one made with `storage()` and registered, in one probe; nil when the object is marked deleted.
    /// `storage` is called at most once, and only when the values are needed.
    /// - Complexity: O(1).
    @inline(__always)
    package func adopt(_ id: ObjectID, link: ContextLink, storage: () -> ManagedObject.Storage) -> ManagedObject? {
        if case .rowid(let r) = id.key {
            return adopt(rowid: r, entity: id.entity, table: rowidTable(for: id.entity), link: link, storage: storage)
        }
        var created: ManagedObject?
        let entry = registry[id, default: {
            let object = makeObject(entity: id.entity, key: id.key, link: link, storage: storage)
            created = object
            return Unmanaged.passUnretained(object)
        }()].touched()
        if let created { return created }
        return Self.refill(entry.takeUnretainedValue(), storage)
    }

    /// ``adopt(_:link:storage:)`` for a rowid-keyed entity whose registry the caller looked up once
    /// per batch: the sweep's per-row path (no ObjectID is built for a registered object).
    @inline(__always)
    func adopt(rowid: Int64, entity: Entity, table: RowidRegistry, link: ContextLink, storage: () -> ManagedObject.Storage) -> ManagedObject? {
        // Two probes (find, then insert) rather than one find-or-insert: holding the new object
        // across the insert's closure costs a retain and a release, dearer than a probe.
        if let pointer = table.find(rowid) {
            return Self.refill(Unmanaged<ManagedObject>.fromOpaque(pointer).takeUnretainedValue(), storage)
        }
        let object = makeObject(entity: entity, key: .rowid(rowid), link: link, storage: storage)
        table.insert(rowid, Unmanaged.passUnretained(object).toOpaque())
        return object
    }

    /// The rule for a registered object meeting its row again: a deleted object stays gone, a
    /// fault takes the row's values, an object with values (or an inserted one) keeps its own.
    @inline(__always)
    private static func refill(_ object: ManagedObject, _ storage: () -> ManagedObject.Storage) -> ManagedObject? {
        if object.isDeleted { return nil }
        if !object.hasValues && !object.isInserted { object.storage = storage() }
        return object
    }
}

extension Unmanaged {
    /// A mutating no-op, so `dictionary[key, default: value].touched()` inserts a missing entry
    /// through the modify accessor: one hash lookup for find-or-insert.
    @inline(__always)
    mutating func touched() -> Unmanaged { self }
}
