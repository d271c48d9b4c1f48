import TerminalCore

/// How one sheet shows its columns: their order, which are hidden, widths set by hand and how
/// many stay frozen at the left. It belongs to the sheet (a frequency sheet has its own; going
/// into one and back keeps the table's) and lasts while the sheet's columns are the same (a new
/// filter or sort keeps it, another table starts afresh).
public struct ColumnView: Sendable, Equatable {
    /// Every column's index in ``BrowserState/columns``, in the order shown (hidden ones too).
    public private(set) var order: [Int]
    /// Columns hidden with `-`, by index in ``BrowserState/columns``.
    public private(set) var hidden: Set<Int> = []
    /// Widths set with `<`, `>` or `_`, by index in ``BrowserState/columns`` (the others fit the
    /// rows on screen, capped).
    public internal(set) var widths: [Int: Int] = [:]
    /// How many of the shown columns stay at the left while the others scroll sideways (`!`).
    public private(set) var frozen = 0
    /// The shown columns' indices in ``BrowserState/columns``, in order: what the grid, the cursor
    /// (``BrowserState/cursorColumn`` is a position in it) and the header go by.
    public private(set) var shown: [Int]

    /// Every one of `count` columns, in the table's order, none hidden or frozen.
    package init(count: Int) {
        order = Array(0..<count)
        shown = order
    }

    private mutating func update() {
        shown = order.filter { !hidden.contains($0) }
        frozen = min(frozen, shown.count)
    }

    /// Hides column `index`; the frozen count keeps the same columns frozen.
    mutating func hide(_ index: Int) {
        guard let position = shown.firstIndex(of: index) else { return }
        if position < frozen { frozen -= 1 }
        hidden.insert(index)
        update()
    }

