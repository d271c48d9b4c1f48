import BatchStore
import TerminalCore

extension BrowserState {
    /// The summary sheet on screen, if it is one.
    public var summarySheet: SummarySheet? {
        if case .summary(let s) = sheet { return s }
        return nil
    }

    /// The frequency sheet on screen, if it is one.
    public var frequencySheet: FrequencySheet? {
        if case .frequency(let f) = sheet { return f }
        return nil
    }

    /// The path the status line shows when sheets are stacked: `demo.db › movie › genre freq`.
    public var sheetPath: [String] {
        [databaseName] + sheets.map(\.title) + [SavedSheet(self).title]
    }

    /// `F`: the frequencies of the current column over the result on screen (on a summary sheet,
    /// of the column at the cursor over the result it summarises).
    mutating func frequencyKey() -> [Effect] {
        if frequencySheet != nil { say("F counts a column of a table: Esc goes back to it", error: true); return [] }
        if let summary = summarySheet {
            guard cursorRow < summary.columns.count else { return [] }
            return [.frequency(column: summary.columns[cursorRow], result: summary.result)]
        }
        if onStoreColumn { say("\(Self.storeColumn) names the file each row comes from: F counts a table column; l moves to one", error: true); return [] }
        if eagerLoaded != nil { say("F counts over batches: M goes back to them first", error: true); return [] }
        guard let column = currentColumnName, let resultID else { say("no result to count yet: r loads it", error: true); return [] }
        return [.frequency(column: column, result: resultID)]
    }

    /// A frequency sheet came back: it goes on top of the table sheet it counts.
    mutating func pushFrequencySheet(column: String, values: Int, total: Int, result: Int, seconds: Double) {
        running = nil
        guard let table else { return }
        // The exact counts replace a sample's sheet where it stands.
        if var preview = frequencySheet, preview.sampledFrom != nil {
            preview.sampledFrom = nil
            showCounts(of: preview, values: values, total: total, result: result, cursor: 0)
            say("\(group(values)) distinct \(values == 1 ? "value" : "values") of \(column) in \(rows(total)), counted by \(engineName) in \(milliseconds(seconds)); Enter opens a value's rows, Esc goes back")
            return
        }
        let parent = SavedSheet(self)
        sheets.append(parent)
        // Over a summary sheet, the counts are of the result it summarises.
        let summary = summarySheet
        sheet = .frequency(FrequencySheet(column: column, table: table, filter: summary?.filter ?? filter, sort: summary?.sort ?? sort, total: total))
        columns = FrequencySheet.columns(column)
        filter = ""
        sort = nil
        count = values
        cursorRow = 0; topRow = 0
        resetColumnView()
        resultID = result
        marks = nil
        stale = false
        windowValid = false
        window = []
        mode = .grid
        say("\(group(values)) distinct \(values == 1 ? "value" : "values") of \(column) in \(rows(total)), counted by \(engineName) in \(milliseconds(seconds)); Enter opens a value's rows, Esc goes back")
    }

    /// The first figures of a large result's frequency sheet, of an even sample of its rows: the
    /// sheet is pushed with them as its window while the exact count runs (keys only cancel it).
    mutating func pushFrequencyPreview(column: String, values: Int, total: Int, sampled: Int, rows shown: [RowSnapshot]) {
        guard frequencySheet == nil else { return }
        pushFrequencySheet(column: column, values: values, total: total, result: -1, seconds: 0)
        running = .counting
        guard var f = frequencySheet else { return }
        f.sampledFrom = sampled
        sheet = .frequency(f)
        window = shown
        windowStart = 0
        windowValid = true
        say("≈ figures of an even sample of \(rows(sampled)) while \(engineName) counts all \(rows(total))… (Esc cancels)")
    }

