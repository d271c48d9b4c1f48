import BatchStore

extension EffectRunner {
    /// The result `target` was aimed at, if it is still the one on screen; otherwise nothing runs.
    func result(for target: EditTarget) throws -> BrowserResult {
        guard let collection, let collectionID, target.result == collectionID,
              collection.request.entityName == target.table else {
            throw BatchStoreError(.invalidArgument, "that edit was for a result no longer on screen; nothing was changed")
        }
        return collection
    }

    /// Runs `text` on the target's rows of the result on screen; the message gives SQLite's count.
    func runUpdate(_ text: String, target: EditTarget, state: BrowserState) throws -> Action {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let started = environment.now()
        // The changed keys stay in SQLite; the merge asks only about the objects the view holds.
        let (changed, undoNote) = try data.update(assignments, in: result, marked: target.marked)
        merge(changed)
        return try afterEdit("updated \(rows(changed.count ?? 0)) of \(target.table)\(undoNote)", started: started, state: state)
    }

    /// Deletes the target's rows of the result on screen; the message gives SQLite's count.
    func runDelete(_ target: EditTarget, state: BrowserState) throws -> Action {
        let result = try result(for: target)
        let started = environment.now()
        let (deleted, undoNote) = try data.delete(in: result, marked: target.marked)
        merge(deleted)
        return try afterEdit("deleted \(rows(deleted.count ?? 0)) from \(target.table)\(undoNote)", started: started, state: state)
    }

    /// Undoes the last edit, which may be of another table: the message says which.
    func undo(state: BrowserState) throws -> Action {
        guard data.canUndo else { return .failed("nothing to undo") }
        let started = environment.now()
        let changes = try data.undo()
        let tables = Set((changes.inserted + changes.updated + changes.deleted).map(\.entity.name) + changes.stored.map(\.entity.name)).sorted().joined(separator: ", ")
        let of = tables.isEmpty ? "" : " of \(tables)"
        let what = changes.insertedCount > 0 ? "restored \(rows(changes.insertedCount, "deleted"))\(of)"
            : changes.updatedCount > 0 ? "restored the old values of \(rows(changes.updatedCount))\(of)"
            : "removed \(rows(changes.deletedCount, "inserted"))\(of)"
        return try afterEdit("undo: \(what)", started: started, state: state)
    }

    /// Re-runs the result's fetch (`r`), keeping the cursor's row and the marks still in it.
    func reload(state: BrowserState) throws -> [Action] {
        guard collection != nil else { return [] }
        data.refreshAllObjects()
        let started = environment.now()
        let action = try afterEdit("reloaded", started: started, state: state, keepingMarks: true)
        return [action, .fileReloaded]
    }

    func merge(_ result: BatchResult) {
        if let changes = result.changes {
            data.merge(changes)
        } else {
            data.refreshAllObjects()
        }
    }

    /// Re-runs the result's ID fetch keeping the cursor on its row (or the nearest survivor).
    /// With `keepingMarks` (a reload), marks whose rows are still in the new ID table stay.
    func afterEdit(_ what: String, started: Double, state: BrowserState, keepingMarks: Bool = false) throws -> Action {
        guard let collection, let collectionID else { return .info(what) }
        let c = state.cursorRow
        var anchors = [c]
        for d in 1...50 { anchors += [c + d, c - d] }
        anchors = anchors.filter { $0 >= 0 && $0 < collection.count }
        // An edit may have changed rows the results below this one hold: they read their own rows
        // from now on. This one is fetched again, as the file is now.
        for i in parked.indices { parked[i].collectionVersion = nil }
        collectionVersion = data.dataVersion()
        let newCursor = try collection.refresh(keeping: anchors) ?? min(c, max(0, collection.count - 1))
        dataVersion = data.dataVersion()
        var kept: Marks?
        if keepingMarks, let marks = state.currentMarks {
            kept = marks.all ? marks : Marks(result: collectionID, ids: Set(try collection.members(of: Array(marks.ids))))
        }
        return .edited(count: collection.count, cursor: newCursor, message: "\(what) (\(milliseconds(environment.now() - started)))", marks: kept)
    }
}
