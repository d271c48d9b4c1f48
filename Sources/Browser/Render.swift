import BatchStore
import TerminalCore

/// The key list `?` shows.
let helpLines: [String] = [
    "Moving",
    "  j k ↓ ↑        next / previous row",
    "  h l ← →        previous / next column",
    "  Space PgDn     page down        b PgUp    page up",
    "  Ctrl-D Ctrl-U  half page down / up",
    "  g Home         first row        G End     last row",
    "  :N             go to row N",
    "Finding",
    "  /text          search the current column (the database does it; Esc cancels)",
    "  n N            next / previous match",
    "  f              filter with a predicate: year > 2000 AND title CONTAINS[c] \"forest\"",
    "                 or SQL after WHERE: WHERE title LIKE 'U%' AND year >= 1990",
    "                 (an empty filter shows every row)",
    "  s S            sort by the current column, ascending / descending",
    "  F              frequency sheet of the current column over this result: each value,",
    "                 its count, percent and a bar, most frequent first (the database",
    "                 counts; Esc cancels); Enter opens the rows of a value, Esc or q",
    "                 goes back to the table as it was; B counts its numbers in bins",
    "                 (widths 1, 10, 100… from their range, then none again); Enter on a",
    "                 bin opens col >= lo AND col < hi (text is never in a bin's rows)",
    "                 On the sheet: v marks a value (and so its rows), V every value; D and",
    "                 U act on the marked values' rows (else the cursor's value's), u",
    "                 undoes; the sheet is counted again after each, r counts it again",
    "  I              summary sheet: per column its type, storage classes, NULLs, distinct",
    "                 values (+ ∅ when NULLs are there too, as F lists them), min, max,",
    "                 mean, text lengths and most frequent value, filled",
    "                 in as the database computes them (Esc cancels); Enter goes to it,",
    "                 F counts its values; r computes it again",
    "                 Over 100,000 rows, F and I first show the figures of an even sample",
    "                 of 10,000 rows, marked ≈ (≥ for distinct counts), until the exact",
    "                 figures replace them",
    "  Enter          the current record as a sheet: every value whole, wrapped, blobs",
    "                 as a hex dump; j/k Space b scroll, Esc or q goes back",
    "                 On a foreign-key cell (director_id): the row it refers to, as a sheet",
    "  R              the rows of other tables that refer to this row (the director's",
    "                 movies), as a sheet; with several such keys, pick one by number",
    "  Q              the SQL this sheet runs (ID fetch and batch fault, or a frequency",
    "                 sheet's GROUP BY and page read) with its bound values",
    "  r              reload (re-runs the fetch, keeps your row; Esc cancels a long one)",
    "Out of the browser",
    "  :w FILE        write this result (its filter and sort) to FILE as its extension",
    "                 says: .tsv .csv .json (an array) .ndjson (an object a line), as",
    "                 export writes them, or .sql",
    "                 (INSERTs); progress shown, Esc cancels and leaves no file;",
    "                 an existing FILE needs :w! FILE",
    "  y then t c j s copy the row (or the marked rows, or all after V) as TSV, CSV,",
    "                 JSON or SQL INSERTs: to faultline-copy.<format> in the state",
    "                 folder (the message names it), or to the terminal's clipboard",
    "                 with OSC 52 when FAULTLINE_OSC52=1",
    "  Y then t c j s copy the current cell (its column alone) the same way",
    "Columns (each sheet keeps its own)",
    "  -              hide the current column    +  show every hidden column",
    "  < >            narrow / widen the current column",
    "  _              fit it to its values on screen (again: automatic width)",
    "  !              freeze the columns up to this one while scrolling sideways",
    "                 (! on the last frozen one unfreezes)",
    "  H L            move the current column left / right",
    "  c              go to a column by name: Tab completes, a unique prefix or",
    "                 part of a name is enough; a hidden column is shown again",
    "Editing (one transaction each)",
    "  v              mark / unmark the current row   V  mark / unmark every row",
    "                 (marks belong to this result: a new table, filter or sort keeps",
    "                 only the marked rows that are in it)",
    "  D              batch-delete the marked rows, or the whole result",
    "  U              batch-update: votes = votes + 1, rating = round(rating * 1.1, 1)",
    "  e              edit the current cell: its value as a literal (\"text\", 12, nil),",
    "                 Enter shows old → new and asks; one row, undoable",
    "  T              on a query's result: which table D, U and e act on (its rows",
    "                 name rows of each table whose whole key it reads; T picks the next)",
    "  u              undo the last edit: says what it restores (and which rows",
    "                 changed since, which it leaves alone) and asks first",
    "                 Every edit asks y/n first, naming its rows (the marked ones, or all",
    "                 of the result) and whether u can undo it; keys typed before the",
    "                 question appeared never answer it",
    "                 D, U, u and r show the time so far; Esc or Ctrl-C cancels them:",
    "                 stopped before it commits, an edit changes nothing",
    "Prompts (f / : c U): every line edits like a shell's",
    "  ← → Ctrl-B Ctrl-F  a character left / right    Alt-B Alt-F  a word",
    "  Home End Ctrl-A Ctrl-E  the start / end of the line",
    "  Backspace, Del Ctrl-D   delete before / under the cursor (Ctrl-D on an",
    "                 empty line closes the prompt, as Esc does)",
    "  Ctrl-W Ctrl-K Ctrl-U    delete the word before / to the end / to the start",
    "  ↑ ↓ Ctrl-P Ctrl-N       earlier / later lines of this kind of prompt,",
    "                 kept across runs in the state folder's history file",
    "  Enter runs it; when that fails (a typo, an unknown column, :w to a bad",
    "  path) the line comes back with the cursor on the error, to fix",
    "Memory",
    "  m              the live memory panel",
    "  M              copy the result into a Swift array (watch RSS); M or Esc goes back",
    "Other",
    "  Esc            back to the sheet before (a record, a frequency sheet, its table),",
    "                 else to the table list, which keeps this table's filter, sort, row",
    "                 and columns",
    "  ?              this help        q         quit",
    "  A key that does nothing where it is pressed says so (unknown key Ctrl-T).",
    "",
    "∅ is NULL; (gone) is a row deleted since the result was fetched.",
]

