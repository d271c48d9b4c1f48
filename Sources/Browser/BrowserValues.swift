import BatchStore
import TerminalCore

/// One value as the grid shows it: NULL apart from text, text already cut to a display length.
public enum DisplayValue: Sendable, Equatable {
    case null
    case text(String)
    /// A blob, shown by its size.
    case blob(Int)

    /// Longest text kept per value for the grid (the record view reads the full value).
    static let gridLimit = 256

    init(_ value: SQLValue, limit: Int = DisplayValue.gridLimit) {
        switch value {
        case .null: self = .null
        case .integer(let i): self = .text(String(i))
        case .real(let d): self = .text(String(d))
        case .text(let s):
            // O(limit), not O(length): a 10 MB value costs no more than a short one.
            if s.utf8.count <= limit { self = .text(s); break }
            let head = s.prefix(limit + 1)
            self = .text(head.count > limit ? String(head.dropLast()) + "…" : s)
        case .blob(let b): self = .blob(b.count)
        }
    }

    /// The text drawn in the grid.
    var shown: String {
        switch self {
        case .null: return "NULL"
        case .text(let s): return s
        case .blob(let n): return "<blob \(n) B>"
        }
    }
}

/// A row on screen: its object ID (nil for a view row or a row deleted since the fetch) and values.
public struct RowSnapshot: Sendable, Equatable {
    public var id: ObjectID?
    public var values: [DisplayValue]
    /// False when the row was deleted after the result was fetched.
    public var exists: Bool
    /// On a frequency sheet, the rows its value stands for (nil on other sheets).
    public var count: Int?
    /// True when the row could not be read (a lost session, an I/O error): not known to be gone.
    public var unreadable = false

    package init(id: ObjectID?, values: [DisplayValue], exists: Bool, count: Int? = nil) {
        self.id = id
        self.values = values
        self.exists = exists
        self.count = count
    }
}

/// A table or view in the picker.
public struct TableEntry: Sendable, Equatable {
    public var name: String
    public var isView: Bool
    public var count: Int?
    /// Why the table could not be counted (no permission, a broken view), shown instead of a count.
    public var countFailure: String?
    /// The engine's estimate of its rows (PostgreSQL's statistics), shown marked ≈ until counted.
    public var estimate: Int?
    /// To be counted (again) on this listing.
    var recount = false
    /// The data version when it was listed (``BrowserData/dataVersion()``): a count taken at the
    /// same version, with no edit by this browser since, is still true.
    public var version: Int?

    package init(name: String, isView: Bool, count: Int?) {
        self.name = name
        self.isView = isView
        self.count = count
    }
}

/// Memory figures for the panel.
public struct MemorySnapshot: Sendable, Equatable {
    public var rss = 0
    public var peakRSS = 0
    public var objectsAlive = 0
    public var batchesResident = 0
    public var residentLimit = 0
    public var batchesFaulted = 0
    public var idStorage = ""
    public var idsHeld = 0
    public var idsInSwiftMemory = 0
    public var lastFaultSeconds: Double?
    /// Packed values of the resident batches, when the collection packs them.
    public var valueBytesResident: Int?
    package init() {}
}

/// What the bottom line is asking for.
public enum PromptKind: Sendable, Hashable {
    case goToRow, search, filter, assignments
    /// `c`: a column's name, completed with Tab.
    case column
    /// `R` with several foreign keys into this table: which one, by number.
    case referencing
    /// `y`, `Y`: the format, one key.
    case copyRows, copyCell
    /// `e`: the cell's new value, as an expression (its present value written as a literal).
    case cellEdit
    /// The name its entries have in the history file; nil for the one-key prompts, which keep none.
    var historyName: String? {
        switch self {
        case .goToRow: return "command"
        case .search: return "search"
        case .filter: return "filter"
        case .assignments: return "update"
        case .column: return "column"
        case .referencing, .copyRows, .copyCell, .cellEdit: return nil
        }
    }

    var label: String {
        switch self {
        case .copyRows, .copyCell: return "copy as: "
        case .cellEdit: return "new value: "
        case .referencing: return "rows of (number): "
        case .column: return "column: "
        case .goToRow: return ":"
        case .search: return "/"
        case .filter: return "filter: "
        case .assignments: return "update: "
        }
    }
}

/// Rows marked with `v` or `V`, and the result they were marked in: marks belong to that result
/// (one table, filter, sort and set of stores, fetched once) and mean nothing for any other. On a
/// frequency sheet, `v` marks values (by position) and `V` all of them.
public struct Marks: Sendable, Equatable {
    /// The result the rows were marked in (``BrowserState/resultID``).
    public var result: Int
    /// Rows marked one by one.
    public var ids: Set<ObjectID>
    /// Every row of the result (`V`).
    public var all: Bool
    /// On a frequency sheet: the marked values' positions, each with the rows it stands for.
    public var values: [Int: Int]

