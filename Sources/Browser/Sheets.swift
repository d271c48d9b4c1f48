import BatchStore
import TerminalCore

/// What a sheet shows: a table's result, the frequencies of one of its columns, a summary of its
/// columns, or a text sheet (a record, the SQL).
public enum SheetKind: Sendable, Equatable {
    case table
    case frequency(FrequencySheet)
    case summary(SummarySheet)
    case text(TextSheet)

    /// What the data holds for a sheet of this kind (what `.closeSheet` lets go of).
    var role: SheetRole {
        switch self {
        case .table: return .table
        case .frequency: return .frequency
        case .summary: return .summary
        case .text: return .text
        }
    }
}

/// A sheet's kind without its figures: what the data keeps for it (a result, frequencies, nothing).
public enum SheetRole: Sendable, Equatable {
    case table, frequency, summary
    /// A record or the SQL: the data holds nothing for it.
    case text
}

/// A summary sheet: one row per column of a result of `table` (its filter), filled in as SQLite
/// computes each; Enter goes back to the column in the grid, F opens its frequency sheet.
public struct SummarySheet: Sendable, Equatable {
    public var table: String
    public var filter: String
    public var sort: BatchStore.SortDescriptor?
    /// The result summarised (``BrowserState/resultID`` of the table sheet below).
    public var result: Int
    /// The columns summarised, in the table's order.
    public var columns: [String]
    /// Each column's figures, nil until computed.
    public var rows: [ColumnSummary?]

    package init(table: String, filter: String, sort: BatchStore.SortDescriptor?, result: Int, columns: [String]) {
        self.table = table
        self.filter = filter
        self.sort = sort
        self.result = result
        self.columns = columns
        self.rows = Array(repeating: nil, count: columns.count)
    }

    /// The summary sheet's columns.
    static let headers = ["column", "type", "classes", "nulls", "distinct", "min", "max", "mean", "text length", "most frequent"]

    /// Row `index` as the grid shows it: `…` for figures not computed yet.
    func snapshot(_ index: Int) -> RowSnapshot {
        let name = DisplayValue.text(columns[index])
        guard let s = rows[index] else {
            return RowSnapshot(id: nil, values: [name] + Array(repeating: .text("…"), count: Self.headers.count - 1), exists: true)
        }
        // Figures of a sample say so: `≈` before each (counts scaled to the result's rows), `≥`
        // before the distinct count (a sample can only have fewer values than the result).
        let sampled = s.sampledFrom.map { total in (mark: "≈ ", scale: Double(total) / Double(max(1, s.rows))) }
        func count(_ n: Int) -> String {
            guard let sampled else { return group(n) }
            return sampled.mark + group(Int((Double(n) * sampled.scale).rounded()))
        }
        func text(_ shown: String) -> DisplayValue { .text(shown.isEmpty || sampled == nil ? shown : "≈ " + shown) }
        // Where numbers and text meet in the column, text is shown as a literal, in quotes, so
        // the number 1 and the text '1' are told apart (as on a frequency sheet).
        let quotesText = s.storageClasses.count > 1
        func display(_ v: SQLValue) -> DisplayValue {
            if quotesText, case .text = v, let literal = FetchPredicate.literal(v) { return .text(literal) }
            return DisplayValue(v)
        }
        func value(_ v: SQLValue?) -> DisplayValue {
            guard let v, v != .null else { return DisplayValue.null }
            guard sampled != nil else { return display(v) }
            return text(display(v).shown)
        }
        let mean = text(s.mean.map { String(format: "%.15g", $0) } ?? "")
        let lengths = text(s.shortest.map { short in short == s.longest ? "\(short)" : "\(short)–\(s.longest ?? short)" } ?? "")
        let frequent: DisplayValue = s.mostFrequent.map { top in
            func shown(_ v: SQLValue) -> String { v == .null ? "∅" : display(v).shown }
            // Ties say so: `JFK, LGA: 8,706 each`, `a, b, c and 4 more: 2 each`.
            guard s.mostFrequentTies > 1 else {
                return sampled == nil ? .text("\(shown(top.value)) (\(group(top.count)))") : .text("≈ \(shown(top.value)) (\(count(top.count)))")
            }
            let named = (s.tiedForMostFrequent.isEmpty ? [top.value] : s.tiedForMostFrequent).map(shown).joined(separator: ", ")
            let more = s.mostFrequentTies - max(1, s.tiedForMostFrequent.count)
            let values = more > 0 ? "\(named) and \(group(more)) more" : named
            return sampled == nil ? .text("\(values): \(group(top.count)) each") : .text("≈ \(values): \(count(top.count)) each")
        } ?? .text("")
        // NULL is not a value to SQL's count(DISTINCT …), but F lists it (∅): said, so I and F agree.
        let withNull = s.nulls > 0 ? " + ∅" : ""
        let distinct = (sampled == nil ? group(s.distinct) : "≥ " + group(s.distinct)) + withNull
        return RowSnapshot(id: nil, values: [
            name, .text(s.declaredType), text(s.storageClasses.joined(separator: ",")), .text(count(s.nulls)), .text(distinct),
            value(s.min), value(s.max), mean, lengths, frequent,
        ], exists: true)
    }
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
    /// The width of the bins its numbers are counted in (`B`); nil: each value alone.
    public var binWidth: Int64?
    /// While its exact count runs over a large result: the rows of the even sample its first
    /// figures are of (shown ≈); nil once they are exact.
    public var sampledFrom: Int?

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
/// sort, cursor and marks. Its place (table, result, cursor, scroll) reads as its own properties.
@dynamicMemberLookup
struct SavedSheet: Sendable {
    var kind: SheetKind
    var place: SheetPlace
    var filter: String
    var sort: BatchStore.SortDescriptor?
    var marks: Marks?
    var readOnlyReason: String?
    /// An edit since it was left may have changed its rows or figures: coming back reads them again.
    var stale: Bool

    init(_ s: BrowserState) {
        kind = s.sheet; place = SheetPlace(s); filter = s.filter; sort = s.sort
        marks = s.marks; readOnlyReason = s.readOnlyReason; stale = s.stale
    }

    subscript<T>(dynamicMember path: WritableKeyPath<SheetPlace, T>) -> T {
        get { place[keyPath: path] }
        set { place[keyPath: path] = newValue }
    }

    /// The sheet's name in the status line's path: `movie`, `genre freq`.
    var title: String {
        switch kind {
        case .table: return place.table ?? ""
        case .frequency(let f): return "\(f.column) freq"
        case .summary: return "summary"
        case .text(let t): return t.pathTitle
        }
    }

    func restore(into s: inout BrowserState) {
        place.restore(into: &s)
        s.sheet = kind; s.filter = filter; s.sort = sort; s.marks = marks; s.readOnlyReason = readOnlyReason; s.stale = stale
        // The rows come back from the data (the window was the other sheet's); a summary's are its own.
        s.windowValid = false
        s.window = []
        if case .summary(let summary) = kind { s.showSummaryRows(summary) }
    }
}
