import Foundation
import TerminalCore

func drawStatus(_ state: BrowserState, in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    guard rect.height > 0 else { return }
    let y = rect.y
    if case .prompt = state.mode, let m = state.message {
        // A prompt takes the message line: its error (what Enter ran failed) goes above it.
        screen.fill(rect, style: state.messageIsError ? p.errorLine : p.status)
        screen.put(" " + TerminalText.escapingControlCharacters(m), x: rect.x, y: y, style: state.messageIsError ? p.errorLine : p.status, maxWidth: rect.width)
        return
    }
    screen.fill(rect, style: p.status)
    var parts: [String] = []
    if state.mode == .picker {
        parts.append(state.databaseName)
        parts.append(counted(state.tables.count, "table or view", "tables and views"))
    } else {
        // What matters most comes first, so a narrow screen cuts the filter, not the position.
        // Stacked sheets show their path: demo.db › movie › genre freq.
        parts.append(state.sheets.isEmpty ? state.table ?? "" : state.sheetPath.joined(separator: " › "))
        if let fraction = state.loading {
            let percent = fraction >= 0 ? " \(Int(fraction * 100))%" : ""
            // SQLite counts the rows it has looked at; PostgreSQL the rows in when it fills
            // unsorted IDs in chunks, else only the seconds.
            let sofar = state.loadingRows > 0 || state.loadingSeconds == 0 ? "\(rows(state.loadingRows)) so far" : "\(String(format1: state.loadingSeconds)) s"
            if state.tailRows != nil {
                parts.append(state.tailStart.map { "row \(group($0 + 1)), read ahead (the cursor lands when the IDs are in)" } ?? "last rows (row numbers once the IDs are in)")
            }
            parts.append("loading IDs\(percent), \(sofar) (Esc cancels)")
        } else if let s = state.summarySheet {
            parts.append("column \(group(state.count == 0 ? 0 : state.cursorRow + 1)) of \(group(state.count))")
            if !s.filter.isEmpty { parts.append("filter: \(s.filter)") }
        } else if let t = state.textSheet {
            let n = t.layout.lineCount
            let last = min(n, t.scroll + max(1, state.layout.body.height))
            parts.append(n == 0 ? "no lines" : "line \(group(t.scroll + 1))–\(group(last)) of \(group(n))")
        } else if let f = state.frequencySheet {
            if let sampled = f.sampledFrom {
                // A sample sees some of the values: at least this many, more to come.
                parts.append("≥ \(group(state.count)) values in \(group(sampled)) sampled rows")
            } else {
                parts.append("value \(group(state.count == 0 ? 0 : state.cursorRow + 1)) of \(group(state.count)) in \(rows(f.total))")
            }
            if let w = f.binWidth { parts.append("bins of \(group(Int(w)))") }
        } else if state.isUnloaded {
            parts.append("not loaded")
        } else {
            parts.append("row \(group(state.count == 0 ? 0 : state.cursorRow + 1)) of \(group(state.count))")
        }
        // A sheet an edit left out of date says so before anything else it adds.
        if state.stale { parts.append("out of date: r counts again") }
        if let values = state.valueMarksSummary { parts.append(values) } else if state.allMarked { parts.append("all marked") } else if !state.marked.isEmpty { parts.append("\(group(state.marked.count)) marked") }
        if !state.filter.isEmpty { parts.append("filter: \(state.filter)") }
        if let f = state.frequencySheet, !f.filter.isEmpty { parts.append("filter: \(f.filter)") }
        if let s = state.sort { parts.append("sort: \(s.column) \(s.ascending ? "asc" : "desc")") }
        if let n = state.eagerLoaded { parts.append("EAGER ARRAY \(rows(n))") }
        if state.readOnlyReason != nil {
            parts.append("read-only")
        } else if let table = state.table, state.sheet == .table, state.links[table]?.editTables.isEmpty == false {
            parts.append("edits \(state.editedTable(of: table))")
        }
        if !state.queuedKeys.isEmpty { parts.append("\(group(state.queuedKeys.count)) \(state.queuedKeys.count == 1 ? "key waits" : "keys wait")") }
        if state.fileGone {
            parts.append("file deleted or replaced: edits refused")
        } else if state.fileChanged { parts.append(state.engineTraits.holdsFiles ? "file changed: r reloads" : "data changed: r reloads") }
    }
    let right = " ? help "
    let left = " " + parts.joined(separator: " │ ")
    // Cut with … so a cut figure (`row 320,00`) never reads as a whole one.
    let room = max(0, rect.width - right.count)
    screen.put(TerminalText.truncate(TerminalText.escapingControlCharacters(left), toWidth: room), x: rect.x, y: y, style: p.status, maxWidth: room)
    if rect.width > TerminalText.width(of: left) + right.count { screen.put(right, x: rect.maxX - right.count, y: y, style: p.status) }
}

/// The bottom line: a prompt with its cursor, a confirmation, or the last message.
func drawMessage(_ state: BrowserState, in rect: Rect, into screen: inout ScreenBuffer, _ p: Palette) {
    guard rect.height > 0 else { return }
    let (x, y) = (rect.x, rect.y)
    switch state.mode {
    case .prompt(let kind, let line):
        let label = kind == .referencing ? state.referencingPrompt : kind == .copyRows || kind == .copyCell ? state.copyPrompt
            : kind == .cellEdit ? state.cellEdit.map { "\(TerminalText.escapingControlCharacters($0.column)) = " } ?? kind.label : kind.label
        let labelWidth = screen.put(label, x: x, y: y, maxWidth: rect.width)
        // The line scrolls sideways to keep the cursor on screen; the terminal's cursor is the editor's.
        let view = line.view(room: max(0, rect.width - labelWidth))
        let w = labelWidth + screen.put(view.text, x: x + labelWidth, y: y, maxWidth: max(0, rect.width - labelWidth))
        screen.cursor = (min(x + labelWidth + view.cursor, rect.maxX - 1), y)
        let text = line.text
        if kind == .column, !text.isEmpty, state.columnNames(matching: text) != [text] {
            // The names the text matches, after it: what Tab completes and Enter needs to be one.
            let matches = state.columnNames(matching: text)
            let hint = matches.isEmpty ? "no column matches" : matches.prefix(8).map { TerminalText.escapingControlCharacters($0) }.joined(separator: " ") + (matches.count > 8 ? " …" : "")
            screen.put("   " + hint, x: x + w, y: y, style: p.dim, maxWidth: max(0, rect.width - w))
        }
    case .confirm(let c):
        // The whole question, wrapped, grows up from the bottom line over the grid, the answer
        // keys last; on a screen too small for it, its last line shown is cut with … before them.
        var lines = TerminalText.wrapWords(TerminalText.escapingControlCharacters(c.question) + " " + c.answers, width: rect.width)
        let most = max(1, y)
        if lines.count > most {
            let answers = " " + c.answers
            lines = Array(lines.prefix(most))
            lines[most - 1] = TerminalText.truncate(lines[most - 1] + " ", toWidth: max(1, rect.width - answers.count)) + answers
        }
        for (i, line) in lines.enumerated() {
            let row = y - (lines.count - 1) + i
            screen.fill(Rect(x: x, y: row, width: rect.width, height: 1), style: p.error)
            screen.put(line, x: x, y: row, style: p.error, maxWidth: rect.width)
        }
    default:
        if let m = state.message {
            screen.put(TerminalText.truncate(m, toWidth: rect.width), x: x, y: y, style: state.messageIsError ? p.error : p.info)
        }
    }
}