    /// Shows every hidden column again; the columns that were frozen stay frozen (with the hidden
    /// ones between them).
    mutating func showAll() {
        let lastFrozen = frozen > 0 ? shown[frozen - 1] : nil
        hidden = []
        update()
        frozen = lastFrozen.flatMap { shown.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
    }

    /// Shows column `index` again, where it was in the order.
    mutating func unhide(_ index: Int) {
        guard hidden.contains(index) else { return }
        let lastFrozen = frozen > 0 ? shown[frozen - 1] : nil
        hidden.remove(index)
        update()
        frozen = lastFrozen.flatMap { shown.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
    }

    /// Swaps the shown column at `position` with the shown one at `position + offset` (±1).
    mutating func move(at position: Int, by offset: Int) {
        let to = position + offset
        guard shown.indices.contains(position), shown.indices.contains(to),
              let a = order.firstIndex(of: shown[position]), let b = order.firstIndex(of: shown[to]) else { return }
        order.swapAt(a, b)
        update()
    }

    /// Freezes the first `count` shown columns (0: none).
    mutating func freeze(_ count: Int) {
        frozen = max(0, min(count, shown.count))
    }
}

extension BrowserState {
    /// Index in ``columns`` of the column under the cursor (nil without columns).
    public var currentColumnIndex: Int? {
        let shown = columnView.shown
        return cursorColumn >= 0 && cursorColumn < shown.count ? shown[cursorColumn] : nil
    }

    /// The shown columns' names, in the order the grid shows them.
    public var shownColumnNames: [String] { columnView.shown.compactMap { $0 < columns.count ? columns[$0] : nil } }

    /// A fresh column view when the columns are new (another table, another kind of sheet).
    mutating func resetColumnView() {
        columnView = ColumnView(count: columns.count)
        cursorColumn = 0
        leftColumn = 0
    }

    /// The arrangement for `table`'s columns, newly on screen: as the table sheet below left it (a
    /// value's rows from its frequency sheet), else as the table list remembers it, else fresh.
    mutating func arrangeColumns(of table: String) {
        resetColumnView()
        let below = sheets.last { $0.kind == .table && $0.table == table && $0.columns == columns }?.columnView
        if let view = below ?? remembered[table]?.columnView, view.order.count == columns.count { columnView = view }
    }

    /// Puts the cursor on column `index` of ``columns``, showing it if it was hidden.
    mutating func moveCursor(toColumn index: Int) {
        columnView.unhide(index)
        if let position = columnView.shown.firstIndex(of: index) { cursorColumn = position }
        scrollToCursor()
    }

    /// The keys that arrange columns: `-` `+` `<` `>` `_` `!` `H` `L`; nil for any other key.
    mutating func columnKey(_ key: Key) -> [Effect]? {
        guard case .char(let c) = key, "-+<>_!HL".contains(c) else { return nil }
        guard let index = currentColumnIndex, let name = currentColumnName else { return [] }
        let shownName = TerminalText.escapingControlCharacters(name)
        switch c {
        case "-":
            guard columnView.shown.count > 1 else { say("\(shownName) is the only column shown: + shows the hidden ones", error: true); return [] }
            columnView.hide(index)
            let n = columnView.hidden.count
            say("hid \(shownName): \(counted(n, "column")) hidden, + shows \(n == 1 ? "it" : "them") again")
        case "+":
            let n = columnView.hidden.count
            guard n > 0 else { say("no column is hidden (- hides the current one)"); return [] }
            columnView.showAll()
            cursorColumn = columnView.shown.firstIndex(of: index) ?? 0
            say("showing every column again (\(counted(n, "was", "were")) hidden)")
        case "<", ">":
            let now = GridLayout(self).columns.first { $0.index == index }?.width ?? TerminalText.width(of: name)
            let width = max(1, min(now + (c == ">" ? Self.widthStep : -Self.widthStep), GridLayout.widest(self)))
            columnView.widths[index] = width
            say("\(shownName) is \(width) wide (< narrows, > widens, _ fits it to its values)")
        case "_":
            let fit = GridLayout.fit(index, in: self)
            if columnView.widths[index] == fit {
                columnView.widths[index] = nil
                say("\(shownName) fits the rows on screen again, up to \(GridLayout.maxColumnWidth) wide")
            } else {
                columnView.widths[index] = fit
                say("\(shownName) is \(fit) wide, its widest value on screen (_ again: automatic)")
            }
        case "!":
            let count = cursorColumn + 1
            if columnView.frozen == count {
                columnView.freeze(0)
                say("no column is frozen")
            } else {
                // They must all fit, leaving room for a column right of them if there is one.
                var frozen = self
                frozen.columnView.freeze(count)
                if count < columnView.shown.count { frozen.cursorColumn = count; frozen.leftColumn = count }
                guard GridLayout(frozen).frozenShown == count else {
                    say("\(count == 1 ? "the first column is too wide to stay: it" : "the first \(group(count)) columns are too wide to stay: they") would leave the others too little room (< narrows, - hides)", error: true)
                    return []
                }
                columnView.freeze(count)
                say("\(count == 1 ? "the first column stays" : "the first \(group(count)) columns stay") when scrolling sideways (! on the last of them unfreezes)")
            }
        default:
            let offset = c == "H" ? -1 : 1
            let to = cursorColumn + offset
            guard to >= 0, to < columnView.shown.count else { say("\(shownName) is already the \(offset < 0 ? "first" : "last") column"); return [] }
            columnView.move(at: cursorColumn, by: offset)
            cursorColumn = to
            say("moved \(shownName) \(offset < 0 ? "left" : "right")")
        }
        scrollToCursor()
        return []
    }

    /// How much `<` and `>` narrow and widen a column.
    static let widthStep = 2

    /// The columns a name prompt's `text` means: the exact name, else names starting with it,
    /// else names containing it (each ignoring case); hidden columns included.
    func columnNames(matching text: String) -> [String] {
        if columns.contains(text) { return [text] }
        let lowered = text.lowercased()
        let exact = columns.filter { $0.lowercased() == lowered }
        if !exact.isEmpty { return exact }
        let prefixed = columns.filter { $0.lowercased().hasPrefix(lowered) }
        if !prefixed.isEmpty { return prefixed }
        return columns.filter { $0.lowercased().contains(lowered) }
    }

    /// Tab in the column prompt: the text completed as far as the matching names agree.
    func completeColumn(_ text: String) -> String {
        let matches = columnNames(matching: text)
        guard let first = matches.first else { return text }
        if matches.count == 1 { return first }
        // The longest prefix every match shares (by characters, ignoring case), if it says more.
        var common = Array(first)
        for name in matches.dropFirst() {
            let other = Array(name)
            var n = 0
            while n < common.count, n < other.count, String(common[n]).lowercased() == String(other[n]).lowercased() { n += 1 }
            common = Array(common.prefix(n))
        }
        return common.count > text.count ? String(common) : text
    }

    /// Enter in the column prompt: the cursor goes to the one column `text` means.
    mutating func jumpToColumn(_ text: String) {
        let matches = columnNames(matching: text)
        let shownText = TerminalText.escapingControlCharacters(text)
        guard !text.isEmpty else { return }
        guard let name = matches.first, let index = columns.firstIndex(of: name) else { say("no column matches \(shownText)", error: true); return }
        guard matches.count == 1 else {
            let listed = matches.prefix(6).map { TerminalText.escapingControlCharacters($0) }.joined(separator: ", ")
            say("\(shownText) matches \(counted(matches.count, "column")): \(listed)\(matches.count > 6 ? ", …" : ""); Tab completes", error: true)
            return
        }
        let wasHidden = columnView.hidden.contains(index)
        moveCursor(toColumn: index)
        say("column \(TerminalText.escapingControlCharacters(name))\(wasHidden ? " (it was hidden: shown again)" : "")")
    }
}
