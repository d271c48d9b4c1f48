import TerminalCore

/// Where each visible column goes: widths come from the header and the rows on screen, capped.
struct GridLayout {
    struct Column {
        var index: Int
        var x: Int
        var width: Int
    }
    /// Width of the row-number gutter (digits of the count, plus a mark column).
    let gutter: Int
    let columns: [Column]
    /// Columns of the screen the grid may use.
    let available: Int

    static let maxColumnWidth = 40

    init(_ state: BrowserState) {
        gutter = max(3, group(max(1, state.count)).count) + 2
        let available = state.panelReplacesGrid ? 0 : state.gridWidth
        self.available = available
        var x = gutter
        var result: [Column] = []
        var index = state.leftColumn
        let cap = max(4, min(Self.maxColumnWidth, available - gutter))
        while index < state.columns.count, x < available {
            var w = TerminalText.width(of: state.columns[index])
            for row in state.visibleRows {
                guard let snap = state.snapshot(row), index < snap.values.count else { continue }
                w = max(w, min(cap, TerminalText.width(of: snap.values[index].shown)))
                if w >= cap { break }
            }
            w = min(max(w, 1), cap)
            result.append(Column(index: index, x: x, width: w))
            x += w + 1
            index += 1
        }
        columns = result
    }

    /// True when column `index` is on screen whole (or is the first one shown, however wide).
    func shows(_ index: Int) -> Bool {
        guard let c = columns.first(where: { $0.index == index }) else { return false }
        return c.x + c.width <= available || c.index == columns.first?.index
    }
}
