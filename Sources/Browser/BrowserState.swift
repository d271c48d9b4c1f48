import BatchStore
import TerminalCore

/// What an open under way fetches: its table, filter and sort keys.
struct LoadingRequest: Sendable, Equatable {
    var table: String
    var filter: String
    var sorts: [BatchStore.SortDescriptor]
}

/// What a table looked like when the user left it: the table list opens it that way again.
public struct TableView: Sendable, Equatable {
    public var filter: String
    public var sort: BatchStore.SortDescriptor?
    public var cursorRow: Int
    /// Its columns as arranged (hidden, widths, order, frozen).
    public var columnView: ColumnView?
}

/// What the screen shows.
public enum Mode: Sendable, Equatable {
    case picker
    case grid
    case help(scroll: Int)
    /// A prompt on the bottom line, and the line being edited.
    case prompt(PromptKind, line: LineEditor)
    case confirm(Confirmation)

    /// A prompt holding `text`, the cursor at its end.
    public static func prompt(_ kind: PromptKind, text: String) -> Mode { .prompt(kind, line: LineEditor(text)) }
}

/// A prompt's line as Enter ran it: what comes back, with the error, when what it started fails.
struct SubmittedPrompt: Sendable, Equatable {
    var kind: PromptKind
    var text: String
}

/// Work on the data that keys may cancel while it runs (Esc, Ctrl-C or q).
public enum Work: Sendable, Equatable {
    /// A result's ID fetch (Enter, `s`, `f`, `r`): Ctrl-C and q cancel it and quit.
    case opening
    /// A search (`/`, `n`, `N`): any of the three cancels the search alone.
    case searching
    /// A frequency sheet's GROUP BY (`F`): any of the three cancels it alone.
    case counting
    /// A summary sheet's figures (`I`): any of the three cancels the rest of them.
    case summarizing
    /// `:w` or `y` writing rows to a file: any of the three cancels it and leaves no file.
    case writing
    /// `D`, `U`, `u` or `r` (``BrowserState/editing`` says which step): any of the three cancels
    /// it; an edit stopped before it commits changes nothing.
    case editing
}

/// A step of an edit key that can take a while, as its working line names it.
public enum EditStep: Sendable, Equatable {
    /// `D`'s count of the rows it would delete, before the y/n question.
    case countingDelete(table: String)
    /// `U`'s count of the rows it would update, before the y/n question.
    case countingUpdate(table: String)
    /// `D` confirmed: the count the user said yes to.
    case deleting(rows: Int, table: String)
    /// `U` confirmed: the count the user said yes to.
    case updating(rows: Int, table: String)
    /// `u`: what the undo would take back, read before its question.
    case readingUndo
    /// `u` confirmed.
    case undoing
    /// `r`: the result's fetch run again.
    case reloading(table: String)

    /// What the working line says is under way.
    var doing: String {
        switch self {
        case .countingDelete(let table): return "counting the rows to delete from \(table)"
        case .countingUpdate(let table): return "counting the rows to update in \(table)"
        case .deleting(let n, let table): return "deleting \(rows(n)) from \(table)"
        case .updating(let n, let table): return "updating \(rows(n)) of \(table)"
        case .readingUndo: return "reading what the last edit changed"
        case .undoing: return "undoing the last edit"
        case .reloading(let table): return "reloading \(table)"
        }
    }

    /// The key's work, as a cancel message names it: `delete cancelled: …`.
    var noun: String {
        switch self {
        case .countingDelete, .deleting: return "delete"
        case .countingUpdate, .updating: return "update"
        case .readingUndo, .undoing: return "undo"
        case .reloading: return "reload"
        }
    }

    /// What a cancel leaves, as the working line promises it.
    var onCancel: String {
        if case .reloading = self { return "keeps the result as it was" }
        return "changes nothing"
    }

    /// The working line after `seconds`.
    func line(seconds: Double) -> String {
        "\(doing): \(String(format1: seconds)) s (Esc cancels and \(onCancel))"
    }
}

