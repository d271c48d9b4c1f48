import BatchStore
import Foundation

extension EffectRunner {
    /// Opens `table` with a progressive fetch: the first batch goes on screen at once, then the
    /// ID fetch runs with a progress line; a cancel keeps what was shown before.
    /// With `push`, the result is a new sheet over the one on screen (which stays on screen
    /// until it is fetched, and its result stays held under it).
    /// `note` goes before the message that says how many rows were fetched.
    func open(_ table: String, filter: String, sorts: [SortDescriptor], cursor: Int, push: Bool = false, note: String? = nil, state: BrowserState,
              cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let entity = try data.entity(named: table)
        let predicate = filter.isEmpty ? nil : try FetchPredicate(filter: filter)
        let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sorts, fetchBatchSize: options.batchSize)
        let columns = (data.showsStores ? [Browser.storeColumn] : []) + entity.attributes.map(\.name)
        let clock = environment.now
        let started = clock()
        var lastDraw = started
        let version = data.dataVersion()
        report(.started(.opening))
        if !push { report(.loadingRequest(table: entity.name, filter: filter, sorts: sorts)) }
        let opened: BrowserResult
        do {
            opened = try withoutActuallyEscaping(report) { report in
                try data.open(request, residentBatches: options.residentBatches, firstRows: { first in
                    // A new sheet shows its rows when they are all there; the sheet under it stays meanwhile.
                    if !push { report(.openingFirstRows(table: entity.name, columns: columns, rows: first.map(snapshot))) }
                }, progress: { progress in
                    if clock() - lastDraw >= 0.1 {
                        lastDraw = clock()
                        report(.loadProgress(fraction: progress.fractionCompleted, rows: progress.rowsScanned, seconds: progress.elapsed))
                    }
                    return cancel.isSet ? .cancel : .proceed
                })
            }
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.openCancelled(table: entity.name, columns: columns, filter: filter, sort: sorts.first)]
        }
        var actions: [Action] = []
        if state.eagerLoaded != nil {
            eagerArray = []
            actions.append(.eagerStopped("the eager array was dropped with the old result"))
        }
        // Marks belong to one result: only those whose rows are in the new ID table go on.
        var kept: Marks?
        resultSerial += 1
        if let marks = state.marks, !marks.all, !marks.ids.isEmpty {
            let members = (try? opened.members(of: Array(marks.ids))) ?? []
            kept = Marks(result: resultSerial, ids: Set(members))
        }
        // A new sheet's result joins those held (the one on screen stays, under it); an open in
        // place replaces the shown one, whose frequency sheet, if any, stays with the sheet.
        var held = HeldResult(collection: opened, version: version)
        if !push, let shownID, let replaced = results.removeValue(forKey: shownID) {
            held.frequencies = replaced.frequencies
            held.frequenciesID = replaced.frequenciesID
        }
        results[resultSerial] = held
        shownID = resultSerial
        lastFaultSeconds = nil
        let seconds = clock() - started
        // A query's result edits the tables its rows name (its own reason when there are none).
        let own = entity.query != nil ? entity.engineReadOnlyReason : entity.isReadOnly ? entity.engineReadOnlyReason ?? "\(entity.name) is a view or has no row key" : nil
        // (A query that edits nothing opened its file read-only for that reason: its own comes first.)
        let readOnly = options.readOnlyReason ?? (entity.query != nil ? own : nil) ?? data.readOnlyReason ?? own
        actions.append(.opened(table: entity.name, columns: columns, filter: filter, sort: sorts.first, count: opened.count, cursor: cursor, readOnly: readOnly,
                               message: (note.map { $0 + ": " } ?? "") + "\(rows(opened.count)) in \(milliseconds(seconds)) (IDs in \(data.engineName), rows faulted \(group(options.batchSize)) at a time)",
                               result: resultSerial, marks: kept, pushed: push, links: links(of: entity)))
        log("opened \(entity.name) filter=\(filter) sort=\(sorts) rows=\(opened.count) in \(seconds)s")
        return actions
    }

    /// Searches `column` from `from`, wrapping once; a long search reports progress, and a cancel
    /// stops the search alone: the cursor, filter and sort stay.
    func search(column: String, text: String, from: Int, backwards: Bool, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection else { return [] }
        // What the grid shows, searched as text: numbers too (`/195` finds the year 1950).
        let predicate = try FetchPredicate(format: "string(%K) CONTAINS[c] %@", arguments: [.key(column), .value(.text(text))])
        let clock = environment.now
        let started = clock()
        var lastDraw = -Double.infinity
        report(.started(.searching))
        return try withoutActuallyEscaping(report) { report in
            let progress: (IDFetchProgress) -> IDFetchDecision = { p in
                if cancel.isSet { return .cancel }
                if clock() - started >= 0.2, clock() - lastDraw >= 0.1 {
                    lastDraw = clock()
                    report(.searchProgress(text: text, rows: p.rowsScanned, seconds: lastDraw - started))
                }
                return .proceed
            }
            do {
                if let row = try collection.firstPosition(matching: predicate, after: from, backwards: backwards, progress: progress) {
                    return [.searchFound(row: row, text: text, wrapped: false, column: column)]
                }
                let row = try collection.firstPosition(matching: predicate, after: backwards ? collection.count : -1, backwards: backwards, progress: progress)
                return [.searchFound(row: row, text: text, wrapped: row != nil, column: column)]
            } catch let error as BatchStoreError where error.code == .cancelled {
                return [.searchCancelled]
            }
        }
    }
}