    /// Esc or q on a stacked sheet: the one under it comes back as it was left.
    mutating func popSheet() -> [Effect] {
        guard let parent = sheets.popLast() else { return [] }
        let left = SavedSheet(self).title
        let role = sheet.role
        // Marks belong to the sheet they were made on: leaving it clears them, and that is said.
        var cleared = ""
        if let m = currentMarks {
            if m.all { cleared = "; the marks on every row of \(left) were cleared" }
            else if !m.values.isEmpty { cleared = "; the \(counted(m.values.count, "marked value")) of \(left) \(m.values.count == 1 ? "was" : "were") cleared" }
            else if !m.ids.isEmpty { cleared = "; the \(counted(m.ids.count, "marked row")) of \(left) \(m.ids.count == 1 ? "was" : "were") cleared" }
        }
        // A table sheet's eager array goes with its result (the data drops it on .closeSheet).
        if sheet == .table, eagerLoaded != nil {
            eagerLoaded = nil
            eagerActive = false
        }
        parent.restore(into: &self)
        mode = .grid
        scrollToCursor()
        say("back from \(left) to \(parent.title)\(cleared)")
        // An edit made since it was left: it comes back as the file is now.
        guard stale else { return [.closeSheet(role)] }
        switch sheet {
        case .table:
            // A reload as r runs it: its working line, and Esc keeps the result as it was.
            beginEdit(.reloading(table: table ?? ""))
            say("back from \(left) to \(parent.title)\(cleared): reading it again after the edit… (Esc keeps it as it was)")
            return [.closeSheet(role), .reload]
        case .frequency, .summary: return [.closeSheet(role)] + recountKey(after: "back from \(left) to \(parent.title)\(cleared)")
        case .text: return [.closeSheet(role)]
        }
    }

    /// The table sheet the data's result belongs to: on a frequency or summary sheet, the nearest
    /// table sheet under it (nil on a table sheet).
    var parentTableIndex: Int? { sheet == .table ? nil : sheets.lastIndex { $0.kind == .table } }

    /// `r` on a frequency or summary sheet (and coming back to one left stale by an edit): the
    /// result it counts is fetched again as the file is now, then counted again (Esc cancels).
    mutating func recountKey(after note: String? = nil) -> [Effect] {
        let what = note.map { $0 + ": " } ?? ""
        if let f = frequencySheet {
            say("\(what)counting the values of \(f.column) again as the file is now… (Esc cancels)")
            return [.recount(.frequency)]
        }
        guard var summary = summarySheet else { return [] }
        summary.rows = Array(repeating: nil, count: summary.columns.count)
        sheet = .summary(summary)
        showSummaryRows(summary)
        say("\(what)summarising \(summary.table) again as the file is now… (Esc cancels)")
        return [.recount(.summary)]
    }

    /// The result under a frequency or summary sheet was fetched again (after an edit, or for a
    /// recount): its count, cursor and marks, which come back with it. After an edit (`edited`),
    /// every other sheet below may be out of date.
    mutating func parentRefreshed(count n: Int, cursor: Int, marks kept: Marks?, edited: Bool) {
        if edited {
            for i in sheets.indices { sheets[i].stale = true }
            // The edit used this sheet's marks: done with, as after a table's edit.
            marks = nil
        }
        guard let i = parentTableIndex else { return }
        sheets[i].count = n
        sheets[i].cursorRow = min(max(0, cursor), max(0, n - 1))
        sheets[i].marks = kept
        sheets[i].stale = false
    }

    /// The frequency sheet on screen was counted again (after an edit, `r`, or coming back to it):
    /// its figures are the file's now; the cursor stays on its value, if it is still there.
    mutating func frequencyRecounted(values: Int, total: Int, result: Int, cursor: Int, message: String) {
        running = nil
        guard let f = frequencySheet else { return }
        showCounts(of: f, values: values, total: total, result: result, cursor: cursor)
        // Marks were on the old counts' positions: said, not dropped silently.
        let had = marks.map { $0.all ? "every value's mark" : counted($0.values.count, "mark") }
        marks = nil
        stale = false
        mode = .grid
        say(message + (had.map { "; \($0) cleared: v marks the values anew" } ?? ""))
    }

