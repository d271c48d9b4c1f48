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

    /// The values a target from a frequency sheet stands for, read from the sheet's counts (nil:
    /// every row of the result, or a target from a table sheet).
    /// - Throws: `.invalidArgument` when the frequency sheet is no longer the one on screen.
    func valueSelection(for target: EditTarget) throws -> ValueSelection? {
        guard let aim = target.values else { return nil }
        guard let frequencies, frequenciesID == aim.sheet else {
            throw BatchStoreError(.invalidArgument, "that edit was for a frequency sheet no longer on screen; nothing was changed")
        }
        guard let positions = aim.positions else { return nil }
        let values = try positions.map { position -> SQLValue in
            guard let entry = try frequencies.values(in: position..<(position + 1)).first else {
                throw BatchStoreError(.invalidArgument, "value \(position + 1) is not on the frequency sheet; nothing was changed")
            }
            return entry.value
        }
        return ValueSelection(attribute: frequencies.attribute, values: values, binWidth: frequencies.binWidth)
    }

    /// How many rows the delete of `target` would remove now.
    func countDelete(_ target: EditTarget) throws -> Action {
        let result = try result(for: target)
        return .countedForDelete(try data.countDelete(in: result, marked: target.marked, values: try valueSelection(for: target)), target: target)
    }

    /// How many rows the update of `target` would change now.
    func countUpdate(_ text: String, target: EditTarget) throws -> Action {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let count = try data.countUpdate(assignments, in: result, marked: target.marked, values: try valueSelection(for: target))
        return .countedForUpdate(rows: count, assignments: text, target: target)
    }

    /// Runs `text` on the target's rows of the result on screen; the message gives SQLite's count.
    func runUpdate(_ text: String, target: EditTarget, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let values = try valueSelection(for: target)
        let started = environment.now()
        // The changed keys stay in SQLite; the merge asks only about the objects the view holds.
        let (changed, undoNote) = try data.update(assignments, in: result, marked: target.marked, values: values)
        merge(changed)
        let what = "updated \(rows(changed.count ?? 0)) of \(target.table)\(target.values.map { " (\($0.described))" } ?? "")\(undoNote)"
        return try afterEdit(what, started: started, state: state, cancel: cancel, report: report)
    }

    /// Deletes the target's rows of the result on screen; the message gives SQLite's count.
    func runDelete(_ target: EditTarget, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let values = try valueSelection(for: target)
        let started = environment.now()
        let (deleted, undoNote) = try data.delete(in: result, marked: target.marked, values: values)
        merge(deleted)
        let what = "deleted \(rows(deleted.count ?? 0)) from \(target.table)\(target.values.map { " (\($0.described))" } ?? "")\(undoNote)"
        return try afterEdit(what, started: started, state: state, cancel: cancel, report: report)
    }

    /// Undoes the last edit, which may be of another table: the message says which.
    func undo(state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard data.canUndo else { return [.failed("nothing to undo")] }
        let started = environment.now()
        let changes = try data.undo()
        let tables = Set((changes.inserted + changes.updated + changes.deleted).map(\.entity.name) + changes.stored.map(\.entity.name)).sorted().joined(separator: ", ")
        let of = tables.isEmpty ? "" : " of \(tables)"
        let what = changes.insertedCount > 0 ? "restored \(rows(changes.insertedCount, "deleted"))\(of)"
            : changes.updatedCount > 0 ? "restored the old values of \(rows(changes.updatedCount))\(of)"
            : "removed \(rows(changes.deletedCount, "inserted"))\(of)"
        return try afterEdit("undo: \(what)", started: started, state: state, cancel: cancel, report: report)
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

    /// After an edit: re-runs the result's ID fetch keeping the cursor on its row (or the nearest
    /// survivor); on a frequency sheet, the result it counts (its cursor kept), then the sheet is
    /// counted again (Esc cancels the count, not the edit).
    func afterEdit(_ what: String, started: Double, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        // An edit may have changed rows the results below this one hold: they read their own rows
        // from now on. This one is fetched again, as the file is now.
        for i in parked.indices { parked[i].collectionVersion = nil }
        guard state.frequencySheet != nil else { return [try afterEdit(what, started: started, state: state)] }
        return try recount(.frequency, state: state, edited: what, started: started, cancel: cancel, report: report)
    }

    /// Re-runs the result's ID fetch keeping the cursor on its row (or the nearest survivor).
    /// With `keepingMarks` (a reload), marks whose rows are still in the new ID table stay.
    func afterEdit(_ what: String, started: Double, state: BrowserState, keepingMarks: Bool = false) throws -> Action {
        guard collection != nil else { return .info(what) }
        let (count, cursor, kept) = try refreshResult(cursor: state.cursorRow, marks: keepingMarks ? state.currentMarks : nil)
        return .edited(count: count, cursor: cursor, message: "\(what) (\(milliseconds(environment.now() - started)))", marks: kept, fileEdited: !keepingMarks)
    }

    /// ``collection`` fetched again as the file is now: its new count, the new position of the
    /// row at `cursor` (or the nearest survivor), and those of `marks` still in it.
    func refreshResult(cursor c: Int, marks: Marks?) throws -> (count: Int, cursor: Int, marks: Marks?) {
        guard let collection, let collectionID else { return (0, 0, nil) }
        var anchors = [c]
        for d in 1...50 { anchors += [c + d, c - d] }
        anchors = anchors.filter { $0 >= 0 && $0 < collection.count }
        collectionVersion = data.dataVersion()
        let newCursor = try collection.refresh(keeping: anchors) ?? min(c, max(0, collection.count - 1))
        dataVersion = data.dataVersion()
        var kept: Marks?
        if let marks, marks.result == collectionID {
            kept = marks.all ? marks : Marks(result: collectionID, ids: Set(try collection.members(of: Array(marks.ids))))
        }
        return (collection.count, newCursor, kept)
    }
}