/// Draws the whole screen from the state. Pure: the same state gives the same screen. Each
/// widget draws into its Rect of the one ``ScreenLayout``.
package func render(_ state: BrowserState, colors: Bool = true) -> ScreenBuffer {
    var screen = ScreenBuffer(width: state.width, height: state.height)
    let palette = Palette(colors: colors)
    guard state.width > 0, state.height > 0 else { return screen }
    let layout = state.layout
    switch state.mode {
    case .picker:
        drawPicker(state, title: layout.title, body: layout.body, into: &screen, palette)
    case .help(let scroll):
        drawLines("Keys (any key closes, j/k scroll)", helpLines, scroll: scroll, title: layout.title, body: layout.body, into: &screen, palette)
    case _ where state.textSheet != nil:
        if let text = state.textSheet { drawTextSheet(text, title: layout.title, body: layout.body, into: &screen, palette) }
    default:
        if layout.grid.width > 0 { drawGrid(state, in: layout.grid, into: &screen, palette) }
        if let panel = layout.panel { drawPanel(state, in: panel, into: &screen, palette) }
    }
    drawStatus(state, in: layout.status, into: &screen, palette)
    drawMessage(state, in: layout.message, into: &screen, palette)
    return screen
}

struct Palette {
    let header: Style
    let headerCurrent: Style
    let gutter: Style
    let marked: Style
    let cursorRow: Style
    let cursorCell: Style
    let null: Style
    let status: Style
    let error: Style
    /// An error on the status line (above an open prompt).
    let errorLine: Style
    let info: Style
    let title: Style
    let dim: Style

    init(colors: Bool) {
        func c(_ s: Style) -> Style { colors ? s : s.withoutColor }
        header = c(Style(foreground: .cyan, bold: true, underline: true))
        headerCurrent = c(Style(foreground: .cyan, bold: true, reverse: true))
        gutter = c(Style(foreground: .yellow, dim: true))
        marked = c(Style(foreground: .black, background: .yellow, bold: true))
        cursorRow = colors ? Style(background: .blue) : Style(underline: true)
        cursorCell = Style(bold: true, reverse: true)
        null = c(Style(foreground: .magenta, dim: true))
        status = Style(reverse: true)
        error = c(Style(foreground: .red, bold: true))
        errorLine = colors ? Style(foreground: .white, background: .red, bold: true) : Style(bold: true, reverse: true)
        info = c(Style(foreground: .green))
        title = Style(bold: true, underline: true)
        dim = Style(dim: true)
    }
}