    /// The frequency sheet on screen shows new counts (exact after a sample, binned, counted
    /// again): `values` rows over `total` rows of the result, faulted from result `result`, the
    /// cursor at `cursor`; its rows are asked for again.
    private mutating func showCounts(of f: FrequencySheet, values: Int, total: Int, result: Int, cursor: Int) {
        var f = f
        f.total = total
        sheet = .frequency(f)
        count = values
        resultID = result
        windowValid = false
        window = []
        if cursor == 0 { topRow = 0 }
        cursorRow = cursor
        scrollToCursor()
    }

    /// `v` on a frequency sheet: marks or unmarks the value at the cursor (with the rows it
    /// stands for), and moves down.
    mutating func markValueKey() {
        guard let resultID, count > 0 else { return }
        if allMarked { say("every value is marked; V unmarks them"); return }
        // The count comes with the row: nothing to mark until it is on screen.
        guard let n = snapshot(cursorRow)?.count else { return }
        var m = currentMarks ?? Marks(result: resultID)
        m.values[cursorRow] = m.values[cursorRow] == nil ? n : nil
        marks = m.isEmpty ? nil : m
        cursorRow += 1
        scrollToCursor()
    }

    /// `V` on a frequency sheet: marks every value (every row of the result counted), or unmarks all.
    mutating func markAllValuesKey() {
        guard let resultID, let f = frequencySheet else { return }
        let all = !allMarked
        marks = all ? Marks(result: resultID, all: true) : nil
        say(all ? "marked all \(group(count)) \(count == 1 ? "value" : "values") of \(f.column): \(rows(f.total))" : "unmarked every value")
    }

    /// The marks on a frequency sheet as the status line says them: `3 values marked, 12,345 rows`.
    var valueMarksSummary: String? {
        guard let f = frequencySheet, let m = currentMarks else { return nil }
        if m.all { return "all \(group(count)) \(count == 1 ? "value" : "values") marked, \(rows(f.total))" }
        guard !m.values.isEmpty else { return nil }
        let n = m.values.count
        return "\(group(n)) \(n == 1 ? "value" : "values") marked, \(rows(m.values.values.reduce(0, +)))"
    }

    /// What D and U act on from a frequency sheet: all the rows of the result it counts whose
    /// value is a marked one (all of them after `V`), else the cursor's value.
    func valuesTarget(_ f: FrequencySheet) -> EditTarget? {
        guard let resultID, count > 0, let i = parentTableIndex, let parent = sheets[i].resultID else { return nil }
        let m = currentMarks
        let positions: [Int]? = m?.all == true ? nil : (m.map { $0.values.keys.sorted() }.flatMap { $0.isEmpty ? nil : $0 } ?? [cursorRow])
        let values = ValueTarget(sheet: resultID, column: f.column, positions: positions, valueCount: positions?.count ?? count, binWidth: f.binWidth)
        let edited = editedTable(of: f.table)
        return EditTarget(result: parent, table: edited, marked: nil, values: values, through: edited == f.table ? nil : f.table)
    }

    /// `I`: a summary sheet of every column of the result on screen, shown at once and filled in
    /// as the data computes each column.
    mutating func summaryKey() -> [Effect] {
        if sheet != .table { say("I summarises a table's result: Esc goes back to it", error: true); return [] }
        if eagerLoaded != nil { say("I reads over batches: M goes back to them first", error: true); return [] }
        guard let table, let resultID else { say("no result to summarise yet: r loads it", error: true); return [] }
        let names = columns.filter { $0 != Self.storeColumn }
        let summary = SummarySheet(table: table, filter: filter, sort: sort, result: resultID, columns: names)
        // The sheet opens on the row of the column the cursor was on.
        let current = currentColumnName.flatMap { names.firstIndex(of: $0) } ?? 0
        sheets.append(SavedSheet(self))
        sheet = .summary(summary)
        columns = SummarySheet.headers
        filter = ""
        sort = nil
        count = names.count
        cursorRow = current; topRow = 0
        resetColumnView()
        marks = nil
        mode = .grid
        scrollToCursor()
        showSummaryRows(summary)
        say("summarising \(counted(names.count, "column")) of \(table)… (Esc cancels)")
        return [.summarize(columns: names, result: resultID)]
    }

