import BatchStore
import Foundation
import TerminalCore

extension BrowserState {
    /// What failed is said; an open that fails while its IDs load leaves the previous result on
    /// screen, and a prompt whose Enter started the work comes back (at `column`, if known).
    mutating func fail(_ msg: String, column: Int?) {
        firstRowsShown = false
        cursorMovedWhileLoading = false
        endEdit()
        // A sheet that has nothing of its own goes with the failure: a sample's frequency sheet
        // with the exact count that failed, a summary sheet that got no row at all (summarising
        // failed, or is not built for the engine).
        let goes = frequencySheet?.sampledFrom != nil || summarySheet.map { $0.rows.allSatisfy { $0 == nil } } == true
        if goes, let parent = sheets.popLast() {
            parent.restore(into: &self)
            mode = .grid
            scrollToCursor()
        }
        // An open that fails while its IDs load leaves the previous result on screen.
        shownBefore?.restore(into: &self)
        shownBefore = nil
        running = nil
        quitWhenCancelled = false
        loading = nil
        if case .confirm = mode { mode = .grid }
        say(msg, error: true)
        reopenSubmittedPrompt(column: column)
    }

    /// Makes `kept` (checked by the session against result `result`'s ID table) the marks, and
    /// says what became of marks that did not make it, if any.
    mutating func rebaseMarks(to kept: Marks?, result: Int) -> String? {
        let before = marks
        resultID = result
        marks = kept.flatMap { $0.result == result && ($0.all || !$0.ids.isEmpty) ? $0 : nil }
        guard let before, before.all || !before.ids.isEmpty else { return nil }
        if before.all, marks?.all != true { return "V's marks were for the previous result: cleared" }
        let lost = before.ids.count - (marks?.ids.count ?? 0)
        guard lost > 0 else { return nil }
        if marks == nil, before.ids.allSatisfy({ if case .position = $0.key { true } else { false } }) {
            return "\(counted(lost, "mark")) cleared: a query's rows are marked by their place in one run of it, and it ran again"
        }
        if marks == nil { return "\(counted(lost, "mark")) cleared: \(lost == 1 ? "its row is" : "the rows are") not in this result" }
        return "kept \(group(marks?.ids.count ?? 0)) of \(counted(before.ids.count, "mark")): \(lost == 1 ? "the other is" : "the others are") not in this result"
    }

    /// Keeps the open table's filter, sort and cursor row for the table list.
    mutating func remember() {
        guard let table else { return }
        remembered[table] = TableView(filter: filter, sort: sort, cursorRow: cursorRow, columnView: columnView)
    }

    /// Starts the working line of an edit key's `step` (the effect that runs it goes out with it).
    /// The next table of the list after `index` whose count is unknown or may be stale.
    func nextCount(after index: Int) -> Int? {
        tables.indices.first { $0 > index && tables[$0].recount }
    }

    mutating func beginEdit(_ step: EditStep) {
        // Every count in the table list is counted again on the next return to it: an undo
        // may change another table than this one, a delete may cascade, and SQLite's
        // data_version does not move for this connection's own writes. A search's match count
        // is counted again too.
        staleCounts.formUnion(tables.map(\.name))
        if let table { staleCounts.insert(table) }
        matchCount = nil
        editing = step
        editCancelRequested = false
        say(step.line(seconds: 0))
    }

    /// Ends the edit key's work: no working line, keys act as usual again. Returns its step.
    @discardableResult
    mutating func endEdit() -> EditStep? {
        defer {
            editing = nil
            editCancelRequested = false
            if running == .editing { running = nil }
        }
        return editing
    }

    /// Ends a count whose edit was cancelled after the count finished (Esc came too late to stop
    /// the count, but before the question): says so, and returns true.
    mutating func endEdit(cancelled noun: String) -> Bool {
        let cancelled = editCancelRequested && editing != nil
        endEdit()
        if cancelled { say("\(noun) cancelled: nothing was changed") }
        return cancelled
    }