/// Where a sheet stands: its table, columns, result, row count, cursor and scroll, and its
/// column view. What a sheet left under another (``SavedSheet``) and a result an open replaces
/// (``ShownResult``) both keep and put back.
struct SheetPlace: Sendable {
    var table: String?
    var columns: [String]
    var resultID: Int?
    var count: Int
    var cursorRow: Int
    var cursorColumn: Int
    var topRow: Int
    var leftColumn: Int
    var columnView: ColumnView

    init(_ s: BrowserState) {
        table = s.table; columns = s.columns; resultID = s.resultID; count = s.count
        cursorRow = s.cursorRow; cursorColumn = s.cursorColumn; topRow = s.topRow; leftColumn = s.leftColumn
        columnView = s.columnView
    }

    func restore(into s: inout BrowserState) {
        s.table = table; s.columns = columns; s.resultID = resultID; s.count = count
        s.cursorRow = cursorRow; s.cursorColumn = cursorColumn; s.topRow = topRow; s.leftColumn = leftColumn
        s.columnView = columnView
    }
}

/// The part of the state an open replaces while its IDs load: what comes back when it is
/// cancelled or fails.
struct ShownResult: Sendable {
    var place: SheetPlace
    var mode: Mode
    var windowStart: Int
    var window: [RowSnapshot]
    var windowValid: Bool

    init(_ s: BrowserState) {
        place = SheetPlace(s); mode = s.mode; windowStart = s.windowStart; window = s.window; windowValid = s.windowValid
    }

    func restore(into s: inout BrowserState) {
        place.restore(into: &s)
        s.mode = mode; s.windowStart = windowStart; s.window = window; s.windowValid = windowValid
        s.loading = nil
        s.loadingRows = 0
        s.loadingSeconds = 0
    }
}

/// Everything the screen is drawn from. Pure data: ``BrowserState/reduce(_:)`` changes it,
/// ``render(_:colors:)`` draws it, and effects (run by ``Browser``) bring data back as actions.
public struct BrowserState: Sendable {
    public internal(set) var width: Int
    public internal(set) var height: Int
    public internal(set) var mode: Mode = .grid
    public internal(set) var databaseName = ""
    /// The engine holding the result's row IDs (`SQLite`, `PostgreSQL`), for the memory panel.
    public internal(set) var engineName = "SQLite"
    /// What that engine can do: the browser words messages by it, never by the name.
    public internal(set) var engineTraits = EngineTraits.sqliteFile
    public internal(set) var readOnlyReason: String?

    // Picker
    public internal(set) var tables: [TableEntry] = []
    public internal(set) var pickerCursor = 0

    // Sheets
    /// What the screen's sheet is: a table's result or a frequency sheet over one.
    public internal(set) var sheet: SheetKind = .table
    /// The sheets under it, bottom first (Esc or q goes back to the last).
    var sheets: [SavedSheet] = []
    /// How many sheets are under the one on screen.
    public var sheetDepth: Int { sheets.count }

