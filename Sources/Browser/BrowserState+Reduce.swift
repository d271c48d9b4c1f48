import BatchStore
import TerminalCore

/// Something that happened: a key, or data an effect brought back.
public enum Action: Sendable {
    case key(Key)
    /// Characters typed in one burst into a prompt that edits text (a paste): inserted at once,
    /// as the same keys one by one would insert them.
    case typed(String)
    case resized(width: Int, height: Int)
    case tablesListed([TableEntry])
    case tableCounted(index: Int, count: Int)
    /// A table of the list could not be counted: why, and the counting goes on with the next.
    case tableCountFailed(index: Int, reason: String)
    /// A result opened: its table, columns, filter, sort and row count; `result` numbers it, and
    /// `marks` are the previous marks whose rows are in it (the session checked, in its ID table).
    case opened(table: String, columns: [String], filter: String, sort: BatchStore.SortDescriptor?, count: Int, cursor: Int, readOnly: String?, message: String?,
                result: Int = 0, marks: Marks? = nil, pushed: Bool = false, links: TableLinks = .none)
    /// A frequency sheet was counted: `values` distinct values of `column` over `total` rows.
    case frequencyOpened(column: String, values: Int, total: Int, result: Int, seconds: Double)
    /// A large result's frequency sheet, first from an even sample of `sampled` of its `total`
    /// rows: `values` values seen, and the first rows (counts scaled, marked ≈) while the exact
    /// count runs on (``frequencyOpened`` replaces it).
    case frequencyPreview(column: String, values: Int, total: Int, sampled: Int, rows: [RowSnapshot])
    /// Progress of a frequency sheet's GROUP BY: seconds so far and rows read.
    case frequencyProgress(column: String, seconds: Double, rows: Int)
    /// A frequency sheet's GROUP BY was cancelled: the table sheet stays as it was.
    case frequencyCancelled(column: String)
    /// The frequency sheet on screen was counted again in bins of `width` (nil: each value alone).
    case frequencyBinned(width: Int64?, values: Int, total: Int, result: Int, seconds: Double)
    /// Column `index` of the summary of result `result` was computed.
    case summaryRow(index: Int, figures: ColumnSummary, result: Int)
    /// Progress of a summary: column `index` of `of` (named `column`) is being computed, `seconds` so far.
    case summaryProgress(index: Int, of: Int, column: String, seconds: Double)
    /// A summary finished (`done` columns computed) or was cancelled.
    case summaryEnded(done: Int, of: Int, seconds: Double, cancelled: Bool)
    /// An open or a search began: until it ends, Esc, Ctrl-C and q cancel it and other keys do nothing.
    case started(Work)
    /// The first rows of a result whose IDs are still being fetched.
    case openingFirstRows(table: String, columns: [String], rows: [RowSnapshot])
    /// What the open under way fetches (its table, filter and sort keys): `G` during the fetch
    /// reads the last rows of that order on another connection.
    case loadingRequest(table: String, filter: String, sorts: [BatchStore.SortDescriptor])
    /// The last rows of the loading result's order, first to last, read outside its ID table
    /// (``Effect/peekLast(table:filter:sorts:count:)``): shown until the fetch ends, never marked or edited.
    case tailRows([RowSnapshot])
    /// Rows read outside the ID table from 0-based position `start` (``Effect/peekRows(table:filter:sorts:offset:count:)``).
    case offsetRows(start: Int, rows: [RowSnapshot])
    case loadProgress(fraction: Double?, rows: Int, seconds: Double = 0)
    /// An open was cancelled: the previous result comes back, or (with none) what was asked for,
    /// empty, so `r` asks again.
    case openCancelled(table: String, columns: [String], filter: String, sort: BatchStore.SortDescriptor?)
    case windowLoaded(start: Int, rows: [RowSnapshot])
    /// The rows of `range` could not be read (the file went, the server session was lost): they
    /// show as unreadable, and the message says why and that `r` reads them again.
    case windowFailed(Range<Int>, String)
    /// A record (Enter) or the SQL (`Q`) to show as a text sheet over the one on screen.
    case textLoaded(TextSheet)
    case searchFound(row: Int?, text: String, wrapped: Bool, column: String = "")
    /// How many rows of `result` hold `text` in `column` (``Effect/countMatches(table:filter:column:text:result:)``).
    case matchCount(column: String, text: String, result: Int?, count: Int)
    /// Progress of a search that takes a while: rows of the result looked at so far.
    /// `rows` is 0 when SQLite does not count them (a search over a range of the ID table).
    case searchProgress(text: String, rows: Int, seconds: Double = 0)
    /// A search was cancelled: the cursor stays where it was.
    case searchCancelled
    /// The working line of an edit key (``BrowserState/editing``): seconds so far.
    case editProgress(seconds: Double)
    /// The edit key's work (a count, an edit, an undo, a reload) was cancelled before it
    /// committed: nothing was changed.
    case editCancelled
    /// `D`'s count; `noUndo` says why `u` could not take the delete back (nil: it could).
    case countedForDelete(Int, target: EditTarget, noUndo: String? = nil)
    /// `U`'s count; `noUndo` says why `u` could not take the update back (nil: it could).
    case countedForUpdate(rows: Int, assignments: String, target: EditTarget, noUndo: String? = nil, preview: UpdatePreview? = nil)
    /// What `u` would take back (read from its journal), for its question.
    case countedForUndo(UndoSummary)
    /// `e`'s cell read from the file: its prompt opens holding the value as a literal.
    case cellLoaded(CellTarget)
    /// A batch operation, undo or reload finished: the new count, where the cursor goes, what to
    /// say, and the marks still in the result (nil: none, as after an edit); `fileEdited` for an
    /// edit or undo (the sheets below may be out of date), not for a reload.
    case edited(count: Int, cursor: Int, message: String, marks: Marks? = nil, fileEdited: Bool = true)
    /// The result under the frequency or summary sheet on screen was fetched again: its count,
    /// cursor and marks; `edited` when an edit from this sheet came first.
    case parentRefreshed(count: Int, cursor: Int, marks: Marks?, edited: Bool)
    /// The frequency sheet on screen was counted again: `values` values over `total` rows, its
    /// cursor on the value it was on (if still there).
    case frequencyRecounted(values: Int, total: Int, result: Int, cursor: Int, message: String)
    /// Counting a sheet again was cancelled: its figures are out of date (`r` counts again);
    /// `parentStale` when the result under it could not be read again either (every sheet below
    /// is read again on return).
    case recountCancelled(String, parentStale: Bool = false)
    case failed(String)
    /// A failure at a position of the text a prompt ran (a predicate, assignments): the 1-based
    /// Unicode-scalar column the error names.
    case failedAt(String, column: Int)
    /// The history file read at start (and what was wrong with it, said once).
    case historyLoaded(PromptHistory, problem: String?)
    /// An entry could not be added to the history file.
    case historyNotSaved(String)
    case info(String)
    case memorySampled(MemorySnapshot)
    case eagerProgress(loaded: Int, done: Bool)
    case eagerStopped(String)
    /// Progress of `:w` or `y`: rows written so far of `of`, seconds so far.
    case writeProgress(path: String, rows: Int, of: Int, seconds: Double)
    /// A write (`:w`, `y`) finished, failed or was cancelled: what to say.
    case writeEnded(String, error: Bool)
    /// Text for the terminal's clipboard, base64 (the session sends it as OSC 52, then reduces nothing).
    case clipboard(base64: String)
    case fileChanged
    /// The file on screen is no longer the one at its path (deleted, replaced): said once.
    case fileGone(String)
    /// A reload read the file again: the result is current.
    case fileReloaded