    /// Acts on `key` now, while `work` runs, when what it does needs nothing from the engine
    /// and cannot be undone by the work's end: it moves the cursor over rows already on screen
    /// (a loading result's first rows, a summary sheet filling in) or arranges columns; it opens
    /// no prompt or question, starts no work, reads no row that is not in the window, touches no
    /// mark, changes no sheet. During a load, a move that lands on the last row known is kept
    /// for later (`G`, a page down: the count is not known yet). Returns false (the key waits)
    /// otherwise, with nothing changed.
    mutating func actAtOnce(_ key: Key, during work: Work) -> Bool {
        let loadingRows = work == .opening && firstRowsShown
        guard loadingRows || work == .summarizing || work == .writing else { return false }
        if case .alt = key { return false }
        var trial = self
        trial.running = nil
        let effects = trial.handle(key)
        trial.running = work
        // What the running work's prompt was (a filter's Enter) stays, to come back if it fails.
        trial.submitted = submitted
        guard effects.isEmpty, trial.mode == mode, trial.quit == quit, trial.marks == marks, trial.resultID == resultID,
              trial.sheets.count == sheets.count, trial.sheet == sheet, trial.table == table, trial.filter == filter, trial.sort == sort,
              trial.count == count, trial.textSheet == nil, textSheet == nil else { return false }
        let needed = trial.visibleRows
        guard needed.isEmpty || (trial.windowValid && trial.windowStart <= needed.lowerBound && trial.windowStart + trial.window.count >= needed.upperBound) else { return false }
        let moved = trial.cursorRow != cursorRow || trial.topRow != topRow
        // A key that did nothing here (v with no result yet, k on the first row) waits: it may
        // mean something once the work has ended.
        guard moved || trial.cursorColumn != cursorColumn || trial.columnView != columnView || trial.memoryPanel != memoryPanel else { return false }
        if loadingRows, moved, trial.cursorRow >= count - 1 { return false }
        if loadingRows, moved { trial.cursorMovedWhileLoading = true }
        self = trial
        return true
    }

    /// `:N` Enter in a prompt opened while a result loads, when row N is among the rows on screen
    /// now: the cursor goes there at once (and stays when the load ends). Nil when it cannot act
    /// yet (a row not loaded, a `:w`, an error): the Enter then waits for the load.
    mutating func jumpAtOnce(during work: Work) -> [Effect]? {
        // A row past those on screen is not "the last row" yet: the count is not known.
        guard case .prompt(.goToRow, let line) = mode, let n = Int(line.text.filter { $0 != "," && $0 != " " }), n >= 1, n <= count else { return nil }
        var trial = self
        trial.running = nil
        let effects = trial.handle(.enter)
        trial.running = work
        guard trial.mode == .grid, !trial.messageIsError, effects.allSatisfy({ if case .saveHistory = $0 { true } else { false } }),
              trial.table == table, trial.count == count, trial.resultID == resultID, trial.cursorRow < count else { return nil }
        let needed = trial.visibleRows
        guard needed.isEmpty || (trial.windowValid && trial.windowStart <= needed.lowerBound && trial.windowStart + trial.window.count >= needed.upperBound) else { return nil }
        trial.cursorMovedWhileLoading = true
        trial.promptOpenedDuringWork = false
        self = trial
        return effects
    }

    /// The open a sort key typed while `work` runs asks for, when it replaces that work: `s` /
    /// `S` on a column of a loading result's first rows sort what is loading (its table and
    /// filter) by that column instead; during a search, the result on screen. Nil (the key waits)
    /// for anything else: edits, writes and sheets are never cancelled by another key, and `n`
    /// continues a search rather than replacing it. The open runs once the work has ended, from
    /// what the key named when it was typed, whatever the cancel restores.
    func replacingSort(_ key: Key, _ work: Work) -> Effect? {
        guard key == .char("s") || key == .char("S"), mode == .grid, sheet == .table, frequencySheet == nil, summarySheet == nil,
              textSheet == nil, editing == nil, let column = currentColumnName, !onStoreColumn else { return nil }
        let sort = SortDescriptor(column: column, ascending: key == .char("s"))
        switch work {
        case .opening:
            guard firstRowsShown, let request = loadingRequest else { return nil }
            return .open(table: request.table, filter: request.filter, sort: sort)
        case .searching:
            guard let table else { return nil }
            return .open(table: table, filter: filter, sort: sort)
        default:
            return nil
        }
    }