    // Result
    public internal(set) var table: String?
    public internal(set) var columns: [String] = []
    public internal(set) var filter = ""
    /// The sort key the status line shows and `f`, `r` and the table list keep.
    public internal(set) var sort: BatchStore.SortDescriptor?
    public internal(set) var count = 0
    public internal(set) var cursorRow = 0
    /// The cursor's position among the shown columns (``ColumnView/shown``).
    public internal(set) var cursorColumn = 0
    public internal(set) var topRow = 0
    /// The first scrolling column shown (a position among the shown columns, after the frozen ones).
    public internal(set) var leftColumn = 0
    /// The sheet's columns as arranged: order, hidden, widths, frozen.
    public internal(set) var columnView = ColumnView(count: 0)
    /// Rows `windowStart ..< windowStart + window.count`, loaded by the `.loadWindow` effect.
    public internal(set) var windowStart = 0
    public internal(set) var window: [RowSnapshot] = []
    public internal(set) var windowValid = false
    /// The result on screen: a new number each time a table, filter or sort is fetched (nil while
    /// a result loads).
    public internal(set) var resultID: Int?
    /// True on a table's grid whose first load was cancelled: no result, nothing loading (it
    /// reads "not loaded", not "no rows": the table was never counted).
    public var isUnloaded: Bool { resultID == nil && loading == nil && frequencySheet == nil && table != nil && mode == .grid }
    /// The marks, with the result they belong to; only ``marked`` and ``allMarked`` read them.
    public internal(set) var marks: Marks?
    /// Each table's filter, sort and cursor row when it was last left, by table name.
    public internal(set) var remembered: [String: TableView] = [:]
    public internal(set) var lastSearch: String?
    /// The number of rows a search matches, for the result it was counted in.
    struct MatchCount: Equatable { var column: String; var text: String; var result: Int?; var count: Int }
    var matchCount: MatchCount?
    /// The lines entered at each kind of prompt, for Up and Down (read from the history file).
    public internal(set) var history = PromptHistory()
    /// Where Up and Down are in the open prompt's history (nil: at the line being typed).
    var historyWalk: HistoryWalk?
    /// The prompt whose Enter started the work under way: a failure brings it back to fix.
    var submitted: SubmittedPrompt?
    /// The cell whose new value the `e` prompt asks for (nil when no `e` prompt is open).
    public internal(set) var cellEdit: CellTarget?
    /// The history file could not be written once: said once, not at every Enter.
    var historySaveFailed = false
    /// Each opened table's foreign keys both ways, by table name.
    public internal(set) var links: [String: TableLinks] = [:]
    /// For each query's sheet whose rows name several tables' rows, the one `T` picked for edits.
    var pickedEditTables: [String: String] = [:]
    /// True when an edit or undo since this sheet's rows or figures were read may have changed
    /// them (and the recount that would show the file as it is now was cancelled): `r` recounts.
    public internal(set) var stale = false

    // Messages and progress
    public internal(set) var message: String?
    public internal(set) var messageIsError = false
    /// Fraction of the ID fetch done while a result opens (nil: not loading).
    public internal(set) var loading: Double?
    public internal(set) var loadingRows = 0
    /// Seconds the ID fetch has run (shown when the engine does not count rows: PostgreSQL).
    public internal(set) var loadingSeconds = 0.0
    public internal(set) var fileChanged = false
    /// Tables this browser edited since the table list last counted them.
    var staleCounts: Set<String> = []
    /// True once the file on screen was found deleted or replaced at its path (``Action/fileGone(_:)``).
    public internal(set) var fileGone = false
    /// The open or search running now, which Esc cancels (nil: keys act as usual).
    public internal(set) var running: Work?
    /// Keys typed while work ran, in order: each acts, as if typed then, once the work has ended
    /// (Esc, Ctrl-C and q act at once). A question that opens throws them away: it takes only a
    /// key pressed once it is on screen.
    public internal(set) var queuedKeys: [Key] = []
    /// More keys than any hand types during one piece of work; past it, the oldest are kept.
    static let keyQueueLimit = 4_096
    /// Ctrl-C or q cancelled an open: quit once it has stopped.
    var quitWhenCancelled = false
    /// True from a loading result's first rows on screen (``Action/openingFirstRows(table:columns:rows:)``)
    /// until its open ends: keys that only move over those rows or arrange columns act at once.
    package internal(set) var firstRowsShown = false
    /// The open a sort typed during a load or a search asked for: it runs once that work ends
    /// (cancelled, or ended before the cancel came).
    var supersedingOpen: Effect?
    /// A prompt was opened over a loading result's first rows: its keys act at once.
    var promptOpenedDuringWork = false
    /// A key moved the cursor over a loading result's first rows: the open, when it ends, keeps
    /// the cursor where the user put it (no jump back).
    var cursorMovedWhileLoading = false
    /// What the open under way fetches (``Action/loadingRequest(table:filter:sorts:)``).
    var loadingRequest: LoadingRequest?
    /// `G` asked for the last rows while the IDs load; ``tailRows`` holds them once read.
    var tailRequested = false
    /// Where the rows in ``tailRows`` start, when an OFFSET read them (`:N` during a load); nil
    /// for the last rows (`G`), whose positions are not known until the count is.
    public internal(set) var tailStart: Int?
    /// The 0-based position `:N` asked rows from during the load under way.
    var offsetRequested: Int?
    /// The last rows of the loading result's order, first to last, read outside its ID table:
    /// the grid shows them (the cursor on the last) until the fetch ends. They have no position
    /// yet and no ID: never marked, never edited.
    public internal(set) var tailRows: [RowSnapshot]?
    /// The step of an edit key under way (with ``running`` `.editing`), for its working line.
    public internal(set) var editing: EditStep?
    /// A cancel key came while ``editing``: if the edit committed all the same, its message says
    /// it was too late to cancel.
    var editCancelRequested = false
    /// What an open that is loading replaced (nil when no open is loading).
    var shownBefore: ShownResult?