    package init(result: Int, ids: Set<ObjectID> = [], all: Bool = false, values: [Int: Int] = [:]) {
        self.result = result
        self.ids = ids
        self.all = all
        self.values = values
    }

    /// True when nothing is marked.
    var isEmpty: Bool { !all && ids.isEmpty && values.isEmpty }
}

/// The values of a frequency sheet an edit acts on: all the rows of the parent result whose
/// column holds one of them (a bin's range, when binned), as the sheet counted them.
public struct ValueTarget: Sendable, Equatable {
    /// The frequency sheet (its ``BrowserState/resultID``): the positions are its.
    public var sheet: Int
    /// The column counted.
    public var column: String
    /// The values' positions on the sheet, in order; nil for every value (`V`).
    public var positions: [Int]?
    /// How many values that is (the sheet's count for every value).
    public var valueCount: Int
    /// The sheet's bin width (nil: unbinned).
    public var binWidth: Int64?

    package init(sheet: Int, column: String, positions: [Int]?, valueCount: Int, binWidth: Int64?) {
        self.sheet = sheet
        self.column = column
        self.positions = positions
        self.valueCount = valueCount
        self.binWidth = binWidth
    }

    /// `3 values of genre`, `1 bin of year`, `all 12 values of genre`.
    public var described: String {
        let noun = binWidth == nil ? (valueCount == 1 ? "value" : "values") : (valueCount == 1 ? "bin" : "bins")
        return "\(positions == nil ? "all " : "")\(group(valueCount)) \(noun) of \(column)"
    }
}

/// The rows an edit key acts on: the marked rows of one result, or all of it. The session runs
/// the edit only while that result is the one on screen, and only on rows in its ID table.
public struct EditTarget: Sendable, Equatable {
    /// The result (``BrowserState/resultID``).
    public var result: Int
    /// Its table, as the confirmation and the message name it.
    public var table: String
    /// The marked rows, in a stable order; nil for every row of the result.
    public var marked: [ObjectID]?
    /// From a frequency sheet: the values whose rows the edit acts on (`result` is the sheet's
    /// parent result then).
    public var values: ValueTarget?
    /// From `e`: the one cell it sets (`marked` holds its row).
    public var cell: CellTarget?
    /// True when `V` marked every row (`marked` is nil: the edit is of the whole result, and the
    /// question says they are all marked, not that nothing is).
    public var allMarked: Bool
    /// For a query's result: its name, when the edit acts on the rows of `table` that its rows
    /// name by key.
    public var through: String?

    package init(result: Int, table: String, marked: [ObjectID]?, values: ValueTarget? = nil, cell: CellTarget? = nil, allMarked: Bool = false,
                 through: String? = nil) {
        self.through = through
        self.result = result
        self.table = table
        self.marked = marked
        self.values = values
        self.cell = cell
        self.allMarked = allMarked
    }

    /// The rows an edit of `n` rows of this target acts on, in words, as its confirmation says
    /// them: `the 3 marked rows`, `all 719 rows of this result (nothing is marked)`,
    /// `8 rows (2 values of genre)`.
    func scope(_ n: Int) -> String {
        if let cell { return through == nil ? "row \(group(cell.row + 1))" : "the row named by row \(group(cell.row + 1)) of this query" }
        if let through = through.map({ _ in "this query" }) {
            let named = "\(n == 1 ? "the 1 row" : "the \(group(n)) rows") named by"
            if let values { return "\(named) \(through)'s rows with \(values.described)" }
            if let marked { return "\(named) the \(marked.count == 1 ? "1 marked row" : "\(group(marked.count)) marked rows") of \(through)" }
            return "\(named) every row of \(through) (\(allMarked ? "all marked" : "nothing is marked"))"
        }
        if let values { return "\(rows(n)) (\(values.described))" }
        if marked != nil { return n == 1 ? "the 1 marked row" : "the \(group(n)) marked rows" }
        if allMarked { return n == 1 ? "the 1 row of this result (all marked)" : "all \(group(n)) rows of this result (all marked)" }
        return n == 1 ? "the 1 row of this result (nothing is marked)" : "all \(group(n)) rows of this result (nothing is marked)"
    }
}

/// The cell `e` edits: its row (by position in the result and by ID), its column, and its value
/// when the edit began, written as a literal of the expression language.
public struct CellTarget: Sendable, Equatable {
    public var result: Int
    public var row: Int
    public var id: ObjectID
    public var column: String
    public var old: String

