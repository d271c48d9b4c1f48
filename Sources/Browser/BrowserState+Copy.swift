import BatchStore
import TerminalCore

/// The formats `y` and `Y` copy in (the second key picks one).
public enum CopyFormat: String, Sendable, CaseIterable {
    case tsv, csv, json, sql

    /// The second key: `t`, `c`, `j`, `s`.
    init?(key: Character) {
        switch key {
        case "t": self = .tsv
        case "c": self = .csv
        case "j": self = .json
        case "s": self = .sql
        default: return nil
        }
    }
}

/// What `y` or `Y` copies: from result `result`, in `format`.
public struct CopyRequest: Sendable, Equatable {
    public enum Scope: Sendable, Equatable {
        /// `Y`: one cell, as a one-column table.
        case cell(row: Int, column: String)
        /// `y` with nothing marked: the row at the cursor.
        case row(Int)
        /// `y` with rows marked one by one.
        case marked([ObjectID])
        /// `y` after `V`: every row of the result, in its order.
        case all
    }

    public var scope: Scope
    public var format: CopyFormat
    public var result: Int

    package init(scope: Scope, format: CopyFormat, result: Int) {
        self.scope = scope
        self.format = format
        self.result = result
    }
}

extension BrowserState {
    /// `y` (rows) or `Y` (the cell): asks for the format with one key.
    mutating func copyKey(cell: Bool) -> [Effect] {
        let key = cell ? "Y" : "y"
        guard sheet == .table else { say("\(key) copies a table's rows: Esc goes back to one", error: true); return [] }
        guard count > 0, resultID != nil else { say("nothing to copy", error: true); return [] }
        if cell, onStoreColumn { say("\(Self.storeColumn) names the file each row comes from: l moves to a table column", error: true); return [] }
        mode = .prompt(cell ? .copyCell : .copyRows, text: "")
        return []
    }

    /// What the copy prompt says: what will be copied, and the format keys.
    var copyPrompt: String {
        let what: String
        if case .prompt(.copyCell, _) = mode {
            what = "the cell " + TerminalText.escapingControlCharacters(currentColumnName ?? "")
        } else if allMarked {
            what = "all \(rows(count))"
        } else if !marked.isEmpty {
            what = "\(group(marked.count)) marked \(marked.count == 1 ? "row" : "rows")"
        } else {
            what = "row \(group(cursorRow + 1))"
        }
        return "copy \(what) as: t TSV, c CSV, j JSON, s SQL INSERT (Esc: nothing) "
    }

    /// The key after `y` or `Y`: the copy in that format, or nothing.
    mutating func chooseCopyFormat(_ c: Character, cell: Bool) -> [Effect] {
        mode = .grid
        guard let format = CopyFormat(key: c) else {
            say("not a format: t TSV, c CSV, j JSON, s SQL INSERT; nothing copied", error: true)
            return []
        }
        guard let resultID else { return [] }
        let scope: CopyRequest.Scope
        if cell {
            guard let column = currentColumnName else { return [] }
            scope = .cell(row: cursorRow, column: column)
        } else if allMarked {
            scope = .all
        } else if let target = editTarget, let ids = target.marked {
            scope = .marked(ids)
        } else {
            scope = .row(cursorRow)
        }
        say("copying…")
        return [.copy(CopyRequest(scope: scope, format: format, result: resultID))]
    }
}
