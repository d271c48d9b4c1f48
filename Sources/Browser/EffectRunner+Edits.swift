import BatchStore
import TerminalCore

extension EffectRunner {
    /// The result `target` was aimed at, if it is still the one on screen; otherwise nothing runs.
    func result(for target: EditTarget) throws -> BrowserResult {
        guard let collection, let collectionID, target.result == collectionID,
              collection.request.entityName == target.table || collection.editTables.contains(target.table) else {
            throw BatchStoreError(.invalidArgument, "that edit was for a result no longer on screen; nothing was changed")
        }
        return collection
    }

    /// Runs `body`, an edit key's SQLite work, so that a cancel stops it (``FetchingContext/interruptible(_:_:)``):
    /// reports `.started(.editing)`, then the seconds so far about every 0.1 s for the working line.
    /// - Throws: `.cancelled` when the cancel stopped it before it committed: nothing was changed.
    func interruptibly<T>(cancel: CancelFlag, report: (Action) -> Void, _ body: () throws -> T) throws -> T {
        report(.started(.editing))
        let clock = environment.now
        let started = clock()
        var reported = started
        return try withoutActuallyEscaping(report) { report in
            try data.interruptible({ _ in
                if cancel.isSet { return .cancel }
                let now = clock()
                if now - reported >= 0.1 {
                    reported = now
                    report(.editProgress(seconds: now - started))
                }
                return .proceed
            }, body)
        }
    }

