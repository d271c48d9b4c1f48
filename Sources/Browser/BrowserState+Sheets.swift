import BatchStore
import TerminalCore

/// What a sheet shows: a table's result, or the frequencies of one of its columns.
public enum SheetKind: Sendable, Equatable {
    case table
    case frequency(FrequencySheet)
}

/// A frequency sheet: the distinct values of `column` over a result of `table` (its filter), with
/// their counts; Enter opens `table` filtered to a value, sorted as the parent was.
public struct FrequencySheet: Sendable, Equatable {
    /// The column counted.
    public var column: String
    /// The parent result's table, filter and sort.
    public var table: String
    public var filter: String
    public var sort: BatchStore.SortDescriptor?
    /// Rows counted (the parent result's rows).
    public var total: Int

    package init(column: String, table: String, filter: String, sort: BatchStore.SortDescriptor?, total: Int) {
        self.column = column
        self.table = table
        self.filter = filter
        self.sort = sort
        self.total = total
    }

    /// The frequency sheet's columns.
    static func columns(_ column: String) -> [String] { [column, "count", "percent", "histogram"] }
}

/// A sheet under the one on screen, as it was left: Esc or q brings it back with its filter,
/// sort, cursor and marks.
struct SavedSheet: Sendable {
    var kind: SheetKind
    var table: String?
    var columns: [String]
    var filter: String
    var sort: BatchStore.SortDescriptor?
    var count: Int
    var cursorRow: Int
    var cursorColumn: Int
    var topRow: Int
    var leftColumn: Int
    var resultID: Int?
    var marks: Marks?
    var readOnlyReason: String?

    init(_ s: BrowserState) {
        kind = s.sheet; table = s.table; columns = s.columns; filter = s.filter; sort = s.sort; count = s.count
        cursorRow = s.cursorRow; cursorColumn = s.cursorColumn; topRow = s.topRow; leftColumn = s.leftColumn
        resultID = s.resultID; marks = s.marks; readOnlyReason = s.readOnlyReason
    }

    /// The sheet's name in the status line's path: `movie`, `genre freq`.
    var title: String {
        switch kind {
        case .table: return table ?? ""
        case .frequency(let f): return "\(f.column) freq"
        }
    }

    func restore(into s: inout BrowserState) {
        s.sheet = kind; s.table = table; s.columns = columns; s.filter = filter; s.sort = sort; s.count = count
        s.cursorRow = cursorRow; s.cursorColumn = cursorColumn; s.topRow = topRow; s.leftColumn = leftColumn
        s.resultID = resultID; s.marks = marks; s.readOnlyReason = readOnlyReason
        // The rows come back from the data (the window was the other sheet's).
        s.windowValid = false
        s.window = []
    }
}

extension BrowserState {
    /// The frequency sheet on screen, if it is one.
    public var frequencySheet: FrequencySheet? {
        if case .frequency(let f) = sheet { return f }
        return nil
    }

    /// The path the status line shows when sheets are stacked: `demo.db › movie › genre freq`.
    public var sheetPath: [String] {
        [databaseName] + sheets.map(\.title) + [SavedSheet(self).title]
    }

    /// `F`: the frequencies of the current column over the result on screen.
    mutating func frequencyKey() -> [Effect] {
        if frequencySheet != nil { say("F counts a column of a table: Esc goes back to it", error: true); return [] }
        if onStoreColumn { say("\(Self.storeColumn) names the file each row comes from: F counts a table column; l moves to one", error: true); return [] }
        if eagerLoaded != nil { say("F counts over batches: M goes back to them first", error: true); return [] }
        guard let column = currentColumnName, let resultID else { say("no result to count yet: r loads it", error: true); return [] }
        return [.frequency(column: column, result: resultID)]
    }

    /// A frequency sheet came back: it goes on top of the table sheet it counts.
    mutating func pushFrequencySheet(column: String, values: Int, total: Int, result: Int, seconds: Double) {
        running = nil
        guard let table else { return }
        let parent = SavedSheet(self)
        sheets.append(parent)
        sheet = .frequency(FrequencySheet(column: column, table: table, filter: filter, sort: sort, total: total))
        columns = FrequencySheet.columns(column)
        filter = ""
        sort = nil
        count = values
        cursorRow = 0; topRow = 0; cursorColumn = 0; leftColumn = 0
        resultID = result
        marks = nil
        windowValid = false
        window = []
        mode = .grid
        say("\(group(values)) distinct \(values == 1 ? "value" : "values") of \(column) in \(rows(total)), counted by SQLite in \(milliseconds(seconds)); Enter opens a value's rows, Esc goes back")
    }

    /// Esc or q on a stacked sheet: the one under it comes back as it was left.
    mutating func popSheet() -> [Effect] {
        guard let parent = sheets.popLast() else { return [] }
        let left = SavedSheet(self).title
        // A table sheet's eager array goes with its result (the data drops it on .closeSheet).
        if sheet == .table, eagerLoaded != nil {
            eagerLoaded = nil
            eagerActive = false
        }
        parent.restore(into: &self)
        mode = .grid
        scrollToCursor()
        say("back from \(left) to \(parent.title)")
        return [.closeSheet]
    }

    /// Keys a frequency sheet does not take (they act on a table's rows), with what to do instead;
    /// nil for keys it takes.
    func refusal(onFrequencySheet key: Key) -> String? {
        switch key {
        case .char("/"), .char("n"), .char("N"), .char("f"), .char("s"), .char("S"), .char("r"), .char("M"),
             .char("v"), .char("V"), .char("D"), .char("U"), .char("u"):
            guard case .char(let c) = key else { return nil }
            return "\(c) acts on a table's rows, not on a frequency sheet: Enter opens a value's rows, Esc goes back"
        default:
            return nil
        }
    }

    /// Enter on a frequency sheet: the parent's table, filtered to the value at the cursor, as a
    /// new sheet.
    mutating func openValueKey() -> [Effect] {
        guard let f = frequencySheet, count > 0 else { return [] }
        return [.openValue(row: cursorRow, of: f)]
    }
}
