import Foundation

/// Rows changed outside a context (by a batch request, another context or another process), to
/// merge into contexts: Core Data's `mergeChanges(fromRemoteContextSave:into:)` dictionary, typed.
public struct ChangeSet: Sendable {
    public var inserted: [ObjectID]
    public var updated: [ObjectID]
    public var deleted: [ObjectID]

    public init(inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// True when there is nothing to merge.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// How a merge treats a registered object that has unsaved changes and whose row a batch updated.
public enum MergePolicy: Sendable {
    /// Leave the object as it is and report it in ``MergeReport/conflicts`` (the default).
    case error
    /// The store wins: the object's unsaved changes are dropped and it is refaulted.
    case storeWins
    /// The object's unsaved changes win over the new values; other properties take the store's.
    case inMemoryWins
}

/// What one merge did to one context: the change set a view needs to redraw only what it shows.
public struct MergeReport: Sendable {
    /// Registered objects that were refaulted (their next access reads the new values).
    public var updated: [ObjectID] = []
    /// Registered objects that were marked deleted and left the identity map.
    public var deleted: [ObjectID] = []
    /// Inserted rows (they appear in open collections after ``BatchFaultingCollection/refresh(keeping:)``).
    public var inserted: Int = 0
    /// Objects with unsaved changes that the `.error` policy left alone.
    public var conflicts: [ObjectID] = []
    /// Resident batches dropped from open collections, so they are faulted again in one query each.
    public var batchesInvalidated: Int = 0
}

/// Changed IDs indexed for membership tests: rowids sorted per entity (binary search, no hashing of
/// a million IDs), other keys in a set (rare: WITHOUT ROWID tables).
struct ChangeIndex {
    private var rowids: [ObjectIdentifier: [Int64]] = [:]
    private var others: Set<ObjectID> = []
    /// Every entity with a changed row, so the per-object check is one set lookup.
    private var entities: Set<ObjectIdentifier> = []

    init(_ ids: [ObjectID]) {
        var lastEntity: Entity?
        for id in ids {
            if id.entity !== lastEntity { entities.insert(ObjectIdentifier(id.entity)); lastEntity = id.entity }
            if case .rowid(let r) = id.key { rowids[ObjectIdentifier(id.entity), default: []].append(r) } else { others.insert(id) }
        }
        for key in Array(rowids.keys) {
            // Batch results come back in rowid order mostly: check before paying for a sort.
            let keys = rowids[key]!
            if zip(keys, keys.dropFirst()).contains(where: { $0 > $1 }) { rowids[key] = keys.sorted() }
        }
    }

    /// - Complexity: O(1).
    func touches(_ entity: Entity) -> Bool { entities.contains(ObjectIdentifier(entity)) }

    /// - Complexity: O(log n) for rowid keys.
    func contains(_ id: ObjectID) -> Bool {
        guard case .rowid(let r) = id.key else { return others.contains(id) }
        guard let keys = rowids[ObjectIdentifier(id.entity)] else { return false }
        var lo = 0, hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid] < r { lo = mid + 1 } else { hi = mid }
        }
        return lo < keys.count && keys[lo] == r
    }
}

extension ManagedObjectContext {
    /// Merges `changes` into every context given (Core Data's `mergeChanges(fromRemoteContextSave:into:)`).
    @discardableResult
    public static func mergeChanges(_ changes: ChangeSet, into contexts: [ManagedObjectContext]) -> [MergeReport] {
        let updated = ChangeIndex(changes.updated)
        let deleted = ChangeIndex(changes.deleted)
        return contexts.map { $0.merge(updated: updated, deleted: deleted, inserted: changes.inserted.count) }
    }

    /// Merges `changes` into this context: updated objects are refaulted (by ``mergePolicy`` when
    /// they have unsaved changes), deleted ones are marked deleted and leave the identity map, and
    /// open collections drop the resident batches that hold either.
    /// - Complexity: O(registered objects × log(changed IDs)) plus O(changed IDs) once to index them;
    ///   no I/O.
    @discardableResult
    public func mergeChanges(_ changes: ChangeSet) -> MergeReport {
        Self.mergeChanges(changes, into: [self])[0]
    }

    func merge(updated: ChangeIndex, deleted: ChangeIndex, inserted: Int) -> MergeReport {
        var report = MergeReport()
        report.inserted = inserted
        var touchedEntities = Set<ObjectIdentifier>()
        for object in allRegisteredObjects() {
            let id = object.objectID
            guard updated.touches(id.entity) || deleted.touches(id.entity) else { continue }
            if deleted.contains(id) {
                markDeleted(object)
                report.deleted.append(id)
                touchedEntities.insert(ObjectIdentifier(id.entity))
            } else if updated.contains(id) {
                if !object.changes.isEmpty {
                    switch mergePolicy {
                    case .error:
                        report.conflicts.append(id)
                        continue
                    case .storeWins:
                        refresh(object, mergeChanges: false)
                    case .inMemoryWins:
                        refresh(object, mergeChanges: true)
                    }
                } else {
                    object.values = nil
                }
                report.updated.append(id)
                touchedEntities.insert(ObjectIdentifier(id.entity))
            }
        }
        for storage in openCollections() where touchedEntities.contains(ObjectIdentifier(storage.entity)) {
            report.batchesInvalidated += storage.evictBatches { object in object.isDeleted || !object.hasValues }
        }
        return report
    }
}