    // Memory
    public internal(set) var memoryPanel = false
    public internal(set) var memory = MemorySnapshot()
    public internal(set) var rssHistory: [Int] = []
    /// Rows copied into the eager Swift array (nil: batched).
    public internal(set) var eagerLoaded: Int?
    public internal(set) var eagerActive = false

    public internal(set) var quit = false

    package init(width: Int, height: Int, databaseName: String = "") {
        self.width = width
        self.height = height
        self.databaseName = databaseName
    }

    /// Where the title, grid, memory panel, status and message lines go.
    var layout: ScreenLayout { ScreenLayout(self) }
    /// Rows of the grid (screen minus header, status and message lines).
    public var gridHeight: Int { layout.gridRows }
    /// The rows the grid shows now.
    public var visibleRows: Range<Int> { topRow..<min(count, topRow + gridHeight) }

    /// The loaded snapshot of `row`, if it is in the window.
    public func snapshot(_ row: Int) -> RowSnapshot? {
        let i = row - windowStart
        return i >= 0 && i < window.count ? window[i] : nil
    }

    /// The marks of the result on screen (marks of any other result are not there).
    var currentMarks: Marks? {
        guard let marks, let resultID, marks.result == resultID else { return nil }
        return marks
    }

    /// Rows of the result on screen marked one by one.
    public var marked: Set<ObjectID> { currentMarks.map { $0.all ? [] : $0.ids } ?? [] }
    /// True when `V` marked every row of the result on screen.
    public var allMarked: Bool { currentMarks?.all ?? false }

    public func isMarked(_ row: Int) -> Bool {
        if allMarked { return true }
        if frequencySheet != nil { return currentMarks?.values[row] != nil }
        guard !marked.isEmpty, let id = snapshot(row)?.id else { return false }
        return marked.contains(id)
    }

    /// True while a y/n question is on screen.
    /// True in a prompt where a character typed is inserted (every prompt but `y`'s format choice).
    var isInTextPrompt: Bool {
        guard case .prompt(let kind, _) = mode else { return false }
        return kind != .copyRows && kind != .copyCell
    }

    public var isConfirming: Bool {
        if case .confirm = mode { return true }
        return false
    }

    /// What an edit key acts on now: the marked rows of the result on screen, or all of it; nil
    /// without a result.
    public var editTarget: EditTarget? {
        if let f = frequencySheet { return valuesTarget(f) }
        guard let resultID, let table, sheet == .table else { return nil }
        let ids = marked
        let edited = editedTable(of: table)
        return EditTarget(result: resultID, table: edited, marked: ids.isEmpty ? nil : ids.sorted { $0.description < $1.description }, allMarked: allMarked,
                          through: edited == table ? nil : table)
    }

    /// The table D, U and e act on from the sheet of `table`: itself; for a query's result, the
    /// table its rows name by key that `T` picked (the first at the start).
    func editedTable(of table: String) -> String {
        let through = links[table]?.editTables ?? []
        guard let first = through.first else { return table }
        return pickedEditTables[table].flatMap { picked in through.first { $0.table == picked }?.table } ?? first.table
    }
}