    /// The read of the loading result's last screen of rows, once per open (nil: asked already,
    /// or nothing loads).
    mutating func askForTail() -> Effect? {
        guard let request = loadingRequest, !tailRequested else { return nil }
        tailRequested = true
        return .peekLast(table: request.table, filter: request.filter, sorts: request.sorts, count: max(1, gridHeight))
    }

    /// The read of the rows from `:N`'s row N during a load (nil: no number, or nothing loads).
    mutating func askForRows(at mode: Mode) -> Effect? {
        guard let request = loadingRequest, case .prompt(.goToRow, let line) = mode,
              let n = Int(line.text.filter { $0 != "," && $0 != " " }), n > count else { return nil }
        offsetRequested = n - 1
        return .peekRows(table: request.table, filter: request.filter, sorts: request.sorts, offset: n - 1, count: max(1, gridHeight))
    }

    /// Forgets what an open under way fetched and the rows read for `G` or `:N` (the open ended).
    mutating func endTail() {
        loadingRequest = nil
        tailRows = nil
        tailStart = nil
        tailRequested = false
        offsetRequested = nil
    }

    /// The next key typed while work ran, to act now (nil while work runs, or none waits).
    package mutating func takeQueuedKey() -> Key? {
        guard running == nil, !queuedKeys.isEmpty else { return nil }
        return queuedKeys.removeFirst()
    }

    /// Throws away the keys typed while work ran (a question opened: it takes only a key pressed
    /// once it is on screen); returns how many.
    @discardableResult
    package mutating func dropQueuedKeys() -> Int {
        defer { queuedKeys.removeAll() }
        return queuedKeys.count
    }

    mutating func say(_ text: String, error: Bool = false) {
        message = text
        messageIsError = error
    }

    /// What the status line says after a search found a row.
    func searchMessage(_ text: String, wrapped: Bool, matches: Int?) -> String {
        let count = matches.map { $0 == 1 ? ": 1 row matches" : ": \(group($0)) rows match" } ?? ""
        return (wrapped ? "search wrapped: \(text)" : "/\(text)") + count
    }

    /// Keeps the cursor row on screen and the cursor column within the grid.
    mutating func scrollToCursor() {
        cursorRow = min(max(0, cursorRow), max(0, count - 1))
        if cursorRow < topRow { topRow = cursorRow }
        if cursorRow >= topRow + gridHeight { topRow = cursorRow - gridHeight + 1 }
        topRow = max(0, min(topRow, max(0, count - gridHeight)))
        if columnView.order.count != columns.count { resetColumnView() }
        let shown = columnView.shown.count
        cursorColumn = min(max(0, cursorColumn), max(0, shown - 1))
        // Frozen columns are always drawn: the others scroll from leftColumn on.
        let frozen = columnView.frozen
        leftColumn = min(max(leftColumn, frozen), max(frozen, shown - 1))
        if cursorColumn >= frozen {
            if cursorColumn < leftColumn { leftColumn = cursorColumn }
            while leftColumn < cursorColumn, !GridLayout(self).shows(cursorColumn) { leftColumn += 1 }
        }
        // Room left at the right (columns hidden, narrowed or unfrozen): scroll back while the
        // cursor's column and the last one stay whole.
        while leftColumn > frozen {
            var wider = self
            wider.leftColumn -= 1
            let grid = GridLayout(wider)
            guard grid.shows(shown - 1), cursorColumn < frozen || grid.shows(cursorColumn) else { break }
            leftColumn -= 1
        }
    }

    mutating func move(to row: Int) {
        cursorRow = row
        scrollToCursor()
    }