/// The header on the rect's first row, then one row per visible row of the result.
private func drawGrid(_ state: BrowserState, in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    let layout = GridLayout(state)
    let width = rect.width
    let (x0, y0) = (rect.x, rect.y)
    // Header.
    screen.put("#".padded(to: layout.gutter - 2, left: true), x: x0, y: y0, style: p.header)
    for col in layout.columns {
        // The last column may run past the screen's edge: cut to what shows, with …, so a cut
        // figure (0.2 of 0.29, 100 of 100,000) never reads as a whole one.
        let shown = max(0, min(col.width, width - col.x))
        let name = TerminalText.truncate(state.columns[col.index], toWidth: shown)
        let style = col.position == state.cursorColumn ? p.headerCurrent : p.header
        screen.put(name.padded(to: col.width), x: x0 + col.x, y: y0, style: style, maxWidth: width - col.x)
    }
    if state.count == 0 && state.loading == nil {
        // A first load Esc stopped has no result yet: the table is not empty, it is not read.
        let empty = state.isUnloaded ? "(not loaded: Esc stopped it; r loads it)"
            : state.filter.isEmpty ? "(no rows)"
            // SQL's LIKE typed as NSPredicate's, whose wildcards are * and ?: say so.
            : looksLikeSQLLike(state.filter) ? "(no rows match; this LIKE takes * and ?: for SQL's %, start the filter with WHERE)"
            : "(no rows match the filter; f changes it)"
        screen.put(empty, x: x0 + layout.gutter, y: y0 + 1, style: p.dim, maxWidth: width - layout.gutter)
    }
    if let tail = state.tailRows, state.loading != nil {
        drawTail(tail, state, layout: layout, in: rect, into: &screen, p)
        return
    }
    for (i, row) in state.visibleRows.enumerated() {
        let y = y0 + 1 + i
        let isCursor = row == state.cursorRow
        let rowStyle = isCursor ? p.cursorRow : Style.plain
        if isCursor { screen.fill(Rect(x: x0, y: y, width: width, height: 1), style: rowStyle) }
        let marked = state.isMarked(row)
        screen.put(group(row + 1).padded(to: layout.gutter - 2, left: true), x: x0, y: y, style: isCursor ? rowStyle : p.gutter)
        screen.put(marked ? "*" : " ", x: x0 + layout.gutter - 2, y: y, style: marked ? p.marked : rowStyle)
        guard let snap = state.snapshot(row) else {
            screen.put("…", x: x0 + layout.gutter, y: y, style: p.dim)
            continue
        }
        if snap.unreadable {
            screen.put("(not read: these rows could not be read; r reads them again)", x: x0 + layout.gutter, y: y, style: p.dim, maxWidth: width - layout.gutter)
            continue
        } else if !snap.exists {
            screen.put("(gone: deleted since the fetch; r reloads)", x: x0 + layout.gutter, y: y, style: p.dim, maxWidth: width - layout.gutter)
            continue
        }
        drawCells(snap, y: y, isCursor: isCursor, rowStyle: rowStyle, state, layout: layout, in: rect, into: &screen, p)
    }
}

/// One row's cells on line `y`: ∅ for NULL, each value cut to what shows with `…` (the last
/// column may run past the screen's edge), the cursor's cell and row styled.
private func drawCells(_ snap: RowSnapshot, y: Int, isCursor: Bool, rowStyle: Style, _ state: BrowserState, layout: GridLayout,
                       in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    for col in layout.columns where col.index < snap.values.count {
        let value = snap.values[col.index]
        var style = rowStyle
        if case .null = value { style = p.null; if isCursor { style.background = rowStyle.background; style.underline = rowStyle.underline } }
        if isCursor && col.position == state.cursorColumn { style = p.cursorCell }
        let shown = max(0, min(col.width, rect.width - col.x))
        let text: String
        if case .null = value { text = "∅" } else { text = TerminalText.truncate(value.shown, toWidth: shown) }
        screen.put(text.padded(to: col.width), x: rect.x + col.x, y: y, style: style, maxWidth: shown)
    }
}

