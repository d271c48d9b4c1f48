import BatchStore
import Foundation
import TerminalCore

extension BrowserState {
    /// Applies `action` and says what must be fetched or run.
    package mutating func reduce(_ action: Action) -> [Effect] {
        var effects: [Effect] = []
        if running == nil, case .key = action { promptOpenedDuringWork = false }
        // A prompt opened while a result loads (`:`, `/`, `f` over its first rows) takes its keys
        // at once: editing, Esc (which closes it; the load goes on), and `:N` Enter for a row
        // among those on screen; any other Enter waits for the load, and acts when it ends.
        if let running, case .key(let key) = action, promptOpenedDuringWork, case .prompt(let kind, _) = mode {
            if key == .escape || key == .ctrl("c") {
                // Closes the prompt, as in any prompt, and drops its Enter if it waits (and any
                // key typed after it): the load goes on; a second Esc cancels it.
                queuedKeys.removeAll()
                mode = .grid
                promptOpenedDuringWork = false
                return []
            }
            guard queuedKeys.isEmpty else {
                if queuedKeys.count < Self.keyQueueLimit { queuedKeys.append(key) }
                return []
            }
            if key == .enter {
                if kind == .goToRow, let moved = jumpAtOnce(during: running) { return moved }
                queuedKeys.append(key)
                // Row N past the rows on screen: read from the engine's OFFSET at once, shown
                // until the load ends and the Enter lands there.
                if kind == .goToRow, running == .opening, let peek = askForRows(at: mode) { return [peek] }
                return []
            }
            var trial = self
            trial.running = nil
            let effects = trial.handle(key)
            trial.running = running
            trial.promptOpenedDuringWork = true
            self = trial
            if case .prompt = mode {} else { promptOpenedDuringWork = false }
            return effects
        }
        if let running, case .key(let key) = action {
            // While work runs, Esc, Ctrl-C and q cancel it at once (an Alt key is Esc read
            // together with the key after it: the Esc still cancels); every other key is kept,
            // in order, and acts once the work has ended: nothing typed is lost.
            let alt: Bool
            if case .alt = key { alt = true } else { alt = false }
            guard key == .escape || key == .ctrl("c") || key == .char("q") || alt else {
                // G (End) while the IDs load: the last rows of the order at once, read by a
                // reversed LIMIT query on another connection; the key itself waits, and puts the
                // cursor on the last row, exactly, once the count is known.
                if running == .opening, firstRowsShown, queuedKeys.isEmpty, key == .char("G") || key == .end, let peek = askForTail() {
                    queuedKeys.append(key)
                    return [peek]
                }
                // `:`, `/` and `f` over a loading result's first rows open their prompt at once.
                if running == .opening, firstRowsShown, queuedKeys.isEmpty, mode == .grid, key == .char(":") || key == .char("/") || key == .char("f") {
                    var trial = self
                    trial.running = nil
                    let effects = trial.handle(key)
                    trial.running = running
                    if effects.isEmpty, case .prompt = trial.mode {
                        self = trial
                        promptOpenedDuringWork = true
                        return []
                    }
                }
                // A key whose work replaces the work under way (a sort replaces a load or a
                // search; n and N a search) cancels it instead of waiting behind it, and acts
                // as soon as the cancel has landed.
                if queuedKeys.isEmpty, supersedingOpen == nil, let replacement = replacingSort(key, running) {
                    supersedingOpen = replacement
                    return [.cancel]
                }
                // Keys typed after such a sort are meant for the sorted result: they wait for it
                // (never act over the rows of the load being cancelled).
                if supersedingOpen != nil {
                    if queuedKeys.count < Self.keyQueueLimit { queuedKeys.append(key) }
                    return []
                }
                // A key that only moves over rows on screen or arranges columns acts at once,
                // when no key typed before it still waits (keys act in the order typed).
                if queuedKeys.isEmpty, actAtOnce(key, during: running) { return [] }
                if queuedKeys.count < Self.keyQueueLimit { queuedKeys.append(key) }
                return []
            }
            if running == .opening, key != .escape { quitWhenCancelled = true }
            if running == .editing { editCancelRequested = true }
            return [.cancel]
        }
        switch action {
        case .key(let key):
            effects = handle(key)
        case .typed(let text):
            guard running == nil, case .prompt(let kind, var line) = mode, kind != .copyRows, kind != .copyCell else {
                // Not a text prompt (any more): the characters as the keys they are.
                for c in text { effects += reduce(.key(.char(c))) }
                break
            }
            historyWalk = nil
            line.insert(text)
            mode = .prompt(kind, line: line)
        case .started(let work):
            running = work
        case .resized(let w, let h):
            width = max(1, w)
            height = max(1, h)
            scrollToCursor()
            layOutTextSheet()
        case .tablesListed(let list):
            // Known counts stay on screen; a table is counted again only when the data changed
            // since its count (another writer: the data version moved) or this browser edited it.
            var known: [String: TableEntry] = [:]
            for t in tables { known[t.name] = t }
            tables = list.map { entry in
                var e = entry
                if let before = known[e.name], let n = before.count {
                    e.count = n
                    let fresh = before.version != nil && before.version == e.version && !staleCounts.contains(e.name)
                    if !fresh { e.recount = true }
                } else {
                    e.recount = true
                }
                return e
            }
            staleCounts.subtract(list.map(\.name))
            pickerCursor = min(pickerCursor, max(0, list.count - 1))
            mode = .picker
            effects = nextCount(after: -1).map { [.countTable(index: $0)] } ?? []
        case .tableCounted(let index, let n):
            if index < tables.count { tables[index].count = n; tables[index].recount = false }
            effects = nextCount(after: index).map { [.countTable(index: $0)] } ?? []
        case .tableCountFailed(let index, let reason):
            if index < tables.count { tables[index].countFailure = reason; tables[index].recount = false }
            effects = nextCount(after: index).map { [.countTable(index: $0)] } ?? []
        case .opened(let t, let cols, let f, let s, let n, let cursor, let readOnly, let msg, let result, let kept, let pushed, let tableLinks):
            running = nil
            // A reload that had to open the result again (its session lost) ends here too.
            editing = nil
            editCancelRequested = false
            submitted = nil
            links[t] = tableLinks
            shownBefore = nil
            if pushed {
                // A new sheet over this one (Enter on a frequency sheet's value): this one waits below.
                sheets.append(SavedSheet(self))
                sheet = .table
                marks = nil
            }
            // q (or Ctrl-C) came while loading, but the load finished before it could cancel: quit all the same.
            if quitWhenCancelled { quit = true }
            quitWhenCancelled = false
            readOnlyReason = readOnly
            if !pushed, let table, table != t { remember() }
            let newColumns = table != t || columns != cols
            let note = rebaseMarks(to: kept, result: result)
            table = t
            columns = cols
            // The same table's columns keep their arrangement (hidden, widths, order, frozen).
            if newColumns { arrangeColumns(of: t) }
            filter = f
            sort = s
            count = n
            loading = nil
            if mode == .picker { mode = .grid }
            // Where a key put the cursor over the first rows while the rest loaded, it stays.
            cursorRow = min(max(0, cursorMovedWhileLoading ? cursorRow : cursor), max(0, n - 1))
            firstRowsShown = false
            cursorMovedWhileLoading = false
            endTail()
            windowValid = false
            if let msg { say(msg + (note.map { "; " + $0 } ?? "")) } else if let note { say(note) }
            scrollToCursor()
        case .openingFirstRows(let t, let cols, let rows):
            if shownBefore == nil { shownBefore = ShownResult(self) }
            // No result is on screen until the IDs are fetched: no marks apply meanwhile.
            resultID = nil
            // A new filter or sort of the same table keeps the cursor's column.
            let newColumns = table != t || columns != cols
            table = t
            columns = cols
            if newColumns { arrangeColumns(of: t) }
            mode = .grid
            count = rows.count
            cursorRow = 0
            topRow = 0
            windowStart = 0
            window = rows
            windowValid = true
            loading = 0
            loadingRows = 0
            loadingSeconds = 0
            firstRowsShown = true
            cursorMovedWhileLoading = false
            // Keys typed before the first rows showed, in order: those that move over them act
            // now, G asks for the last rows; the first that cannot act yet waits, with the rest.
            if let work = running {
                while let key = queuedKeys.first {
                    if key == .char("G") || key == .end {
                        if let peek = askForTail() { effects.append(peek) }
                        break
                    }
                    queuedKeys.removeFirst()
                    guard actAtOnce(key, during: work) else { queuedKeys.insert(key, at: 0); break }
                }
            }
        case .loadingRequest(let t, let f, let sorts):
            loadingRequest = LoadingRequest(table: t, filter: f, sorts: sorts)
        case .tailRows(let rows):
            // Late (the fetch ended first): the ID table's own rows are on screen by now.
            if running == .opening, tailRequested { tailRows = rows; tailStart = nil }
        case .offsetRows(let start, let rows):
            // Shown while the load runs and the `:N` that asked for them still waits.
            if running == .opening, offsetRequested == start, !rows.isEmpty { tailRows = rows; tailStart = start }
        case .loadProgress(let fraction, let rows, let seconds):
            loading = fraction ?? -1
            loadingRows = rows
            loadingSeconds = seconds
        case .openCancelled(let t, let cols, let f, let s):
            running = nil
            submitted = nil
            firstRowsShown = false
            cursorMovedWhileLoading = false
            endTail()
            // A reload that fell back to opening the result again (a lost session) ends here too.
            if editing != nil { endEdit() }
            (shownBefore ?? ShownResult(self)).restore(into: &self)
            shownBefore = nil
            if resultID == nil {
                // Nothing to go back to: keep what was asked for, so `r` asks again.
                table = t
                columns = cols
                filter = f
                sort = s
                count = 0
                mode = .grid
            }
            scrollToCursor()
            say(resultID == nil ? "loading cancelled: r loads it again" : "loading cancelled: still showing the previous result")
            if quitWhenCancelled { quit = true }
            quitWhenCancelled = false
        case .windowLoaded(let start, let rows):
            windowStart = start
            window = rows
            windowValid = true
            scrollToCursor()
        case .windowFailed(let range, let why):
            windowStart = range.lowerBound
            var unread = RowSnapshot(id: nil, values: [], exists: false)
            unread.unreadable = true
            window = Array(repeating: unread, count: range.count)
            windowValid = true
            say("cannot read these rows: \(why); r reads them again, q quits", error: true)
        case .textLoaded(let text):
            pushTextSheet(text)
        case .searchFound(let row, let text, let wrapped, let column):
            running = nil
            submitted = nil
            lastSearch = text
            if let row {
                cursorRow = row
                scrollToCursor()
                let known = matchCount.flatMap { $0.column == column && $0.text == text && $0.result == resultID ? $0.count : nil }
                say(searchMessage(text, wrapped: wrapped, matches: known))
                if known == nil, !column.isEmpty, let table, frequencySheet == nil, summarySheet == nil {
                    effects.append(.countMatches(table: table, filter: filter, column: column, text: text, result: resultID))
                }
            } else {
                say("not found: \(text)", error: true)
            }
        case .matchCount(let column, let text, let result, let n):
            guard result == resultID else { break }
            matchCount = MatchCount(column: column, text: text, result: result, count: n)
            // The status line still shows that search: it gains the count.
            for wrapped in [false, true] where message == searchMessage(text, wrapped: wrapped, matches: nil) {
                say(searchMessage(text, wrapped: wrapped, matches: n))
            }
        case .searchProgress(let text, let n, let seconds):
            // The time so far always; the rows looked at where SQLite counts them.
            let looked = n > 0 ? ", \(rows(n)) looked at" : ""
            say("searching for \(TerminalText.escapingControlCharacters(text)): \(String(format1: seconds)) s\(looked) (Esc cancels the search)")
        case .searchCancelled:
            running = nil
            submitted = nil
            say("search cancelled: still on row \(group(cursorRow + 1))")
        // What ended, came or failed in the background: settled in BrowserState+Outcomes.swift.
        case .frequencyOpened, .frequencyPreview, .frequencyProgress, .frequencyBinned, .frequencyCancelled, .summaryRow,
             .summaryProgress, .summaryEnded, .editProgress, .editCancelled, .countedForDelete, .countedForUpdate, .cellLoaded,
             .countedForUndo, .parentRefreshed, .frequencyRecounted, .recountCancelled, .edited, .failed, .failedAt,
             .historyLoaded, .historyNotSaved, .info, .memorySampled, .eagerProgress, .eagerStopped, .writeProgress, .clipboard,
             .writeEnded, .fileChanged, .fileGone, .fileReloaded:
            settle(action)
        }
        if table != nil, loading == nil, mode != .picker, textSheet == nil {
            let needed = visibleRows
            let covered = windowValid && windowStart <= needed.lowerBound && windowStart + window.count >= needed.upperBound
            if !covered { effects.append(.loadWindow(needed)) }
        }
        // A sort typed during a load or a search runs once that work has ended, the cursor on
        // the column it sorts (whatever the cancel restored), and says so.
        if running == nil, let open = supersedingOpen {
            supersedingOpen = nil
            if case .open(_, _, let sort?, _, _) = open {
                if let index = columns.firstIndex(of: sort.column), let position = columnView.shown.firstIndex(of: index) { cursorColumn = position }
                say("sorting by \(sort.column) \(sort.ascending ? "asc" : "desc") instead")
            }
            effects.append(open)
        }
        return effects
    }
}
