import BatchStore
import TerminalCore

/// A foreign key as the browser follows it: rows of `child` whose `childColumns` hold the values
/// of `parentColumns` in a row of `parent` (Core Data's to-one from the child, to-many from the parent).
public struct Reference: Sendable, Equatable {
    /// The referencing table and its foreign-key columns.
    public var child: String
    public var childColumns: [String]
    /// The referenced table and the columns referenced (its primary key when the key names none;
    /// empty when the referenced table declares no primary key, which SQLite's foreign keys need).
    public var parent: String
    public var parentColumns: [String]

    package init(child: String, childColumns: [String], parent: String, parentColumns: [String]) {
        self.child = child
        self.childColumns = childColumns
        self.parent = parent
        self.parentColumns = parentColumns
    }

    /// `movie(director_id)`, as the `R` prompt lists it (control characters escaped).
    public var childLabel: String {
        TerminalText.escapingControlCharacters("\(child)(\(childColumns.joined(separator: ", ")))")
    }
}

/// A table's foreign keys both ways: its own (to-one) and the other tables' that point to it (to-many).
public struct TableLinks: Sendable, Equatable {
    /// This table's foreign keys: Enter on one of their columns opens the row referred to.
    public var toOne: [Reference]
    /// Foreign keys of other tables (or of this one) into this table: `R` lists them.
    public var toMany: [Reference]
    /// For a query's result: the tables whose rows its rows name by key, which D, U and e act on
    /// (the first, or the one `T` picked).
    public var editTables: [QueryEditTable]

    package init(toOne: [Reference] = [], toMany: [Reference] = [], editTables: [QueryEditTable] = []) {
        self.toOne = toOne
        self.toMany = toMany
        self.editTables = editTables
    }

    /// A table without foreign keys either way.
    public static let none = TableLinks()
}

extension BrowserState {
    /// The foreign keys of the table sheet on screen (none on other sheets).
    public var currentLinks: TableLinks {
        guard sheet == .table, let table else { return .none }
        return links[table] ?? .none
    }

    /// The foreign key the cursor's column belongs to, if any (the first, when several share it).
    var referenceAtCursor: Reference? {
        guard let column = currentColumnName else { return nil }
        return currentLinks.toOne.first { $0.childColumns.contains(column) }
    }

    /// Enter on a table sheet: the row a foreign-key cell refers to, else the record view.
    mutating func enterOnTable() -> [Effect] {
        guard count > 0 else { return [] }
        if let reference = referenceAtCursor {
            if eagerLoaded != nil { say("Enter follows a key over batches: M goes back to them first", error: true); return [] }
            guard let resultID else { say("no result yet: r loads it", error: true); return [] }
            return [.openRelated(reference, toMany: false, row: cursorRow, result: resultID)]
        }
        return [.loadRecord(row: cursorRow)]
    }

    /// `R`: the rows of other tables that refer to the row at the cursor. With one such foreign
    /// key they open at once; with several a prompt lists them by number.
    mutating func referencingKey() -> [Effect] {
        guard sheet == .table, let table else { say("R lists the tables that refer to a table's row: Esc goes back to one", error: true); return [] }
        let toMany = currentLinks.toMany
        guard !toMany.isEmpty else {
            say("no table refers to \(TerminalText.escapingControlCharacters(table)): R opens the rows whose foreign keys point to this row", error: true)
            return []
        }
        if eagerLoaded != nil { say("R opens a result over batches: M goes back to them first", error: true); return [] }
        guard count > 0, let resultID else { say("no row to follow", error: true); return [] }
        if toMany.count == 1 { return [.openRelated(toMany[0], toMany: true, row: cursorRow, result: resultID)] }
        mode = .prompt(.referencing, text: "")
        return []
    }

    /// The `R` prompt: each foreign key into this table by number, `rows of 1 movie(director_id), 2 award(a, b): `.
    var referencingPrompt: String {
        "rows of " + currentLinks.toMany.enumerated().map { "\($0 + 1) \($1.childLabel)" }.joined(separator: ", ") + ": "
    }

    /// Enter in the `R` prompt: the foreign key numbered `text`.
    mutating func chooseReferencing(_ text: String) -> [Effect] {
        let toMany = currentLinks.toMany
        guard let n = Int(text.trimmingCharacters(in: " ")), n >= 1, n <= toMany.count else {
            if !text.isEmpty { say("not one of 1–\(toMany.count): \(TerminalText.escapingControlCharacters(text))", error: true) }
            return []
        }
        guard let resultID, count > 0 else { return [] }
        return [.openRelated(toMany[n - 1], toMany: true, row: cursorRow, result: resultID)]
    }
}