    /// ``interruptibly(cancel:report:_:)`` for work whose actions come from `body` alone (a count):
    /// a cancel gives `.editCancelled`.
    func cancellable(cancel: CancelFlag, report: (Action) -> Void, _ body: () throws -> [Action]) throws -> [Action] {
        do {
            return try interruptibly(cancel: cancel, report: report, body)
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.editCancelled]
        }
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
        // The values as the sheet's own table holds them (exact bytes, exact reals).
        return try frequencies.selection(at: positions)
    }

    /// How many rows the delete of `target` would remove now (Esc cancels the count).
    func countDelete(_ target: EditTarget, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let values = try valueSelection(for: target)
        return try cancellable(cancel: cancel, report: report) {
            let n = try data.countDelete(in: result, table: target.table, marked: target.marked, values: values)
            return [.countedForDelete(n, target: target, noUndo: try data.undoRefusal(of: result, table: target.table, rows: n, deleting: true))]
        }
    }

    /// `e`: the cell at `row` and `column` of result `result`, read whole from its row, written as
    /// a literal for the prompt; a value the language cannot write (a blob) is refused.
    func loadCell(row: Int, column: String, result: Int) throws -> Action {
        guard let collection, collectionID == result else { return .failed("the result changed before e could read the cell: e again") }
        let entity = try data.entity(named: collection.request.entityName)
        guard let index = entity.indexOfAttribute(named: column) else { return .failed("no column \(TerminalText.escapingControlCharacters(column)) to edit") }
        let attribute = entity.attributes[index]
        if attribute.isGenerated { return .failed("\(TerminalText.escapingControlCharacters(column)) is a generated column: it cannot be set") }
        guard let object = try self.object(at: row, of: collection) else {
            return .failed("row \(group(row + 1)) was deleted since the result was fetched: r reloads")
        }
        let value = try object.value(at: index)
        guard let literal = FetchPredicate.literal(value) else {
            return .failed("\(TerminalText.escapingControlCharacters(column)) holds \(value.isBlob ? "a blob" : "a value") that e cannot write back: U \(FetchPredicate.formatKey(column)) = … sets it")
        }
        return .cellLoaded(CellTarget(result: result, row: row, id: object.objectID, column: attribute.name, old: literal))
    }

    /// What `u` would take back now, for its question (Esc cancels the read).
    func countUndo(cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        try cancellable(cancel: cancel, report: report) {
            guard let summary = try data.undoSummary() else { return [.failed("nothing to undo")] }
            return [.countedForUndo(summary)]
        }
    }

    /// How many rows the update of `target` would change now (Esc cancels the count).
    func countUpdate(_ text: String, target: EditTarget, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let values = try valueSelection(for: target)
        return try cancellable(cancel: cancel, report: report) {
            // A cell edit shows its own old → new; U a few rows', and the values it would turn into NULL.
            let preview = try data.previewUpdate(assignments, in: result, table: target.table, marked: target.marked, values: values, sample: target.cell == nil ? 3 : 1)
            let n = preview.rows
            return [.countedForUpdate(rows: n, assignments: text, target: target,
                                      noUndo: try data.undoRefusal(of: result, table: target.table, rows: n, deleting: false, assigning: assignments.map(\.name)),
                                      preview: preview)]
        }
    }

    /// Runs `text` on the target's rows of the result on screen; the message gives SQLite's count.
    /// A cancel before the commit changes nothing (`.editCancelled`); after it, the update stands.
    func runUpdate(_ text: String, target: EditTarget, undo: Bool = true, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let values = try valueSelection(for: target)
        let started = environment.now()
        let changed: BatchResult, undoNote: String
        do {
            // The changed keys stay in SQLite; the merge asks only about the objects the view holds.
            (changed, undoNote) = try interruptibly(cancel: cancel, report: report) {
                try data.update(assignments, in: result, table: target.table, marked: target.marked, values: values, undo: undo)
            }
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.editCancelled]
        }
        merge(changed)
        let what = "updated \(rows(changed.count ?? 0)) of \(target.table)\(target.values.map { " (\($0.described))" } ?? "")\(undoNote)"
        // A cell edit is of one row, whatever is marked: the marks stay.
        return try afterEdit(what, started: started, state: state, keepMarks: target.cell != nil, cancel: cancel, report: report)
    }

    /// Deletes the target's rows of the result on screen; the message gives SQLite's count.
    /// A cancel before the commit changes nothing (`.editCancelled`); after it, the delete stands.
    func runDelete(_ target: EditTarget, undo: Bool = true, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let result = try result(for: target)
        let values = try valueSelection(for: target)
        let started = environment.now()
        let deleted: BatchResult, undoNote: String
        do {
            (deleted, undoNote) = try interruptibly(cancel: cancel, report: report) {
                try data.delete(in: result, table: target.table, marked: target.marked, values: values, undo: undo)
            }
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.editCancelled]
        }
        merge(deleted)
        let what = "deleted \(rows(deleted.count ?? 0)) from \(target.table)\(target.values.map { " (\($0.described))" } ?? "")\(undoNote)"
        return try afterEdit(what, started: started, state: state, cancel: cancel, report: report)
    }

    /// Undoes the last edit, which may be of another table: the message says which. A cancel
    /// before the undo commits changes nothing: the edit stays, and `u` can undo it later.
    func undo(state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard data.canUndo else { return [.failed("nothing to undo")] }
        let started = environment.now()
        let changes: ChangeSet
        do {
            changes = try interruptibly(cancel: cancel, report: report) { try data.undo() }
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.editCancelled]
        }
        let tables = Set((changes.inserted + changes.updated + changes.deleted).map(\.entity.name) + changes.stored.map(\.entity.name)).sorted().joined(separator: ", ")
        let of = tables.isEmpty ? "" : " of \(tables)"
        let dangling = changes.danglingReferences > 0
            ? "; \(changes.danglingReferences == 1 ? "1 of them refers" : "\(group(changes.danglingReferences)) of them refer") through a foreign key to a row that is not there (as before the delete, or gone since)" : ""
        // By count, then (all none: the rows went since) by what the undo was of.
        let kind = changes.insertedCount > 0 ? StoredChanges.Kind.inserted : changes.updatedCount > 0 ? .updated : changes.deletedCount > 0 ? .deleted
            : changes.stored.first?.kind ?? (changes.updated.isEmpty ? .deleted : .updated)
        let what = switch kind {
        case .inserted: "restored \(rows(changes.insertedCount, "deleted"))\(of)\(dangling)"
        case .updated: "restored the old values of \(rows(changes.updatedCount))\(of)"
        case .deleted: "removed \(rows(changes.deletedCount, "inserted"))\(of)"
        }
        let left = changes.changedSince > 0
            ? "; \(rows(changes.changedSince)) changed since the edit \(changes.changedSince == 1 ? "was" : "were") left as \(changes.changedSince == 1 ? "it is" : "they are")" : ""
        let moved = changes.renumbered > 0
            ? "; \(rows(changes.renumbered)) came back under a new rowid (SQLite gave \(changes.renumbered == 1 ? "its" : "theirs") to a new row since)" : ""
        return try afterEdit("undo: \(what)\(left)\(moved)", started: started, state: state, cancel: cancel, report: report)
    }

    /// Re-runs the result's fetch (`r`), keeping the cursor's row and the marks still in it. A
    /// cancel during the fetch keeps the result as it was (its ID table is swapped only once the
    /// new one is complete).
    func reload(state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard collection != nil else { return [.info("nothing to reload")] }
        data.refreshAllObjects()
        let started = environment.now()
        do {
            let action = try afterEdit("reloaded", started: started, state: state, keepingMarks: true) { refresh in
                try interruptibly(cancel: cancel, report: report, refresh)
            }
            return [action, .fileReloaded]
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.editCancelled]
        } catch let error as BatchStoreError where error.code == .serverUnavailable && state.sheet == .table {
            // The result's server session is gone (a restart, pg_terminate_backend, a timeout):
            // the same table, filter and sort fetched again in a new session, the cursor's row kept.
            guard let table = state.table else { throw error }
            log("reload: \(error.message); opening the result again in a new session")
            // Every sort key of the result (the command line's further keys too), not only the first.
            let fetched = collection?.request.sortDescriptors ?? []
            let sorts = fetched.first == state.sort ? fetched : state.sort.map { [$0] } ?? []
            return try open(table, filter: state.filter, sorts: sorts, cursor: state.cursorRow,
                            note: "the session was lost (\(error.message)): a new one read the result again", state: state, cancel: cancel, report: report)
        }
    }

    func merge(_ result: BatchResult) {
        if let changes = result.changes {
            data.merge(changes)
        } else {
            data.refreshAllObjects()
        }
    }

    /// After an edit or undo has committed: re-runs the result's ID fetch keeping the cursor on its
    /// row (or the nearest survivor); on a frequency sheet, the result it counts (its cursor kept),
    /// then the sheet is counted again (Esc cancels the count, not the edit, which stands: a cancel
    /// that came once the edit had committed is said to be too late).
    func afterEdit(_ what: String, started: Double, state: BrowserState, keepMarks: Bool = false, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard state.frequencySheet != nil else { return [try afterEdit(what, started: started, state: state, keepMarks: keepMarks)] }
        let said = (cancel.isSet ? "too late to cancel: " : "") + what
        return try recount(.frequency, state: state, edited: said, started: started, cancel: cancel, report: report)
    }

    /// Re-runs the result's ID fetch keeping the cursor on its row (or the nearest survivor).
    /// With `keepingMarks` (a reload), marks whose rows are still in the new ID table stay.
    /// `refreshing` runs the fetch (a reload's makes it cancellable); when it throws, the runner
    /// keeps the result and what it knows of it as they were.
    func afterEdit(_ what: String, started: Double, state: BrowserState, keepingMarks: Bool = false, keepMarks: Bool = false,
                   refreshing: (() throws -> Int?) throws -> Int? = { try $0() }) throws -> Action {
        guard collection != nil else { return .info(what) }
        let (count, cursor, kept) = try refreshResult(cursor: state.cursorRow, marks: keepingMarks || keepMarks ? state.currentMarks : nil, refreshing: refreshing)
        return .edited(count: count, cursor: cursor, message: "\(what) (\(milliseconds(environment.now() - started)))", marks: kept, fileEdited: !keepingMarks)
    }

    /// ``collection`` fetched again as the file is now (by `refreshing`): its new count, the new
    /// position of the row at `cursor` (or the nearest survivor), and those of `marks` still in it.
    func refreshResult(cursor c: Int, marks: Marks?,
                       refreshing: (() throws -> Int?) throws -> Int? = { try $0() }) throws -> (count: Int, cursor: Int, marks: Marks?) {
        guard let collection, let collectionID else { return (0, 0, nil) }
        var anchors = [c]
        for d in 1...50 { anchors += [c + d, c - d] }
        anchors = anchors.filter { $0 >= 0 && $0 < collection.count }
        // The file may have changed under the results below this one: they read their own rows
        // from now on. This one is fetched again, as the file is now (its version is kept only
        // once the fetch is complete: a cancelled one leaves the old ID table, and its version).
        for id in results.keys where id != collectionID { results[id]?.version = nil }
        let version = data.dataVersion()
        let newCursor = try refreshing { try collection.refresh(keeping: anchors) } ?? min(c, max(0, collection.count - 1))
        collectionVersion = version
        dataVersion = data.dataVersion()
        var kept: Marks?
        if let marks, marks.result == collectionID {
            kept = marks.all ? marks : Marks(result: collectionID, ids: Set(try collection.members(of: Array(marks.ids))))
        }
        return (collection.count, newCursor, kept)
    }
}
