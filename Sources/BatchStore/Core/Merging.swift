import Foundation

/// Rows changed outside a context (by a batch request, another context or another process), to
/// merge into contexts: Core Data's `mergeChanges(fromRemoteContextSave:into:)` dictionary, typed.
///
/// IDs come either as arrays (``inserted``, ``updated``, ``deleted``: what ``BatchResultType/objectIDs``
/// returns, or what a caller collects) or as ``stored`` tables (what ``BatchResultType/changes``
/// returns: keys kept in SQLite, none in Swift memory). A merge of stored changes costs in
/// proportion to the objects each context holds, not to the rows changed.
public struct ChangeSet: Sendable {
    public var inserted: [ObjectID]
    public var updated: [ObjectID]
    public var deleted: [ObjectID]
    /// Changed keys kept in temp tables by the batch requests that made them.
    public var stored: [StoredChanges]
    /// Rows an undo put back that refer through a foreign key to a row that is not there: as
    /// they did before the edit (SQLite does not check keys unless asked, so files often hold
    /// such rows), or because that row went since. The undo restores them all the same.
    public var danglingReferences = 0
    /// Rows an undo left alone because they changed after the edit it takes back (another
    /// program's write to them since is kept, not overwritten).
    public var changedSince = 0
    /// Rows an undo put back under a new rowid because SQLite had given theirs to another row
    /// since (tables whose rowid no column declares: the rows' values are all back, their rowid is not).
    public var renumbered = 0

    public init(inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = [], stored: [StoredChanges] = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.stored = stored
    }

    /// `ids`, all changed as `kind` says.
    package init(_ kind: StoredChanges.Kind, _ ids: [ObjectID]) {
        switch kind {
        case .inserted: self.init(inserted: ids)
        case .updated: self.init(updated: ids)
        case .deleted: self.init(deleted: ids)
        }
    }

    /// True when there is nothing to merge.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && stored.allSatisfy { $0.count == 0 } }

    /// Rows of each kind, arrays and stored tables together.
    public var insertedCount: Int { inserted.count + stored.filter { $0.kind == .inserted }.reduce(0) { $0 + $1.count } }
    public var updatedCount: Int { updated.count + stored.filter { $0.kind == .updated }.reduce(0) { $0 + $1.count } }
    public var deletedCount: Int { deleted.count + stored.filter { $0.kind == .deleted }.reduce(0) { $0 + $1.count } }

    /// Both change sets' IDs and tables.
    public static func + (a: ChangeSet, b: ChangeSet) -> ChangeSet {
        var sum = ChangeSet(inserted: a.inserted + b.inserted, updated: a.updated + b.updated, deleted: a.deleted + b.deleted, stored: a.stored + b.stored)
        sum.danglingReferences = a.danglingReferences + b.danglingReferences
        sum.changedSince = a.changedSince + b.changedSince
        sum.renumbered = a.renumbered + b.renumbered
        return sum
    }
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

    /// An empty report: nothing merged.
    public init() {}
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
        for (key, keys) in rowids {
            // Batch results come back in rowid order mostly: check before paying for a sort.
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
