import BatchStore
import Foundation
import TerminalCore

extension BrowserState {
    /// Opens `kind`'s prompt holding `text`, at the newest end of its history.
    mutating func openPrompt(_ kind: PromptKind, text: String = "") {
        historyWalk = nil
        mode = .prompt(kind, line: LineEditor(text))
    }

    /// Brings back the prompt whose Enter started what just failed, holding what was typed, the
    /// cursor at `column` (1-based, in Unicode scalars) when the error names one; the error stays
    /// on screen above it.
    mutating func reopenSubmittedPrompt(column: Int?) {
        guard let prompt = submitted else { return }
        submitted = nil
        historyWalk = nil
        mode = .prompt(prompt.kind, line: column.map { LineEditor(prompt.text, scalarColumn: $0) } ?? LineEditor(prompt.text))
    }

    mutating func promptKey(_ key: Key, kind: PromptKind, line: LineEditor) -> [Effect] {
        var line = line
        switch key {
        case .escape, .ctrl("c"):
            mode = .grid
            cellEdit = nil
            return []
        case .ctrl("d") where line.text.isEmpty:
            mode = .grid
            return []
        case .char(let c) where kind == .copyRows || kind == .copyCell:
            return chooseCopyFormat(c, cell: kind == .copyCell)
        case .up, .down, .ctrl("p"), .ctrl("n"):
            line = walkHistory(kind, from: line, older: key == .up || key == .ctrl("p"))
        case .tab where kind == .column:
            line = LineEditor(completeColumn(line.text))
        case .enter:
            return submitPrompt(kind, text: line.text)
        default:
            guard line.apply(key) else {
                say("unknown key \(KeyNotation.displayName(key)) in a prompt: Enter runs the line, Esc cancels (then ? lists the keys)", error: true)
                return []
            }
        }
        mode = .prompt(kind, line: line)
        return []
    }

    /// Up (`older`) or Down in `kind`'s history: the entry before or after the one shown; after
    /// the newest, the line that was being typed.
    mutating func walkHistory(_ kind: PromptKind, from line: LineEditor, older: Bool) -> LineEditor {
        let entries = history.entries(for: kind)
        let walk = historyWalk ?? HistoryWalk(index: entries.count, draft: line.text)
        let index = older ? walk.index - 1 : walk.index + 1
        guard index >= 0, index <= entries.count else {
            say(kind.historyName == nil ? "this prompt keeps no history" : older ? "no earlier \(kind.historyName ?? "") in the history" : "back at the line being typed")
            return line
        }
        historyWalk = HistoryWalk(index: index, draft: walk.draft)
        message = nil
        return LineEditor(index == entries.count ? walk.draft : entries[index])
    }

    /// Enter on `kind`'s prompt holding `text`: runs it, adds it to the history; an error said
    /// here (a row number that is not one, an unknown column, a `:w` without a file) keeps the
    /// prompt open with the text to fix.
    mutating func submitPrompt(_ kind: PromptKind, text: String) -> [Effect] {
        mode = .grid
        message = nil
        historyWalk = nil
        let run = runPrompt(kind, text: text)
        // After the work: a file that cannot be written is said after what the work says.
        let save: [Effect] = history.add(text, for: kind) ? [.saveHistory(kind: kind, text: text)] : []
        if run.isEmpty, messageIsError, message != nil, kind != .copyRows, kind != .copyCell {
            mode = .prompt(kind, line: LineEditor(text))
        } else if !run.isEmpty {
            submitted = SubmittedPrompt(kind: kind, text: text)
        }
        return run + save
    }

    mutating func runPrompt(_ kind: PromptKind, text: String) -> [Effect] {
        switch kind {
        case .goToRow:
            if let effects = writeCommand(text) { return effects }
            if let effects = queryCommand(text) { return effects }
            guard let n = Int(text.trimmingCharacters(in: " ")), n >= 1 else {
                if !text.isEmpty { say("not a row number: \(TerminalText.escapingControlCharacters(text))", error: true) }
                return []
            }
            move(to: min(n, count) - 1)
            // Past the end: the last row, and the message says so rather than seeming to obey.
            if n > count { say(count == 0 ? "no rows to go to" : "row \(group(n)) is past the end: on the last, row \(group(count))") }
        case .search:
            guard let column = currentColumnName, !text.isEmpty else { return [] }
            return [.search(column: column, text: text, from: cursorRow, backwards: false)]
        case .filter:
            guard let table else { return [] }
            return [.open(table: table, filter: text, sort: sort)]
        case .assignments:
            guard !text.trimmingCharacters(in: " ").isEmpty, let target = editTarget else { return [] }
            beginEdit(.countingUpdate(table: target.table))
            return [.countUpdate(assignments: text, target: target)]
        case .column:
            jumpToColumn(text)
        case .referencing:
            return chooseReferencing(text)
        case .copyRows, .copyCell:
            say("nothing copied: t, c, j or s picks the format")
        case .cellEdit:
            guard let cell = cellEdit, !text.trimmingCharacters(in: " ").isEmpty, let table else { return [] }
            // Kept until the question opens: a failure (a value the column refuses) brings the prompt back.
            let assignment = "\(FetchPredicate.formatKey(cell.column)) = \(text)"
            // One value for one cell: `5, v = 0` would set a second column the question never names as a cell.
            if let parsed = try? UpdateExpression.parseAssignments(assignment), parsed.count != 1 {
                openPrompt(.cellEdit, text: text)
                say("e sets one cell: type one value (a comma outside quotes starts another assignment; U sets several columns)", error: true)
                return []
            }
            let edited = editedTable(of: table)
            let target = EditTarget(result: cell.result, table: edited, marked: [cell.id], cell: cell, through: edited == table ? nil : table)
            beginEdit(.countingUpdate(table: edited))
            return [.countUpdate(assignments: assignment, target: target)]
        }
        return []
    }

    /// `e`: the cursor's cell read whole from the file, then a prompt holding it as a literal
    /// (text quoted, NULL as nil); Enter asks to set it, as `U` asks, for that row alone.
    mutating func editCellKey() -> [Effect] {
        if let why = readOnlyReason { say("e does nothing: \(why)", error: true); return [] }
        if onStoreColumn { say("\(Self.storeColumn) names the file each row comes from: it cannot be edited; l moves to a table column", error: true); return [] }
        guard let resultID, sheet == .table, let column = currentColumnName, let table else { say("no cell to edit here", error: true); return [] }
        if let through = links[table]?.editTables.first(where: { $0.table == editedTable(of: table) }), through.column(for: column) == nil {
            say("e does nothing here: \(TerminalText.escapingControlCharacters(column)) is not a column of \(through.table) read straight from it\(links[table].map { $0.editTables.count > 1 ? " (T picks another table)" : "" } ?? "")", error: true)
            return []
        }
        guard let row = snapshot(cursorRow), row.exists, row.id != nil else { say("this row was deleted since the result was fetched: r reloads", error: true); return [] }
        return [.loadCell(row: cursorRow, column: column, result: resultID)]
    }

    public var currentColumnName: String? { currentColumnIndex.flatMap { $0 < columns.count ? columns[$0] : nil } }

    /// The first column of a result over several files, naming each row's store.
    static let storeColumn = "@store"

    /// True on the store column of a result over several files (not a column of the table).
    var onStoreColumn: Bool { currentColumnIndex == 0 && columns.first == Self.storeColumn }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