    mutating func handle(_ key: Key) -> [Effect] {
        if key == .resize { return [] }
        // What a prompt's Enter started has come back by the next key: nothing to bring back.
        submitted = nil
        switch mode {
        case .picker: return pickerKey(key)
        case .grid where textSheet != nil: return textSheetKey(key)
        case .grid: return gridKey(key)
        case .help(let scroll):
            switch key {
            case .char("j"), .down: mode = .help(scroll: min(scroll + 1, max(0, helpLines.count - 1)))
            case .char("k"), .up: mode = .help(scroll: max(0, scroll - 1))
            default: mode = .grid
            }
            return []
        case .prompt(let kind, let line):
            return promptKey(key, kind: kind, line: line)
        case .confirm(let what):
            guard key == .char("y") || key == .char("Y") else {
                mode = .grid
                say("cancelled: nothing was changed")
                return []
            }
            mode = .grid
            // The target the count was for; the session refuses it if the result has changed.
            switch what {
            case .delete(let n, let target, let noUndo):
                beginEdit(.deleting(rows: n, table: target.table))
                return [.runDelete(target, undo: noUndo == nil)]
            case .update(let n, let text, let target, let noUndo, _):
                beginEdit(.updating(rows: n, table: target.table))
                return [.runUpdate(assignments: text, target: target, undo: noUndo == nil)]
            case .undo:
                beginEdit(.undoing)
                return [.undo]
            }
        }
    }

    mutating func pickerKey(_ key: Key) -> [Effect] {
        switch key {
        case .char("j"), .down: pickerCursor = min(pickerCursor + 1, max(0, tables.count - 1))
        case .char("k"), .up: pickerCursor = max(0, pickerCursor - 1)
        case .char("g"), .home: pickerCursor = 0
        case .char("G"), .end: pickerCursor = max(0, tables.count - 1)
        case .enter, .char("l"), .right:
            guard pickerCursor < tables.count else { return [] }
            let name = tables[pickerCursor].name
            // As it was left: its filter, sort and row.
            let view = remembered[name]
            return [.open(table: name, filter: view?.filter ?? "", sort: view?.sort, cursor: view?.cursorRow ?? 0)]
        case .char("q"), .ctrl("c"): quit = true
        case .char("?"): mode = .help(scroll: 0)
        default: say(Self.unknownKey(key), error: true)
        }
        return []
    }

    /// What a key that means nothing here says: its name, and where the keys are listed.
    static func unknownKey(_ key: Key) -> String {
        "unknown key \(KeyNotation.displayName(key)): ? lists the keys"
    }

