import TerminalCore

/// Where each part of the screen goes, computed once from the size and the panel: every widget
/// draws into its own Rect, and the reducer pages by the grid's rows.
///
///     title / grid header   (row 0)          │ memory panel
///     body / grid rows      (rows 1 ..< h-2) │ (rows 0 ..< h-2)
///     status line           (row h-2)
///     message, prompt or confirmation (row h-1)
struct ScreenLayout: Equatable {
    /// The top line: the grid's header, or the title of the table list, help and record views.
    let title: Rect
    /// Between the title and the status line: the table list's or a view's lines.
    let body: Rect
    /// The grid, header and rows (empty when the memory panel takes its place).
    let grid: Rect
    /// Rows the grid shows (at least one, even on a screen too small for it).
    let gridRows: Int
    /// The memory panel, beside the grid or, on a narrow screen, instead of it (nil: hidden).
    let panel: Rect?
    let status: Rect
    /// The bottom line: the message, a prompt or a confirmation.
    let message: Rect

    init(width: Int, height: Int, memoryPanel: Bool) {
        title = Rect(x: 0, y: 0, width: width, height: 1)
        body = Rect(x: 0, y: 1, width: width, height: height - 3)
        gridRows = max(1, height - 3)
        let panelWidth = memoryPanel && width >= 70 ? min(34, width / 2) : 0
        if memoryPanel && panelWidth == 0 {
            grid = Rect(x: 0, y: 0, width: 0, height: 0)
            panel = Rect(x: 0, y: 0, width: width, height: height - 2)
        } else {
            grid = Rect(x: 0, y: 0, width: width - panelWidth, height: 1 + gridRows)
            panel = panelWidth > 0 ? Rect(x: width - panelWidth, y: 0, width: panelWidth, height: height - 2) : nil
        }
        status = Rect(x: 0, y: height - 2, width: height >= 2 ? width : 0, height: height >= 2 ? 1 : 0)
        message = Rect(x: 0, y: height - 1, width: height >= 1 ? width : 0, height: height >= 1 ? 1 : 0)
    }

    init(_ state: BrowserState) {
        self.init(width: state.width, height: state.height, memoryPanel: state.memoryPanel)
    }
}

/// Where each visible column goes: the frozen columns first, then the others from
/// ``BrowserState/leftColumn``; widths are set by hand (``ColumnView/widths``) or come from the
/// header and the rows on screen, capped.
struct GridLayout {
    struct Column {
        /// Index in ``BrowserState/columns`` (and in each row's values).
        var index: Int
        /// Position among the shown columns (what ``BrowserState/cursorColumn`` counts).
        var position: Int
        var x: Int
        var width: Int
    }
    /// Width of the row-number gutter (digits of the count, plus a mark column).
    let gutter: Int
    let columns: [Column]
    /// Columns of the screen the grid may use.
    let available: Int
    /// Frozen columns drawn (fewer than frozen when they would leave the others too little room).
    let frozenShown: Int

    static let maxColumnWidth = 40

    init(_ state: BrowserState) {
        gutter = Self.gutter(state)
        let available = ScreenLayout(state).grid.width
        self.available = available
        let shown = state.columnView.shown
        var x = gutter
        var result: [Column] = []
        let cap = max(4, min(Self.maxColumnWidth, available - gutter))
        let frozen = min(state.columnView.frozen, shown.count)
        // With the cursor right of them, frozen columns leave room for the cursor's column.
        let frozenRoom = state.cursorColumn < frozen ? available : available - Self.scrollingRoom(available: available, gutter: gutter)
        var frozenShown = 0
        for position in 0..<frozen {
            let w = Self.width(of: shown[position], in: state, cap: cap)
            guard x + w <= frozenRoom || (position == 0 && state.cursorColumn < frozen) else { break }
            result.append(Column(index: shown[position], position: position, x: x, width: w))
            x += w + 1
            frozenShown += 1
        }
        self.frozenShown = frozenShown
        var position = max(state.leftColumn, frozen)
        while position < shown.count, x < available {
            let w = Self.width(of: shown[position], in: state, cap: cap)
            result.append(Column(index: shown[position], position: position, x: x, width: w))
            x += w + 1
            position += 1
        }
        columns = result
    }

    /// Columns frozen ones leave to the others: a quarter of the grid, at least 8.
    static func scrollingRoom(available: Int, gutter: Int) -> Int { max(8, (available - gutter) / 4) }

    static func gutter(_ state: BrowserState) -> Int { max(3, group(max(1, state.count)).count) + 2 }

    /// Column `index`'s width: set by hand, else its name's and its values' on screen, capped.
    static func width(of index: Int, in state: BrowserState, cap: Int) -> Int {
        if let set = state.columnView.widths[index] { return max(1, set) }
        var w = index < state.columns.count ? TerminalText.width(of: state.columns[index]) : 1
        for snap in shownSnapshots(state) where index < snap.values.count {
            w = max(w, min(cap, TerminalText.width(of: snap.values[index].shown)))
            if w >= cap { break }
        }
        return min(max(w, 1), cap)
    }

    /// The rows the grid shows: the window's visible rows, or (`G` while the IDs load) the last
    /// rows read outside the ID table.
    static func shownSnapshots(_ state: BrowserState) -> [RowSnapshot] {
        if let tail = state.tailRows, state.loading != nil {
            return Array(state.tailStart == nil ? tail.suffix(max(0, state.gridHeight)) : tail.prefix(max(0, state.gridHeight)))
        }
        return state.visibleRows.compactMap { state.snapshot($0) }
    }

    /// The widest a column may be set: the grid's width right of the gutter.
    static func widest(_ state: BrowserState) -> Int { max(1, ScreenLayout(state).grid.width - gutter(state)) }

    /// `_`: column `index`'s name and its widest value on screen (as the grid keeps it), up to
    /// ``widest(_:)``, with no cap of 40.
    static func fit(_ index: Int, in state: BrowserState) -> Int {
        var w = index < state.columns.count ? TerminalText.width(of: state.columns[index]) : 1
        for snap in shownSnapshots(state) where index < snap.values.count {
            w = max(w, TerminalText.width(of: snap.values[index].shown))
        }
        return max(1, min(w, widest(state)))
    }

    /// True when the shown column at `position` is on screen whole (or is the first scrolling
    /// column, however wide).
    func shows(_ position: Int) -> Bool {
        guard let c = columns.first(where: { $0.position == position }) else { return false }
        return c.x + c.width <= available || c.position == columns.dropFirst(frozenShown).first?.position
    }
}