    /// The summary's rows as the grid's window (all of them: one per column).
    mutating func showSummaryRows(_ summary: SummarySheet) {
        windowStart = 0
        window = summary.columns.indices.map { summary.snapshot($0) }
        windowValid = true
    }

    /// A column's figures came back: they fill in their row, if the sheet is still on screen.
    mutating func fillSummary(index: Int, with figures: ColumnSummary, result: Int) {
        guard var summary = summarySheet, summary.result == result, index < summary.rows.count else { return }
        // A sample never replaces exact figures.
        if figures.sampledFrom != nil, let shown = summary.rows[index], shown.sampledFrom == nil { return }
        summary.rows[index] = figures
        sheet = .summary(summary)
        showSummaryRows(summary)
    }

    /// Enter on a summary sheet: back to the table, on the column at the cursor.
    mutating func jumpToColumnKey() -> [Effect] {
        guard let summary = summarySheet, cursorRow < summary.columns.count else { return [] }
        let name = summary.columns[cursorRow]
        let effects = popSheet()
        if let index = columns.firstIndex(of: name) {
            moveCursor(toColumn: index)
            say("column \(TerminalText.escapingControlCharacters(name))")
        }
        return effects
    }

    /// Keys a frequency or summary sheet does not take (they act on a table's rows), with what to
    /// do instead; nil for keys it takes.
    func refusal(onDerivedSheet key: Key) -> String? {
        // A frequency sheet marks values, and D / U / u act on their rows.
        if frequencySheet != nil, [.char("v"), .char("V"), .char("D"), .char("U"), .char("u")].contains(key) { return nil }
        switch key {
        case .char("/"), .char("n"), .char("N"), .char("f"), .char("s"), .char("S"), .char("M"),
             .char("v"), .char("V"), .char("D"), .char("U"), .char("u"), .char("I"), .char("e"):
            guard case .char(let c) = key else { return nil }
            if summarySheet != nil { return "\(c) acts on a table's rows, not on a summary: Enter goes to the column, F counts its values, Esc goes back" }
            return "\(c) acts on a table's rows, not on a frequency sheet: Enter opens a value's rows, v marks values, D and U act on their rows, Esc goes back"
        default:
            return nil
        }
    }

    /// `B` on a frequency sheet: its numbers counted again in the next bin width.
    mutating func binKey() -> [Effect] {
        guard let f = frequencySheet else { say("B bins the numbers of a frequency sheet: F opens one", error: true); return [] }
        return [.binFrequency(column: f.column, after: f.binWidth)]
    }

    /// The frequency sheet on screen came back counted in bins of `width` (nil: unbinned).
    mutating func binnedFrequencySheet(width: Int64?, values: Int, total: Int, result: Int, seconds: Double) {
        running = nil
        guard var f = frequencySheet else { return }
        f.binWidth = width
        showCounts(of: f, values: values, total: total, result: result, cursor: 0)
        let what = width.map { "in bins of \(group(Int($0))): \(group(values)) \(values == 1 ? "row" : "rows")" }
            ?? "without bins: \(group(values)) distinct \(values == 1 ? "value" : "values")"
        say("\(f.column) \(what), counted by \(engineName) in \(milliseconds(seconds)); B for the next width, Enter opens \(width == nil ? "a value's" : "a bin's") rows")
    }

    /// Enter on a frequency sheet: the parent's table, filtered to the value at the cursor, as a
    /// new sheet.
    mutating func openValueKey() -> [Effect] {
        guard let f = frequencySheet, count > 0 else { return [] }
        return [.openValue(row: cursorRow, of: f)]
    }
}
