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
    /// `:SELECT …`: the query's result as a new sheet over this one (Esc goes back).
    case openQuery(String)
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