/// `G` while the IDs load: the last rows of the order (read outside the ID table) at the bottom
/// of the grid, as `G` will show them once the count is known, the cursor on the last; their
/// positions are not known yet, so the gutter shows `…`, and nothing marks them.
private func drawTail(_ tail: [RowSnapshot], _ state: BrowserState, layout: GridLayout, in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    // The last rows (G) at the bottom, the cursor on the last, no row numbers; rows read from
    // `:N`'s offset at the top, the cursor on the first, numbered.
    let start = state.tailStart
    let shown = start == nil ? tail.suffix(max(0, state.gridHeight)) : tail.prefix(max(0, state.gridHeight))
    let first = rect.y + 1 + (start == nil ? max(0, state.gridHeight - shown.count) : 0)
    for (i, snap) in shown.enumerated() {
        let y = first + i
        let isCursor = start == nil ? i == shown.count - 1 : i == 0
        let rowStyle = isCursor ? p.cursorRow : Style.plain
        if isCursor { screen.fill(Rect(x: rect.x, y: y, width: rect.width, height: 1), style: rowStyle) }
        let number = start.map { group($0 + i + 1) } ?? "…"
        screen.put(number.padded(to: layout.gutter - 2, left: true), x: rect.x, y: y, style: isCursor ? rowStyle : p.gutter)
        drawCells(snap, y: y, isCursor: isCursor, rowStyle: rowStyle, state, layout: layout, in: rect, into: &screen, p)
    }
}

/// The table list: a title, then one line per table or view, scrolled to keep the cursor's.
private func drawPicker(_ state: BrowserState, title: Rect, body: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    screen.put("Tables and views: Enter opens, q quits", x: title.x, y: title.y, style: p.title)
    let rows = max(1, body.height)
    let top = max(0, state.pickerCursor - rows + 1)
    let nameWidth = min(max(10, state.tables.map { TerminalText.width(of: $0.name) }.max() ?? 0), max(10, body.width - 24))
    for (i, entry) in state.tables.enumerated().dropFirst(top).prefix(rows) {
        let y = body.y + i - top
        let style = i == state.pickerCursor ? p.cursorCell : Style.plain
        let count = entry.count.map { $0 == 1 ? "1 row" : group($0) + " rows" }
            ?? entry.countFailure.map { "not counted: " + TerminalText.escapingControlCharacters($0) }
            ?? entry.estimate.map { "≈" + group($0) + " rows, counting…" } ?? "counting…"
        let line = TerminalText.truncate(entry.name, toWidth: nameWidth).padded(to: nameWidth) + "  " + (entry.isView ? "view " : "table") + "  " + count
        screen.put(line.padded(to: min(body.width, TerminalText.width(of: line))), x: body.x + 1, y: y, style: style, maxWidth: body.width - 1)
    }
}

/// A titled view of lines (help, the record view), scrolled by `scroll` lines.
private func drawLines(_ text: String, _ lines: [String], scroll: Int, title: Rect, body: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    screen.put(text, x: title.x, y: title.y, style: p.title)
    for (i, line) in lines.dropFirst(scroll).prefix(body.height).enumerated() {
        screen.put(TerminalText.truncate(line, toWidth: body.width - 1), x: body.x + 1, y: body.y + i)
    }
}

/// A text sheet (a record, the SQL): its title, then its lines from ``TextSheet/scroll``: each
/// field's name on its first line, ` │ `, then the value's part; NULL as the grid's `∅`.
private func drawTextSheet(_ text: TextSheet, title: Rect, body: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    screen.put(text.title + "  (Esc goes back, j/k scroll)", x: title.x, y: title.y, style: p.title, maxWidth: title.width)
    let layout = text.layout
    let x = body.x + 1
    for i in 0..<max(0, body.height) {
        guard let line = text.line(text.scroll + i) else { break }
        let y = body.y + i
        let name = TerminalText.truncate(line.name ?? "", toWidth: layout.nameWidth).padded(to: layout.nameWidth)
        screen.put(name, x: x, y: y, style: line.name == nil ? .plain : Style(bold: true), maxWidth: body.width - 1)
        screen.put(" │ ", x: x + layout.nameWidth, y: y, style: p.dim, maxWidth: max(0, body.width - 1 - layout.nameWidth))
        let vx = x + layout.nameWidth + 3
        let room = max(0, body.maxX - vx)
        switch line.part {
        case .null: screen.put("∅", x: vx, y: y, style: p.null, maxWidth: room)
        case .text(let s): screen.put(s, x: vx, y: y, maxWidth: room)
        case .note(let s): screen.put(s, x: vx, y: y, style: p.dim, maxWidth: room)
        }
    }
}