    package init(result: Int, row: Int, id: ObjectID, column: String, old: String) {
        self.result = result
        self.row = row
        self.id = id
        self.column = column
        self.old = old
    }
}

/// A confirmation waiting for y/n: the count the engine gave for exactly the rows `y` changes,
/// and (`noUndo`) why `u` could not take the edit back, said before `y`. Every write from the
/// browser asks one, and a confirmation never takes a key typed before it was on screen.
public enum Confirmation: Sendable, Equatable {
    case delete(rows: Int, target: EditTarget, noUndo: String? = nil)
    /// `preview`: a few rows old → new, and the non-NULL values the update would turn into NULL.
    case update(rows: Int, assignments: String, target: EditTarget, noUndo: String? = nil, preview: UpdatePreview? = nil)
    /// `u`: what the undo would take back, read from its journal.
    case undo(UndoSummary)

    /// The question, without its `y/n`.
    var question: String {
        switch self {
        case .delete(let n, let target, let noUndo):
            return "Delete \(target.scope(n)) from \(target.table)\(Self.undoNote(noUndo))?"
        case .update(_, let a, let target, let noUndo, let preview) where target.cell != nil:
            guard let cell = target.cell else { return "" }
            // The value now and the value the row will hold, as the engine computed them (an
            // expression shown evaluated, nil when it comes to NULL); else as typed.
            let typed = a.firstRange(of: " = ").map { String(a[$0.upperBound...]) } ?? a
            let change = preview?.sample.first?.changes.first
            let old = change.map { UpdatePreview.literal($0.old) } ?? cell.old
            let new = change.map { UpdatePreview.literal($0.new, numeric: $0.isNumericText) } ?? typed
            // The row by position, and by key as U's sample names rows (`row 3, id 7`).
            let key = preview?.sample.first.map { row in zip(row.keyNames, row.key).map { "\($0) \(UpdatePreview.literal($1))" }.joined(separator: " ") }
            let which = key.map { $0.isEmpty ? "" : ", \($0)" } ?? ""
            return "Set \(cell.column) of row \(group(cell.row + 1))\(which) in \(target.table): \(old) → \(new)\(Self.undoNote(noUndo))?"
        case .update(let n, let a, let target, let noUndo, let preview):
            // What cannot be undone and what becomes NULL first: a short screen cuts the end.
            var notes = Self.undoNote(noUndo)
            if let nulling = preview?.nullingNote { notes += " — \(nulling)" }
            if let preview, !preview.sample.isEmpty {
                notes += " — e.g. \(preview.sampleText())\(preview.rows > preview.sample.count ? "; …" : "")"
            }
            return "Update \(target.scope(n)) in \(target.table): \(a)\(notes)?"
        case .undo(let u):
            let what: String
            switch u.kind {
            case .delete: what = "the delete of \(rows(u.rows)) from \(u.table): put \(u.rows == 1 ? "it" : "them") back"
            case .update(let columns):
                what = "the update of \(rows(u.rows)) of \(u.table): give \(columns.joined(separator: ", ")) \(u.rows == 1 ? "its" : "their") old \(u.rows == 1 && columns.count == 1 ? "value" : "values")"
            case .insert: what = "the insert of \(rows(u.rows)) into \(u.table): delete \(u.rows == 1 ? "it" : "them")"
            case .upsert(let inserted, let updated):
                what = "the import into \(u.table): delete \(rows(inserted, "inserted")), give \(rows(updated, "updated")) their old values"
            }
            let left = u.changedSince == 0 ? ""
                : u.changedSince == u.rows ? " — every one of them changed since the edit and is left as it is, so nothing would change"
                : " — \(rows(u.changedSince)) changed since the edit \(u.changedSince == 1 ? "is" : "are") left as \(u.changedSince == 1 ? "it is" : "they are")"
            let moved = u.renumbered == 0 ? ""
                : " — \(rows(u.renumbered)) \(u.renumbered == 1 ? "comes" : "come") back under a new rowid (SQLite gave \(u.renumbered == 1 ? "its" : "theirs") to a new row since)"
            return "Undo \(what)\(left)\(moved)?"
        }
    }

    /// The answer keys: `y/N` when the edit cannot be undone (any key but y says no either way).
    var answers: String {
        switch self {
        case .delete(_, _, let noUndo?), .update(_, _, _, let noUndo?, _): return noUndo.isEmpty ? "y/n" : "y/N"
        default: return "y/n"
        }
    }

    private static func undoNote(_ noUndo: String?) -> String {
        guard let noUndo else { return "" }
        return " — CANNOT BE UNDONE: \(noUndo)"
    }
}
