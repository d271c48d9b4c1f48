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

/// The refusals of undo both engines make, worded once. A refusal of what an edit changes beyond
/// its own rows reads `<what it changes>, <why undo could not take it back>; run it without
/// undo`, and a dry run quotes its first part (``beyondRows(_:)``).
package enum UndoRefusal {
    /// Why undo could not take back what an edit changes beyond its own rows.
    package enum Why: String, CaseIterable {
        case foreignKeyActions = "which undo could not restore"
        case triggerWrites = "whose writes undo could not take back"
        case triggerFunctions = "and undo could not take back what a trigger function may have written"
    }

    /// `<beyond>, <why>; run it without undo`, an `.undoRefused` error.
    package static func error(_ beyond: String, _ why: Why) -> BatchStoreError {
        BatchStoreError(.undoRefused, "\(beyond), \(why.rawValue); run it without undo")
    }

    /// What a refusal's reason says the edit changes beyond its own rows, nil for a refusal of
    /// another kind.
    package static func beyondRows(_ reason: String) -> String? {
        Why.allCases.lazy.compactMap { reason.range(of: ", " + $0.rawValue) }.first.map { String(reason[..<$0.lowerBound]) }
    }

    /// `this change touches 1,234 rows, more than the undo limit of 1,000`.
    package static func tooBigReason(rows: Int, limit: Int) -> String {
        "this change touches \(grouped(rows)) \(rows == 1 ? "row" : "rows"), more than the undo limit of \(grouped(limit))"
    }

    /// ``tooBigReason(rows:limit:)`` as a `.tooBigToUndo` error, with its advice.
    package static func tooBig(rows: Int, limit: Int) -> BatchStoreError {
        BatchStoreError(.tooBigToUndo, "\(tooBigReason(rows: rows, limit: limit)); run it without undo, or raise undoLimit")
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

/// A journaled edit, as both engines record it: what its journal holds, what a summary calls it
/// and how undo changes the rows it writes back.
package enum JournaledEdit: Sendable, Equatable {
    /// An update: the journal holds the old values of `columns`.
    case update(columns: [String])
    /// A delete: the journal holds the rows' `columns` whole.
    case delete(columns: [String])
    /// An insert: the journal holds the new rows' keys.
    case insert
    /// An upsert: the keys of the rows it inserted and, for the rows it updated, the old values
    /// of `columns`.
    case upsert(columns: [String])

    /// The columns whose old values the journal holds.
    package var columns: [String] {
        switch self {
        case .update(let columns), .delete(let columns), .upsert(let columns): return columns
        case .insert: return []
        }
    }

    /// What ``UndoSummary`` calls the edit; an upsert's two counts are read from its journal.
    package func summaryKind(upsertCounts: () throws -> (inserted: Int, updated: Int)) rethrows -> UndoSummary.Kind {
        switch self {
        case .update(let columns): return .update(columns: columns)
        case .delete: return .delete
        case .insert: return .insert
        case .upsert:
            let counts = try upsertCounts()
            return .upsert(inserted: counts.inserted, updated: counts.updated)
        }
    }

    /// How undo changes the rows it writes back: a delete's come back, an update's are updated,
    /// an insert's go. Nil for an upsert, whose undo deletes some rows and updates others.
    package var undoneChange: StoredChanges.Kind? {
        switch self {
        case .delete: return .inserted
        case .update: return .updated
        case .insert: return .deleted
        case .upsert: return nil
        }
    }
}
