/// What ``FetchingContext/undo()`` would do now, read before it runs, so that a confirmation can
/// say it: the kind of edit it takes back, its table, and how many rows it journaled.
public struct UndoSummary: Sendable, Equatable {
    /// The edit that undo takes back.
    public enum Kind: Sendable, Equatable {
        /// An update: undo gives `columns` their old values.
        case update(columns: [String])
        /// A delete: undo puts the rows back.
        case delete
        /// An insert: undo deletes the rows.
        case insert
        /// An upsert (an import): undo deletes the `inserted` rows and gives the `updated` ones
        /// their old values.
        case upsert(inserted: Int, updated: Int)
    }

    /// The edit undo takes back.
    public var kind: Kind
    /// Its table.
    public var table: String
    /// The rows its journal holds (what undo writes at most).
    public var rows: Int
    /// Of those, the rows changed since the edit (another program wrote to them, deleted them,
    /// or put a row back under a deleted row's key): undo leaves them as they are now.
    public var changedSince: Int
    /// Of the rows a delete's undo puts back, those that will come back under a new rowid: SQLite
    /// gave theirs to another row since (tables whose rowid no column declares).
    public var renumbered: Int

    public init(kind: Kind, table: String, rows: Int, changedSince: Int = 0, renumbered: Int = 0) {
        self.kind = kind
        self.table = table
        self.rows = rows
        self.changedSince = changedSince
        self.renumbered = renumbered
    }

    /// Two summaries of one edit's parts (one per store) as one.
    package static func + (a: UndoSummary, b: UndoSummary) -> UndoSummary {
        var kind = a.kind
        if case .upsert(let i, let u) = a.kind, case .upsert(let j, let v) = b.kind { kind = .upsert(inserted: i + j, updated: u + v) }
        return UndoSummary(kind: kind, table: a.table, rows: a.rows + b.rows, changedSince: a.changedSince + b.changedSince, renumbered: a.renumbered + b.renumbered)
    }
}

extension BatchStoreError {
    /// An undo refusal's reason alone, without the advice that ends it ("run it without undo…"):
    /// what a confirmation says before the edit runs.
    package var undoRefusalReason: String {
        guard let cut = message.range(of: "; run it without undo") else { return message }
        return String(message[..<cut.lowerBound])
    }
}
