import Foundation

extension ObjectGraph {
    /// What a merge did, and what the context's open results must drop: the entities whose
    /// objects changed, and those whose stored changes could not be read (every object of theirs
    /// was refaulted).
    package struct Merged {
        package var report = MergeReport()
        package var touched = Set<ObjectIdentifier>()
        package var unknown = Set<ObjectIdentifier>()
    }

    /// Merges another writer's changes: objects of deleted rows are marked deleted
    /// (``markDeleted(_:)``); objects of updated rows are refaulted, those with unsaved changes as
    /// ``mergePolicy`` says. Stored changes are asked only about the objects held here (one
    /// statement per 500); a change table that cannot be read refaults every object of its entity,
    /// which is always correct.
    /// - Parameters:
    ///   - mayTouch: false for an entity none of `updated` and `deleted` names (its objects are
    ///     skipped unless stored changes name them).
    /// - Complexity: O(registered objects) lookups, plus the stored changes' statements.
    package func merge(updated: (ObjectID) -> Bool, deleted: (ObjectID) -> Bool, mayTouch: (Entity) -> Bool,
                       stored: [StoredChanges], inserted: Int) -> Merged {
        var merged = Merged()
        merged.report.inserted = inserted
        let objects = identity.allObjects()
        var storedUpdated = Set<ObjectID>(), storedDeleted = Set<ObjectID>()
        for changes in stored where changes.kind != .inserted && changes.count > 0 {
            let held = objects.compactMap { $0.entity === changes.entity && !$0.isInserted ? $0.objectID : nil }
            guard !held.isEmpty else { continue }
            do {
                let hits = try changes.matching(held)
                if changes.kind == .deleted { storedDeleted.formUnion(hits) } else { storedUpdated.formUnion(hits) }
            } catch {
                merged.unknown.insert(ObjectIdentifier(changes.entity))
            }
        }
        let hasStored = !storedUpdated.isEmpty || !storedDeleted.isEmpty || !merged.unknown.isEmpty
        for object in objects {
            let id = object.objectID
            let entityKey = ObjectIdentifier(id.entity)
            guard hasStored || mayTouch(id.entity) else { continue }
            if deleted(id) || storedDeleted.contains(id) {
                markDeleted(object)
                merged.report.deleted.append(id)
                merged.touched.insert(entityKey)
            } else if updated(id) || storedUpdated.contains(id) || (merged.unknown.contains(entityKey) && !object.isInserted) {
                if !object.changes.isEmpty {
                    switch mergePolicy {
                    case .error:
                        merged.report.conflicts.append(id)
                        continue
                    case .storeWins:
                        refresh(object, mergeChanges: false)
                    case .inMemoryWins:
                        refresh(object, mergeChanges: true)
                    }
                } else {
                    object.values = nil
                }
                merged.report.updated.append(id)
                merged.touched.insert(entityKey)
            }
        }
        return merged
    }
}