    mutating func gridKey(_ key: Key) -> [Effect] {
        let page = gridHeight
        if eagerActive, key == .escape || key == .char("M") { return [.stopEager] }
        message = nil
        if sheet != .table, let why = refusal(onDerivedSheet: key) {
            say(why, error: true)
            return []
        }
        if let effects = columnKey(key) { return effects }
        switch key {
        case .char("j"), .down: move(to: cursorRow + 1)
        case .char("k"), .up: move(to: cursorRow - 1)
        case .char("c"): openPrompt(.column)
        case .char("h"), .left: cursorColumn -= 1; scrollToCursor()
        case .char("l"), .right: cursorColumn += 1; scrollToCursor()
        case .pageDown, .char(" "), .ctrl("f"):
            topRow = min(topRow + page, max(0, count - page))
            cursorRow = min(cursorRow + page, max(0, count - 1))
            scrollToCursor()
        case .pageUp, .char("b"), .ctrl("b"):
            topRow = max(0, topRow - page)
            cursorRow = max(0, cursorRow - page)
            scrollToCursor()
        case .ctrl("d"): topRow = min(topRow + page / 2, max(0, count - page)); move(to: cursorRow + page / 2)
        case .ctrl("u"): topRow = max(0, topRow - page / 2); move(to: cursorRow - page / 2)
        case .char("g"), .home: move(to: 0)
        case .char("G"), .end: move(to: count - 1)
        case .char(":"): openPrompt(.goToRow)
        case .char("/") where onStoreColumn, .char("n") where onStoreColumn, .char("N") where onStoreColumn,
             .char("s") where onStoreColumn, .char("S") where onStoreColumn:
            say("\(Self.storeColumn) names the file each row comes from: it cannot be sorted or searched; l moves to a table column", error: true)
        case .char("/"): openPrompt(.search)
        case .char("n"), .char("N"):
            guard let text = lastSearch, let column = currentColumnName else { say("no search yet: / searches the current column", error: true); return [] }
            return [.search(column: column, text: text, from: cursorRow, backwards: key == .char("N"))]
        case .char("f"): openPrompt(.filter, text: filter)
        case .char("s"), .char("S"):
            guard let column = currentColumnName, let table else { return [] }
            return [.open(table: table, filter: filter, sort: SortDescriptor(column: column, ascending: key == .char("s")))]
        case .enter:
            if frequencySheet != nil { return openValueKey() }
            if summarySheet != nil { return jumpToColumnKey() }
            return enterOnTable()
        case .char("R"):
            return referencingKey()
        case .char("y"), .char("Y"):
            return copyKey(cell: key == .char("Y"))
        case .char("F"):
            return frequencyKey()
        case .char("I"):
            return summaryKey()
        case .char("B"):
            return binKey()
        case .char("Q"):
            return sqlKey()
        case .char("r") where sheet != .table:
            return recountKey()
        case .char("r"):
            // With no result (its open was cancelled), r asks for it again.
            guard resultID == nil else {
                beginEdit(.reloading(table: table ?? ""))
                return [.reload]
            }
            return table.map { [.open(table: $0, filter: filter, sort: sort)] } ?? []
        case .char("q") where !sheets.isEmpty, .escape where !sheets.isEmpty:
            return popSheet()
        case .char("q"), .ctrl("c"): quit = true
        case .escape:
            // The table list keeps this table's filter, sort and row: Enter brings them back.
            if !tables.isEmpty { remember(); mode = .picker; return [.listTables] }
        case .char("?"): mode = .help(scroll: 0)
        case .char("m"):
            memoryPanel.toggle()
            scrollToCursor()
            return memoryPanel ? [.sampleMemory] : []
        case .char("M"):
            if eagerLoaded != nil { return [.stopEager] }
            return [.startEager]
        case .char("v") where frequencySheet != nil:
            markValueKey()
        case .char("V") where frequencySheet != nil:
            markAllValuesKey()
        case .char("v"):
            guard let resultID, let id = snapshot(cursorRow)?.id else { return [] }
            if allMarked {
                say("every row is marked; V unmarks them")
                return []
            }
            var m = currentMarks ?? Marks(result: resultID)
            if m.ids.contains(id) { m.ids.remove(id) } else { m.ids.insert(id) }
            marks = m
            move(to: cursorRow + 1)
        case .char("V"):
            guard let resultID else { return [] }
            let all = !allMarked
            marks = all ? Marks(result: resultID, all: true) : nil
            say(all ? "marked all \(rows(count)) of this result" : "unmarked every row")
        case .char("D"):
            if let why = readOnlyReason { say("D does nothing: \(why)", error: true); return [] }
            guard count > 0, let target = editTarget else { say("nothing to delete"); return [] }
            beginEdit(.countingDelete(table: target.table))
            return [.countDelete(target)]
        case .char("U"):
            if let why = readOnlyReason { say("U does nothing: \(why)", error: true); return [] }
            guard count > 0 else { say("nothing to update"); return [] }
            openPrompt(.assignments)
        case .char("e"):
            return editCellKey()
        case .char("T"):
            pickEditTable()
        case .char("u"):
            if let why = readOnlyReason { say("u does nothing: \(why)", error: true); return [] }
            // What it would take back is read first and asked about, as D and U ask.
            beginEdit(.readingUndo)
            return [.countUndo]
        default: say(Self.unknownKey(key), error: true)
        }
        return []
    }


    /// `T`: on a query's result whose rows name several tables' rows, D, U and e act on the next.
    mutating func pickEditTable() {
        if let why = readOnlyReason { say("T does nothing: \(why)", error: true); return }
        guard let table, sheet == .table, let through = links[table]?.editTables, !through.isEmpty else {
            say("T picks the table D, U and e act on in a query's result (--query); this sheet's edits act on its own rows", error: true)
            return
        }
        let now = editedTable(of: table)
        let next = through[((through.firstIndex { $0.table == now } ?? 0) + 1) % through.count]
        pickedEditTables[table] = next.table
        let others = through.count > 1 ? " (T: \(through.count - 1) other \(through.count == 2 ? "table" : "tables"))" : " (the only table this query's rows name)"
        say("D, U and e act on \(next.table): the rows named by \(next.keyAttributes.joined(separator: ", "))\(others)")
    }
}
