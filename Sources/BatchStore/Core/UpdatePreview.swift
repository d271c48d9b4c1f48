import Foundation

/// What a batch update would do, read before it runs (its question, a dry run): how many rows
/// it changes, how many non-NULL values each assigned column would lose to NULL, and a few rows
/// with each assigned column's value now and the value the update would write. Writes nothing.
public struct UpdatePreview: Sendable, Equatable {
    /// One assigned column of one sample row.
    public struct Change: Sendable, Equatable {
        public var column: String
        public var old: SQLValue
        public var new: SQLValue
        /// True when the values are numbers read as text (PostgreSQL's numeric, exact): shown
        /// without quotes.
        public var isNumericText: Bool
        public init(column: String, old: SQLValue, new: SQLValue, isNumericText: Bool = false) {
            self.column = column
            self.old = old
            self.new = new
            self.isNumericText = isNumericText
        }
    }
    /// One sample row: its key columns' names and values, and its changes.
    public struct SampleRow: Sendable, Equatable {
        public var keyNames: [String]
        public var key: [SQLValue]
        public var changes: [Change]
        /// The file it is in, when the result spans several.
        public var store: String?
        public init(keyNames: [String], key: [SQLValue], changes: [Change], store: String? = nil) {
            self.keyNames = keyNames
            self.key = key
            self.changes = changes
            self.store = store
        }
    }
    /// The rows the update matches.
    public var rows: Int
    /// For each assigned column, in assignment order, how many of the matched rows hold a
    /// non-NULL value there that the update would turn into NULL.
    public var nulled: [(column: String, count: Int)]
    /// The first few matched rows (by key).
    public var sample: [SampleRow]

    public init(rows: Int, nulled: [(column: String, count: Int)], sample: [SampleRow]) {
        self.rows = rows
        self.nulled = nulled
        self.sample = sample
    }

    public static func == (a: UpdatePreview, b: UpdatePreview) -> Bool {
        a.rows == b.rows && a.sample == b.sample && a.nulled.elementsEqual(b.nulled) { $0.column == $1.column && $0.count == $1.count }
    }

    /// Several previews as one (the stores of a coordinated result): rows and NULL counts
    /// summed, samples in order up to `sample` rows.
    public static func combining(_ parts: [UpdatePreview], sample: Int) -> UpdatePreview {
        guard var total = parts.first else { return UpdatePreview(rows: 0, nulled: [], sample: []) }
        for part in parts.dropFirst() {
            total.rows += part.rows
            for (i, n) in part.nulled.enumerated() where i < total.nulled.count { total.nulled[i].count += n.count }
            total.sample += part.sample
        }
        total.sample = Array(total.sample.prefix(sample))
        return total
    }

    /// `12 non-NULL values of dep_delay would become NULL` (each column that loses some), or nil.
    public var nullingNote: String? {
        let parts = nulled.filter { $0.count > 0 }.map { "\(grouped($0.count)) non-NULL \($0.count == 1 ? "value" : "values") of \($0.column)" }
        guard !parts.isEmpty else { return nil }
        return "\(parts.joined(separator: ", ")) would become NULL"
    }

    /// `id 1: 10 → 5; id 2: nil → nil` (one column), `id 1: a 10 → 5, b "x" → "y"` (several):
    /// each value as the predicate language writes it (control characters escaped: values from
    /// a file are shown, never sent raw to a terminal), cut to `width` characters with ….
    public func sampleText(width: Int = 24) -> String {
        sample.map { row in
            let key = zip(row.keyNames, row.key).map { "\($0) \(Self.literal($1, width: width))" }.joined(separator: " ")
                + (row.store.map { " (\($0))" } ?? "")
            let changes = row.changes.map { change in
                let pair = "\(Self.literal(change.old, numeric: change.isNumericText, width: width)) → \(Self.literal(change.new, numeric: change.isNumericText, width: width))"
                return row.changes.count == 1 ? pair : "\(FetchPredicate.formatKey(change.column)) \(pair)"
            }.joined(separator: ", ")
            return "\(key): \(changes)"
        }.joined(separator: "; ")
    }

    /// A value as the predicate language writes it (`"text"`, `12`, `nil`; with `numeric`, text
    /// holding a number unquoted), cut to `width` characters.
    public static func literal(_ value: SQLValue, numeric: Bool = false, width: Int = 24) -> String {
        let text: String
        switch value {
        case .blob(let data): text = "<blob \(data.count) bytes>"
        case .real(let d) where !d.isFinite: text = String(d)
        case .text(let t) where numeric && t.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) || "NaInfity".contains($0) }): text = t
        default: text = FetchPredicate.literal(value) ?? "?"
        }
        // (A literal escapes control characters itself.)
        guard text.count > width else { return text }
        return String(text.prefix(max(1, width - 1))) + "…"
    }
}

/// What a batch update would do, found out before anything is written.
public struct ValidationReport: Sendable {
    /// Rows the request matches.
    public var rowsMatched: Int
    /// Rows whose new values would break a NOT NULL, CHECK or UNIQUE constraint.
    public var rowsFailing: Int
    /// One failing row and SQLite's reason for it, when some fail.
    public var example: (id: ObjectID, reason: String)?
    /// What the update would write (a few rows old → new, the non-NULL values it would turn
    /// into NULL), read before it is tried; nil where not read.
    public var preview: UpdatePreview?
    /// True when every matched row would be written.
    public var isValid: Bool { rowsFailing == 0 }

    /// A report; other engines' contexts make theirs this way.
    public init(rowsMatched: Int, rowsFailing: Int, example: (id: ObjectID, reason: String)?) {
        self.rowsMatched = rowsMatched
        self.rowsFailing = rowsFailing
        self.example = example
    }
}

/// Where a cancellable edit is, handed to the progress handler of an interruptible call
/// (`ManagedObjectContext.interruptible(_:_:)`, and every `FetchingContext`'s).
public struct EditProgress: Sendable, Equatable {
    /// What the edit is doing.
    public enum Phase: Sendable, Equatable {
        /// Counting or checking: nothing is written yet.
        case reading
        /// Inside the edit's transaction: a cancel now rolls it back.
        case writing
    }
    public var phase: Phase
    /// Seconds since the interruptible call began.
    public var elapsed: Double

    package init(phase: Phase, elapsed: Double) {
        self.phase = phase
        self.elapsed = elapsed
    }
}