    /// ``opened(table:columns:filter:sort:count:cursor:readOnly:message:result:marks:)`` with the
    /// sort as a column and a direction (tests).
    @_disfavoredOverload
    package static func opened(table: String, columns: [String], filter: String, sort: (column: String, ascending: Bool)?, count: Int, cursor: Int,
                               readOnly: String?, message: String?, result: Int = 0, marks: Marks? = nil) -> Action {
        .opened(table: table, columns: columns, filter: filter, sort: sort.map { SortDescriptor(column: $0.column, ascending: $0.ascending) },
                count: count, cursor: cursor, readOnly: readOnly, message: message, result: result, marks: marks)
    }
}

extension SortDescriptor {
    /// A sort on one column (whose name may contain dots).
    package init(column: String, ascending: Bool) {
        self.init(keyPath: [column], ascending: ascending)
    }

    /// The column sorted on, as the status line names it.
    package var column: String { keyPath.joined(separator: ".") }
}

/// Work for the outside world (SQLite, the clock); its results come back as actions.
public enum Effect: Sendable, Equatable {
    case listTables
    case countTable(index: Int)
    /// Fetches a result; `thenBy` are further sort keys (from the command line), kept for this
    /// fetch only.
    case open(table: String, filter: String, sort: BatchStore.SortDescriptor?, cursor: Int = 0, thenBy: [BatchStore.SortDescriptor] = [])
    case loadWindow(Range<Int>)
    /// The last `count` rows of `table` filtered and sorted so, by the engine's own top-N on a
    /// second connection (or session), while the main one fetches the IDs: `G` during a load.
    case peekLast(table: String, filter: String, sorts: [BatchStore.SortDescriptor], count: Int)
    /// The number of rows of `table` under `filter` whose `column`, as text, contains `text`
    /// (case-insensitive, as `/` finds), counted on the second connection after a search found
    /// its first match: the count the status line gives.
    case countMatches(table: String, filter: String, column: String, text: String, result: Int?)
    /// `count` rows of `table` filtered and sorted so from 0-based position `offset`, by the
    /// engine's `LIMIT … OFFSET` on the second connection, while the main one fetches the IDs:
    /// `:N` during a load, for a row past those on screen.
    case peekRows(table: String, filter: String, sorts: [BatchStore.SortDescriptor], offset: Int, count: Int)
    /// The record at `row` of the result on screen, every value whole, for a text sheet.
    case loadRecord(row: Int)
    /// The SQL result `result` runs (its ID fetch, and the fault of the batch holding `row`; on a
    /// frequency sheet its GROUP BY and the read of the page from `row`).
    case loadSQL(result: Int, row: Int)
    case search(column: String, text: String, from: Int, backwards: Bool)
    case countDelete(EditTarget)
    /// The delete `y` confirmed; `undo`: its question promised undo (the run then fails,
    /// changing nothing, rather than go on without it).
    case runDelete(EditTarget, undo: Bool = true)
    case countUpdate(assignments: String, target: EditTarget)
    case runUpdate(assignments: String, target: EditTarget, undo: Bool = true)
    /// Reads what ``undo`` would take back, for `u`'s question.
    case countUndo
    /// Reads the cell at `row` and `column` of result `result` whole, for `e`'s prompt.
    case loadCell(row: Int, column: String, result: Int)
    case undo
    case reload
    case startEager
    case stopEager
    case sampleMemory
    /// Stops the open or search that is running (``BrowserState/running``).
    case cancel
    /// Counts the values of `column` over result `result` (the table sheet on screen) into a
    /// frequency sheet.
    case frequency(column: String, result: Int)
    /// Opens the frequency sheet's parent table filtered to the value at `row`, as a new sheet.
    case openValue(row: Int, of: FrequencySheet)
    /// Opens, as a new sheet, the rows `reference` relates to the row at `row` of result `result`:
    /// the parent row it refers to, or (`toMany`) the child rows that refer to it.
    case openRelated(Reference, toMany: Bool, row: Int, result: Int)
    /// `:w FILE` (`:w! FILE` with `overwrite`): result `result` streamed to FILE.
    case write(path: String, overwrite: Bool, result: Int)
    /// `y` / `Y`: rows or a cell copied to the clipboard (OSC 52, when enabled) or a file.
    case copy(CopyRequest)
    /// Counts the frequency sheet's column again in the next bin width after `width` (from the
    /// column's range; after the widest, none).
    case binFrequency(column: String, after: Int64?)
    /// The sheet on screen (of this role) was closed: the data goes back to the one under it.
    case closeSheet(SheetRole)
    /// Summarises each of `columns` over result `result` in turn, for the summary sheet.
    case summarize(columns: [String], result: Int)
    /// The frequency or summary sheet on screen counted again as the file is now: the result it
    /// counts is fetched again first (`r`, or coming back to it after an edit).
    case recount(SheetRole)
    /// Adds `text` to `kind`'s entries in the history file (when the session keeps one).
    case saveHistory(kind: PromptKind, text: String)
}

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
        case .frequencyOpened(let column, let values, let total, let result, let seconds):
            pushFrequencySheet(column: column, values: values, total: total, result: result, seconds: seconds)
        case .frequencyPreview(let column, let values, let total, let sampled, let rows):
            pushFrequencyPreview(column: column, values: values, total: total, sampled: sampled, rows: rows)
        case .frequencyProgress(let column, let seconds, let n):
            let note = frequencySheet?.sampledFrom.map { "; ≈ figures are of an even sample of \(group($0)) rows until then" } ?? ""
            // PostgreSQL does not say how many rows a statement has read so far.
            let read = engineName == "SQLite" ? ", \(rows(n)) read" : ""
            say("counting the values of \(column): \(String(format1: seconds)) s\(read)\(note) (Esc cancels)")
        case .frequencyBinned(let width, let values, let total, let result, let seconds):
            binnedFrequencySheet(width: width, values: values, total: total, result: result, seconds: seconds)
        case .frequencyCancelled(let column):
            running = nil
            // A sample's sheet goes with the count it stood in for.
            if frequencySheet?.sampledFrom != nil, let parent = sheets.popLast() {
                parent.restore(into: &self)
                mode = .grid
                scrollToCursor()
            }
            say("counting \(column) cancelled: still on \(table ?? "the table")")
        case .summaryRow(let index, let figures, let result):
            fillSummary(index: index, with: figures, result: result)
        case .summaryProgress(let index, let n, let column, let seconds):
            let sampled = summarySheet?.rows.contains { $0?.sampledFrom != nil } ?? false
            let note = sampled ? "; ≈ figures are of an even sample of \(group(summarySheet?.rows.lazy.compactMap { $0?.sampledFrom == nil ? nil : $0?.rows }.first ?? 0)) rows until then" : ""
            say("summarising \(column), column \(group(index + 1)) of \(group(n)): \(String(format1: seconds)) s\(note) (Esc cancels)")
        case .summaryEnded(let done, let n, let seconds, let cancelled):
            running = nil
            if cancelled {
                say("summary cancelled after \(group(done)) of \(counted(n, "column")): Esc goes back")
            } else {
                say("\(counted(n, "column")) summarised by \(engineName) in \(milliseconds(seconds)); Enter goes to a column, F counts its values, Esc goes back")
            }
        case .editProgress(let seconds):
            if let editing { say(editing.line(seconds: seconds)) }
        case .editCancelled:
            submitted = nil
            let step = endEdit()
            if case .reloading = step {
                say("reload cancelled: still showing the result as it was")
            } else {
                say("\(step?.noun ?? "edit") cancelled: nothing was changed")
            }
        case .countedForDelete(let n, let target, let noUndo):
            // Esc came once the count was done: ask nothing.
            if endEdit(cancelled: "delete") { break }
            // A count for anything but what D would act on now is stale: ask nothing.
            guard target == editTarget else { message = nil; break }
            message = nil
            mode = .confirm(.delete(rows: n, target: target, noUndo: noUndo))
        case .countedForUpdate(let n, let text, let target, let noUndo, let preview):
            submitted = nil
            if endEdit(cancelled: "update") { break }
            // e's target is its cell, asked for on this result; others what U would act on now.
            guard target.cell.map({ $0.result == resultID }) ?? (target == editTarget) else { message = nil; break }
            cellEdit = nil
            message = nil
            if let cell = target.cell, n == 0 {
                // The row went (another program deleted it, or it left the result): nothing to ask.
                say("row \(group(cell.row + 1)) is no longer in \(target.table): nothing was changed; r reloads")
                break
            }
            mode = .confirm(.update(rows: n, assignments: text, target: target, noUndo: noUndo, preview: preview))
        case .cellLoaded(let cell):
            // Only while that row of that result is still the cursor's and nothing else was asked.
            guard mode == .grid, cell.result == resultID, cell.row == cursorRow, snapshot(cursorRow)?.id == cell.id else { break }
            cellEdit = cell
            message = nil
            openPrompt(.cellEdit, text: cell.old)
        case .countedForUndo(let summary):
            if endEdit(cancelled: "undo") { break }
            // Asked only from a grid (a key since then that left it: ask nothing).
            guard mode == .grid else { message = nil; break }
            message = nil
            mode = .confirm(.undo(summary))
        case .parentRefreshed(let n, let cursor, let kept, let edited):
            // The result below was read as the file is now: another writer's change is in it.
            fileChanged = false
            // An edit from this sheet committed (a cancel now is too late: the runner says so).
            if editing != nil { endEdit() }
            parentRefreshed(count: n, cursor: cursor, marks: kept, edited: edited)
        case .frequencyRecounted(let values, let total, let result, let cursor, let msg):
            if editing != nil { endEdit() }
            frequencyRecounted(values: values, total: total, result: result, cursor: cursor, message: msg)
        case .recountCancelled(let msg, let parentStale):
            if editing != nil { endEdit() }
            running = nil
            stale = true
            // Marks were made on the counts before the edit: they do not carry over to the next one.
            marks = nil
            if parentStale { for i in sheets.indices { sheets[i].stale = true } }
            mode = .grid
            say(msg)
        case .edited(let n, let cursor, let msg, let kept, let fileEdited):
            // Esc came after the edit committed: it stands, and the message says so.
            let tooLate = editCancelRequested && editing != nil
            endEdit()
            // An edit may have changed the rows of every sheet below: each is read again on return.
            if fileEdited { for i in sheets.indices { sheets[i].stale = true } }
            stale = false
            count = n
            cursorRow = min(max(0, cursor), max(0, n - 1))
            // An edit of marked rows (or of the result) clears the marks: its rows are done with.
            // A reload, and a cell edit (one row, whatever is marked), keep those still in the result.
            var note: String?
            if kept == nil { marks = nil } else if let resultID { note = rebaseMarks(to: kept, result: resultID) }
            windowValid = false
            mode = .grid
            say((tooLate ? "too late to cancel: " : "") + msg + (note.map { "; " + $0 } ?? ""))
            scrollToCursor()
        case .failed(let msg):
            fail(msg, column: nil)
        case .failedAt(let msg, let column):
            fail(msg, column: column)
        case .historyLoaded(let loaded, let problem):
            history = loaded
            if let problem { say(problem, error: true) }
        case .historyNotSaved(let why):
            // Said once; an error on screen (what the prompt ran failed) is not covered by it.
            if !historySaveFailed, !(messageIsError && message != nil) {
                say("the prompt history was not saved: \(why)", error: true)
                historySaveFailed = true
            }
        case .info(let msg):
            if editing != nil { endEdit() }
            say(msg)
        case .memorySampled(let m):
            memory = m
            rssHistory.append(m.rss)
            if rssHistory.count > 240 { rssHistory.removeFirst(rssHistory.count - 240) }
        case .eagerProgress(let n, let done):
            eagerLoaded = n
            eagerActive = !done
            if done { say("\(n == 1 ? "the 1 row is" : "all \(rows(n)) are") in a Swift array now: see RSS; M goes back to batches") }
        case .eagerStopped(let msg):
            eagerLoaded = nil
            eagerActive = false
            say(msg)
        case .writeProgress(let path, let n, let total, let seconds):
            let percent = total > 0 ? " (\(Int(Double(n) * 100 / Double(total)))%)" : ""
            say("writing \(TerminalText.escapingControlCharacters(path)): \(group(n)) of \(rows(total))\(percent), \(String(format1: seconds)) s (Esc cancels)")
        case .clipboard:
            break
        case .writeEnded(let text, let error):
            running = nil
            say(text, error: error)
            if error { reopenSubmittedPrompt(column: nil) } else { submitted = nil }
        case .fileChanged:
            fileChanged = true
        case .fileGone(let problem):
            fileGone = true
            say("\(problem): the screen shows the old file, edits are refused; q quits", error: true)
        case .fileReloaded:
            fileChanged = false
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

    /// What failed is said; an open that fails while its IDs load leaves the previous result on
    /// screen, and a prompt whose Enter started the work comes back (at `column`, if known).
    private mutating func fail(_ msg: String, column: Int?) {
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
    private mutating func rebaseMarks(to kept: Marks?, result: Int) -> String? {
        let before = marks
        resultID = result
        marks = kept.flatMap { $0.result == result && ($0.all || !$0.ids.isEmpty) ? $0 : nil }
        guard let before, before.all || !before.ids.isEmpty else { return nil }
        if before.all, marks?.all != true { return "V's marks were for the previous result: cleared" }
        let lost = before.ids.count - (marks?.ids.count ?? 0)
        guard lost > 0 else { return nil }
        if marks == nil { return "\(counted(lost, "mark")) cleared: \(lost == 1 ? "its row is" : "the rows are") not in this result" }
        return "kept \(group(marks?.ids.count ?? 0)) of \(counted(before.ids.count, "mark")): \(lost == 1 ? "the other is" : "the others are") not in this result"
    }

    /// Keeps the open table's filter, sort and cursor row for the table list.
    private mutating func remember() {
        guard let table else { return }
        remembered[table] = TableView(filter: filter, sort: sort, cursorRow: cursorRow, columnView: columnView)
    }

    /// Starts the working line of an edit key's `step` (the effect that runs it goes out with it).
    /// The next table of the list after `index` whose count is unknown or may be stale.
    private func nextCount(after index: Int) -> Int? {
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
    private mutating func endEdit() -> EditStep? {
        defer {
            editing = nil
            editCancelRequested = false
            if running == .editing { running = nil }
        }
        return editing
    }

    /// Ends a count whose edit was cancelled after the count finished (Esc came too late to stop
    /// the count, but before the question): says so, and returns true.
    private mutating func endEdit(cancelled noun: String) -> Bool {
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
    private mutating func actAtOnce(_ key: Key, during work: Work) -> Bool {
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
    private mutating func jumpAtOnce(during work: Work) -> [Effect]? {
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
    private func replacingSort(_ key: Key, _ work: Work) -> Effect? {
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
    private mutating func askForTail() -> Effect? {
        guard let request = loadingRequest, !tailRequested else { return nil }
        tailRequested = true
        return .peekLast(table: request.table, filter: request.filter, sorts: request.sorts, count: max(1, gridHeight))
    }

    /// The read of the rows from `:N`'s row N during a load (nil: no number, or nothing loads).
    private mutating func askForRows(at mode: Mode) -> Effect? {
        guard let request = loadingRequest, case .prompt(.goToRow, let line) = mode,
              let n = Int(line.text.filter { $0 != "," && $0 != " " }), n > count else { return nil }
        offsetRequested = n - 1
        return .peekRows(table: request.table, filter: request.filter, sorts: request.sorts, offset: n - 1, count: max(1, gridHeight))
    }

    /// Forgets what an open under way fetched and the rows read for `G` or `:N` (the open ended).
    private mutating func endTail() {
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

    private mutating func move(to row: Int) {
        cursorRow = row
        scrollToCursor()
    }

    private mutating func handle(_ key: Key) -> [Effect] {
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

    private mutating func pickerKey(_ key: Key) -> [Effect] {
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

    private mutating func gridKey(_ key: Key) -> [Effect] {
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
        case .char("u"):
            if let why = readOnlyReason { say("u does nothing: \(why)", error: true); return [] }
            // What it would take back is read first and asked about, as D and U ask.
            beginEdit(.readingUndo)
            return [.countUndo]
        default: say(Self.unknownKey(key), error: true)
        }
        return []
    }

    /// Opens `kind`'s prompt holding `text`, at the newest end of its history.
    mutating func openPrompt(_ kind: PromptKind, text: String = "") {
        historyWalk = nil
        mode = .prompt(kind, line: LineEditor(text))
    }

    /// Brings back the prompt whose Enter started what just failed, holding what was typed, the
    /// cursor at `column` (1-based, in Unicode scalars) when the error names one; the error stays
    /// on screen above it.
    private mutating func reopenSubmittedPrompt(column: Int?) {
        guard let prompt = submitted else { return }
        submitted = nil
        historyWalk = nil
        mode = .prompt(prompt.kind, line: column.map { LineEditor(prompt.text, scalarColumn: $0) } ?? LineEditor(prompt.text))
    }

    private mutating func promptKey(_ key: Key, kind: PromptKind, line: LineEditor) -> [Effect] {
        var line = line
        switch key {
        case .escape, .ctrl("c"):
            mode = .grid
            cellEdit = nil
            return []
        case .ctrl("d") where line.text.isEmpty:
            mode = .grid
            return []
        case .char(let c) where kind == .copyRows || kind == .copyCell:
            return chooseCopyFormat(c, cell: kind == .copyCell)
        case .up, .down, .ctrl("p"), .ctrl("n"):
            line = walkHistory(kind, from: line, older: key == .up || key == .ctrl("p"))
        case .tab where kind == .column:
            line = LineEditor(completeColumn(line.text))
        case .enter:
            return submitPrompt(kind, text: line.text)
        default:
            guard line.apply(key) else {
                say("unknown key \(KeyNotation.displayName(key)) in a prompt: Enter runs the line, Esc cancels (then ? lists the keys)", error: true)
                return []
            }
        }
        mode = .prompt(kind, line: line)
        return []
    }

    /// Up (`older`) or Down in `kind`'s history: the entry before or after the one shown; after
    /// the newest, the line that was being typed.
    private mutating func walkHistory(_ kind: PromptKind, from line: LineEditor, older: Bool) -> LineEditor {
        let entries = history.entries(for: kind)
        let walk = historyWalk ?? HistoryWalk(index: entries.count, draft: line.text)
        let index = older ? walk.index - 1 : walk.index + 1
        guard index >= 0, index <= entries.count else {
            say(kind.historyName == nil ? "this prompt keeps no history" : older ? "no earlier \(kind.historyName ?? "") in the history" : "back at the line being typed")
            return line
        }
        historyWalk = HistoryWalk(index: index, draft: walk.draft)
        message = nil
        return LineEditor(index == entries.count ? walk.draft : entries[index])
    }

    /// Enter on `kind`'s prompt holding `text`: runs it, adds it to the history; an error said
    /// here (a row number that is not one, an unknown column, a `:w` without a file) keeps the
    /// prompt open with the text to fix.
    private mutating func submitPrompt(_ kind: PromptKind, text: String) -> [Effect] {
        mode = .grid
        message = nil
        historyWalk = nil
        let run = runPrompt(kind, text: text)
        // After the work: a file that cannot be written is said after what the work says.
        let save: [Effect] = history.add(text, for: kind) ? [.saveHistory(kind: kind, text: text)] : []
        if run.isEmpty, messageIsError, message != nil, kind != .copyRows, kind != .copyCell {
            mode = .prompt(kind, line: LineEditor(text))
        } else if !run.isEmpty {
            submitted = SubmittedPrompt(kind: kind, text: text)
        }
        return run + save
    }

    private mutating func runPrompt(_ kind: PromptKind, text: String) -> [Effect] {
        switch kind {
        case .goToRow:
            if let effects = writeCommand(text) { return effects }
            guard let n = Int(text.trimmingCharacters(in: " ")), n >= 1 else {
                if !text.isEmpty { say("not a row number: \(TerminalText.escapingControlCharacters(text))", error: true) }
                return []
            }
            move(to: min(n, count) - 1)
            // Past the end: the last row, and the message says so rather than seeming to obey.
            if n > count { say(count == 0 ? "no rows to go to" : "row \(group(n)) is past the end: on the last, row \(group(count))") }
        case .search:
            guard let column = currentColumnName, !text.isEmpty else { return [] }
            return [.search(column: column, text: text, from: cursorRow, backwards: false)]
        case .filter:
            guard let table else { return [] }
            return [.open(table: table, filter: text, sort: sort)]
        case .assignments:
            guard !text.trimmingCharacters(in: " ").isEmpty, let target = editTarget else { return [] }
            beginEdit(.countingUpdate(table: target.table))
            return [.countUpdate(assignments: text, target: target)]
        case .column:
            jumpToColumn(text)
        case .referencing:
            return chooseReferencing(text)
        case .copyRows, .copyCell:
            say("nothing copied: t, c, j or s picks the format")
        case .cellEdit:
            guard let cell = cellEdit, !text.trimmingCharacters(in: " ").isEmpty, let table else { return [] }
            // Kept until the question opens: a failure (a value the column refuses) brings the prompt back.
            let assignment = "\(FetchPredicate.formatKey(cell.column)) = \(text)"
            // One value for one cell: `5, v = 0` would set a second column the question never names as a cell.
            if let parsed = try? UpdateExpression.parseAssignments(assignment), parsed.count != 1 {
                openPrompt(.cellEdit, text: text)
                say("e sets one cell: type one value (a comma outside quotes starts another assignment; U sets several columns)", error: true)
                return []
            }
            let target = EditTarget(result: cell.result, table: table, marked: [cell.id], cell: cell)
            beginEdit(.countingUpdate(table: table))
            return [.countUpdate(assignments: assignment, target: target)]
        }
        return []
    }

    /// `e`: the cursor's cell read whole from the file, then a prompt holding it as a literal
    /// (text quoted, NULL as nil); Enter asks to set it, as `U` asks, for that row alone.
    private mutating func editCellKey() -> [Effect] {
        if let why = readOnlyReason { say("e does nothing: \(why)", error: true); return [] }
        if onStoreColumn { say("\(Self.storeColumn) names the file each row comes from: it cannot be edited; l moves to a table column", error: true); return [] }
        guard let resultID, sheet == .table, let column = currentColumnName else { say("no cell to edit here", error: true); return [] }
        guard let row = snapshot(cursorRow), row.exists, row.id != nil else { say("this row was deleted since the result was fetched: r reloads", error: true); return [] }
        return [.loadCell(row: cursorRow, column: column, result: resultID)]
    }

    public var currentColumnName: String? { currentColumnIndex.flatMap { $0 < columns.count ? columns[$0] : nil } }

    /// The first column of a result over several files, naming each row's store.
    static let storeColumn = "@store"

    /// True on the store column of a result over several files (not a column of the table).
    var onStoreColumn: Bool { currentColumnIndex == 0 && columns.first == Self.storeColumn }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