/// The memory panel: figures, then RSS over time as a bar graph, left of a rule.
private func drawPanel(_ state: BrowserState, in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    guard rect.width >= 12, rect.height >= 2 else { return }
    screen.fill(rect)
    for y in rect.y..<rect.maxY { screen.put("│", x: rect.x, y: y, style: p.dim) }
    let m = state.memory
    let x = rect.x + 2
    let w = rect.width - 3
    var lines: [(String, Style)] = [("Memory (m hides)", p.title)]
    lines.append(("RSS      \(megabytes(m.rss))", .plain))
    lines.append(("peak     \(megabytes(m.peakRSS))", .plain))
    lines.append(("objects  \(group(m.objectsAlive)) alive", .plain))
    lines.append(("batches  \(group(m.batchesResident))/\(group(m.residentLimit)) resident", .plain))
    if let bytes = m.valueBytesResident { lines.append(("values   \(group(max(bytes, 0) / 1024)) KB packed", .plain)) }
    lines.append(("faulted  \(counted(m.batchesFaulted, "batch", "batches"))", .plain))
    lines.append(("row IDs  \(group(m.idsHeld))", .plain))
    // "in SQLite", "in PostgreSQL": the Swift line's figure starts under the engine's.
    let engine = "in \(state.engineName)"
    lines.append(("  \(engine) \(group(m.idsHeld - m.idsInSwiftMemory))", .plain))
    lines.append(("  \("in Swift".padding(toLength: max(engine.count, 8), withPad: " ", startingAt: 0)) \(group(m.idsInSwiftMemory))", .plain))
    lines.append(("last fault \(m.lastFaultSeconds.map { String(format2: $0 * 1000) + " ms" } ?? "–")", .plain))
    if let n = state.eagerLoaded { lines.append(("eager array \(rows(n))", p.error)) }
    var y = rect.y
    for (text, style) in lines where y < rect.maxY {
        screen.put(text, x: x, y: y, style: style, maxWidth: w)
        y += 1
    }
    // RSS over time: one column per sample, the newest on the right.
    let graphHeight = min(6, rect.maxY - y - 2)
    guard graphHeight >= 1, !state.rssHistory.isEmpty else { return }
    let samples = Array(state.rssHistory.suffix(w))
    // The scale starts at 0 and at least 128 MB, so flat memory looks flat and low.
    let top = max(samples.max() ?? 1, 128 << 20)
    y += 1
    screen.put("RSS over time, 0–\(megabytes(top))", x: x, y: y, style: p.dim, maxWidth: w)
    y += 1
    let blocks: [Character] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
    for (i, v) in samples.enumerated() {
        let eighths = v * graphHeight * 8 / top
        for row in 0..<graphHeight {
            let fromBottom = graphHeight - 1 - row
            let level = max(0, min(8, eighths - fromBottom * 8))
            screen.put(String(blocks[level]), x: x + i, y: y + row, style: p.info)
        }
    }
}

/// An NSPredicate filter with LIKE and a `%` in it: SQL's LIKE typed without WHERE.
func looksLikeSQLLike(_ filter: String) -> Bool {
    FetchPredicate.sqlCondition(ofFilter: filter) == nil && filter.uppercased().contains("LIKE") && filter.contains("%")
}

func megabytes(_ bytes: Int) -> String { String(format1: Double(bytes) / 1_048_576) + " MB" }

/// `1 row`, `2,500 rows`: a count with separators and the noun in the number it takes
/// (`plural` when adding an s does not make it).
package func counted(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(group(n)) \(n == 1 ? singular : plural ?? singular + "s")"
}

/// `1234567` as `1,234,567` (BatchStore's ``grouped(_:)``).
package func group(_ n: Int) -> String { grouped(n) }

extension String {
    /// Padded with spaces to `width` display columns (on the left when `left`).
    func padded(to width: Int, left: Bool = false) -> String {
        let pad = max(0, width - TerminalText.width(of: self))
        return left ? String(repeating: " ", count: pad) + self : self + String(repeating: " ", count: pad)
    }

    init(format1 d: Double) {
        let tenths = Int((d * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }

    init(format2 d: Double) {
        let hundredths = Int((d * 100).rounded())
        let frac = abs(hundredths % 100)
        self = "\(hundredths / 100).\(frac < 10 ? "0" : "")\(frac)"
    }
}
