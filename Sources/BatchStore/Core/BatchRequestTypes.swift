import Foundation

/// What a batch request answers with.
public enum BatchResultType: Sendable {
    /// Success or failure only.
    case statusOnly
    /// The number of rows changed.
    case count
    /// The IDs of the rows changed (`RETURNING` their keys), as an array: memory O(rows changed).
    case objectIDs
    /// The keys of the rows changed, kept in a temp table (``StoredChanges``), not in Swift memory;
    /// ``BatchResult/changes`` merges them into contexts at a cost set by the objects each holds.
    /// Costs one `INSERT INTO temp … SELECT <key> …` in the request's transaction.
    case changes
}

/// The answer of a batch request.
public struct BatchResult: Sendable {
    /// True when the request ran and committed.
    public let succeeded: Bool
    /// Rows changed (nil for `.statusOnly`).
    public let count: Int?
    /// IDs of the rows changed (only for `.objectIDs`).
    public let objectIDs: [ObjectID]?
    /// The change to merge into contexts: the IDs of `.objectIDs`, or the stored keys of `.changes`
    /// (nil for `.statusOnly` and `.count`).
    public let changes: ChangeSet?
    /// For an edit across several stores (``CoordinatedContext``): each store's own result, by
    /// store name; empty for one store.
    public internal(set) var byStore: [String: BatchResult] = [:]

    /// A result; callers combine several stores' results this way.
    public init(succeeded: Bool, count: Int?, objectIDs: [ObjectID]?, changes: ChangeSet? = nil) {
        self.succeeded = succeeded
        self.count = count
        self.objectIDs = objectIDs
        self.changes = changes
    }

    /// What a committed batch edit of `count` rows answers, as `type` asks, on every engine: its
    /// status alone; its count; its rows' `ids` with `changes` (the same IDs, to merge); or
    /// `changes` alone (stored keys). An edit that matched nothing answers 0, `[]` and an empty
    /// change set.
    package init(_ type: BatchResultType, count: Int, ids: [ObjectID] = [], changes: ChangeSet = ChangeSet()) {
        switch type {
        case .statusOnly: self.init(succeeded: true, count: nil, objectIDs: nil)
        case .count: self.init(succeeded: true, count: count, objectIDs: nil)
        case .objectIDs: self.init(succeeded: true, count: count, objectIDs: ids, changes: changes)
        case .changes: self.init(succeeded: true, count: count, objectIDs: nil, changes: changes)
        }
    }
}

/// A value to assign in a batch update: a constant, another attribute, arithmetic, concatenation
/// (`||`) or a function (`now()`, `lowercase`, `uppercase`, `coalesce`, `abs`, `round`, …).
public struct UpdateExpression: Sendable, Equatable {
    package let node: ExpressionNode

    /// Parses one expression, e.g. `votes + 1` or `round(rating * 1.1, 1)`.
    public init(_ text: String) throws {
        var parser = try Parser(text: text, what: "expression", concatenation: true)
        node = try parser.parseExpressionToEnd()
    }

    /// A constant value.
    public static func constant(_ value: SQLValue) -> UpdateExpression { UpdateExpression(node: .value(value)) }

    init(node: ExpressionNode) { self.node = node }

    /// The expression with each column it reads renamed by `rename` (given the name as written,
    /// a path joined with `.`): a query's column as the table's column it shows.
    package func renamingColumns(_ rename: (String) throws -> String) throws -> UpdateExpression {
        func walk(_ node: ExpressionNode) throws -> ExpressionNode {
            switch node {
            case .value: return node
            case .keyPath(let path, let column): return .keyPath([try rename(path.joined(separator: "."))], column: column)
            case .binary(let op, let l, let r): return .binary(op, try walk(l), try walk(r))
            case .negate(let inner): return .negate(try walk(inner))
            case .function(let name, let arguments, let column): return .function(name, try arguments.map(walk), column: column)
            case .list(let items): return .list(try items.map(walk))
            }
        }
        return UpdateExpression(node: try walk(node))
    }

    /// Refuses what an assignment to `column` of `table` would store silently other than meant,
    /// as a predicate refuses what it cannot compare: a division (or `%`) by a literal zero, which
    /// both engines would turn into NULL (SQLite) or a failure (PostgreSQL); and, in a column that
    /// holds numbers (`numeric`: ``Attribute/holdsNumbers`` on SQLite, PostgreSQL's number types),
    /// text or a blob that is not a number, which SQLite would store as text beside the numbers.
    /// - Throws: `.invalidQuery` naming the column.
    package func check(assigningTo column: String, of table: String, declaredType: String, numeric: Bool) throws {
        func zero(_ node: ExpressionNode) -> Bool {
            switch node {
            case .value(.integer(0)): return true
            case .value(.real(let d)): return d == 0
            case .negate(let inner): return zero(inner)
            default: return false
            }
        }
        func visit(_ node: ExpressionNode) throws {
            switch node {
            case .binary(let op, let lhs, let rhs):
                if op == "/" || op == "%", zero(rhs) {
                    throw BatchStoreError(.invalidQuery, "\(table).\(column): \(op == "/" ? "division" : "remainder") by zero (it would set NULL); nothing was changed")
                }
                try visit(lhs)
                try visit(rhs)
            case .negate(let inner): try visit(inner)
            case .function(_, let arguments, _): for a in arguments { try visit(a) }
            case .list(let items): for i in items { try visit(i) }
            case .value, .keyPath: break
            }
        }
        try visit(node)
        guard numeric else { return }
        let type = declaredType.isEmpty ? "" : " (declared \(declaredType))"
        switch node {
        case .value(.text(let text)) where !Self.isNumberText(text):
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            throw BatchStoreError(.invalidQuery, "\(table).\(column) holds numbers\(type): the text \(shown.debugDescription) is not one; give a number, or nil for NULL (nothing was changed)")
        case .value(.blob):
            throw BatchStoreError(.invalidQuery, "\(table).\(column) holds numbers\(type): a blob is not one (nothing was changed)")
        default: break
        }
    }

    /// True when SQLite would store `text` as a number in a column of numbers: a decimal integer
    /// or real literal in ASCII digits, SQLite's white space around allowed (not `inf`, `nan`,
    /// hex or other scripts' digits, which stay text).
    static func isNumberText(_ text: String) -> Bool {
        let space = CharacterSet(charactersIn: " \t\n\u{0B}\u{0C}\r")
        return text.trimmingCharacters(in: space).wholeMatch(of: /[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?/) != nil
    }

    /// Parses `name = expression, name = expression, …` into ordered assignments.
    /// - Throws: `.syntax` naming the column of the problem.
    public static func parseAssignments(_ text: String) throws -> [(name: String, value: UpdateExpression)] {
        var parser = try Parser(text: text, what: "assignment", concatenation: true)
        return try parser.parseAssignmentsToEnd().map { ($0.name, UpdateExpression(node: $0.value)) }
    }
}

/// Updates every row that matches a predicate with set-based SQL; no object is loaded.
///
/// Runs, in one `BEGIN IMMEDIATE` transaction,
/// `UPDATE main."T" AS t SET "c" = <expr>, … WHERE <predicate> [RETURNING <key>]`; a predicate that
/// crosses relationships becomes `WHERE <key> IN (SELECT t.<key> FROM … JOIN … WHERE …)`.
public struct BatchUpdateRequest: Sendable {
    public var entityName: String
    public var predicate: FetchPredicate?
    /// Assignments, applied in order (SQLite evaluates every right-hand side on the old row).
    public var propertiesToUpdate: [(name: String, value: UpdateExpression)]
    public var resultType: BatchResultType

    public init(entityName: String, predicate: FetchPredicate? = nil, propertiesToUpdate: [(name: String, value: UpdateExpression)], resultType: BatchResultType = .statusOnly) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
        self.resultType = resultType
    }
}

/// Deletes every row that matches a fetch request (predicate, and sort + limit for "the first N"),
/// or the rows of given object IDs, with set-based SQL; no object is loaded.
public struct BatchDeleteRequest: Sendable {
    public var fetchRequest: FetchRequest?
    public var objectIDs: [ObjectID]?
    public var resultType: BatchResultType
    /// Apply the schema's delete rules (cascade, nullify, deny) in the same transaction, before the
    /// delete, instead of leaving them to SQLite's foreign-key actions (which still apply to anything
    /// left). Counts and IDs in the result are the requested entity's rows only.
    public var appliesDeleteRules = false

    public init(fetchRequest: FetchRequest, resultType: BatchResultType = .statusOnly) {
        self.fetchRequest = fetchRequest
        self.objectIDs = nil
        self.resultType = resultType
    }

    public init(objectIDs: [ObjectID], resultType: BatchResultType = .statusOnly) {
        self.fetchRequest = nil
        self.objectIDs = objectIDs
        self.resultType = resultType
    }
}

/// A column a batch update may assign, as both engines describe one: what
/// ``BatchUpdateRequest/compiledAssignments(of:columns:named:compile:)`` checks.
package protocol AssignableColumn {
    var name: String { get }
    var declaredType: String { get }
    var isGenerated: Bool { get }
    /// True when the column holds numbers, so text or a blob that is not a number is refused.
    var holdsNumbers: Bool { get }
}

extension Attribute: AssignableColumn {}

extension BatchUpdateRequest {
    /// The assignments, each checked against the column it names and compiled by `compile` (the
    /// new value as SQL over alias `t`), in order: at least one; each a column of `table` that
    /// `column` finds (else the error lists `columns`), not generated, assigned once, given a value
    /// ``UpdateExpression/check(assigningTo:of:declaredType:numeric:)`` accepts. The same rules and
    /// messages on both engines.
    /// - Returns: the assigned columns, the `"c" = <expr>, …` clause and each new value's SQL.
    package func compiledAssignments<Column: AssignableColumn>(
        of table: String, columns: [Column], named column: (String) -> Column?, compile: (Column, UpdateExpression) throws -> String
    ) throws -> (columns: [String], sets: String, expressions: [String]) {
        guard !propertiesToUpdate.isEmpty else { throw BatchStoreError(.invalidArgument, "a batch update needs at least one assignment") }
        var names: [String] = [], expressions: [String] = []
        for (name, value) in propertiesToUpdate {
            guard let target = column(name) else {
                throw BatchStoreError(.noSuchAttribute, "\(table) has no column named \(name.debugDescription); columns: \(columns.map(\.name).joined(separator: ", "))")
            }
            if target.isGenerated { throw BatchStoreError(.readOnly, "\(table).\(target.name) is a generated column and cannot be set") }
            guard !names.contains(target.name) else { throw BatchStoreError(.invalidArgument, "\(target.name) is assigned twice") }
            names.append(target.name)
            try value.check(assigningTo: target.name, of: table, declaredType: target.declaredType, numeric: target.holdsNumbers)
            expressions.append(try compile(target, value))
        }
        return (names, zip(names, expressions).map { "\(quoteIdentifier($0)) = \($1)" }.joined(separator: ", "), expressions)
    }
}

/// Inserts rows with prepared statements in one transaction; no managed object is made.
///
/// Rows come from an array of dictionaries, from a handler called until it returns nil (streaming:
/// nothing is accumulated), or from `EncodableRecord`s (GRDB's Codable support). Keys are column
/// names; a missing key takes the column's default; an unknown key is an error naming it.
///
/// Runs `INSERT INTO main."T" (<the row's columns>) VALUES (?, …) [ON CONFLICT DO NOTHING] [RETURNING <key>]`
/// once per row, one cached statement per distinct column set; an upsert probes for the existing
/// row first and runs an `UPDATE` of the given columns or an `INSERT` (`UpsertWriter`).
public struct BatchInsertRequest {
    /// What to do when a row conflicts with a UNIQUE or PRIMARY KEY constraint.
    public enum ConflictPolicy: Sendable {
        /// Stop: nothing is written (the default).
        case fail
        /// Skip the conflicting row (`ON CONFLICT DO NOTHING`); other constraints still fail.
        case ignore
        /// Update the existing row, setting only the columns this row gives; insert the row when
        /// none exists (see `UpsertWriter`: the existing row is found by key first, so NOT NULL
        /// is never checked for a row that exists). Core Data's upsert overwrites every column;
        /// this one leaves the others alone. Undoable: undo restores the rows it updated and
        /// deletes the rows it inserted.
        case upsert
    }

    public var entityName: String
    public var conflictPolicy: ConflictPolicy
    public var resultType: BatchResultType
    /// True (the default): a row whose foreign key names no row of its parent table fails the
    /// insert, naming the row, the column and the value. False: rows go in as they are, as files
    /// with dangling keys hold them (SQLite's `PRAGMA foreign_keys` off for this transaction).
    /// SQLite only; PostgreSQL always checks.
    public var checksForeignKeys = true
    package let next: () throws -> [String: SQLValue]?
    /// For rows by position: the columns each row gives, in order, and the rows themselves
    /// (`next` reads the same rows by name, for an engine or a path that wants names).
    package let positional: (columns: [String], next: () throws -> [SQLValue]?)?

    /// Rows from an array of dictionaries.
    public init(entityName: String, objects: [[String: SQLValue]], conflictPolicy: ConflictPolicy = .fail, resultType: BatchResultType = .statusOnly) {
        var iterator = objects.makeIterator()
        self.init(entityName: entityName, conflictPolicy: conflictPolicy, resultType: resultType) { iterator.next() }
    }

    /// Rows from `handler`, called until it returns nil.
    public init(entityName: String, conflictPolicy: ConflictPolicy = .fail, resultType: BatchResultType = .statusOnly,
                handler: @escaping () throws -> [String: SQLValue]?) {
        self.entityName = entityName
        self.conflictPolicy = conflictPolicy
        self.resultType = resultType
        self.next = handler
        self.positional = nil
    }

    /// Rows by position from `rows`, called until it returns nil: each gives the values of
    /// `columns`, in that order (a CSV file's records under its header). On SQLite names are
    /// resolved once, not per row, so this is the fastest way in for many rows of the same
    /// columns; PostgreSQL reads the rows by name.
    /// A row with another number of values, or `columns` naming a column twice, fails the insert.
    public init(entityName: String, columns: [String], conflictPolicy: ConflictPolicy = .fail, resultType: BatchResultType = .statusOnly,
                rows: @escaping () throws -> [SQLValue]?) {
        self.entityName = entityName
        self.conflictPolicy = conflictPolicy
        self.resultType = resultType
        let duplicate = Dictionary(grouping: columns, by: { $0 }).first { $0.value.count > 1 }?.key
        var number = 0
        let checked: () throws -> [SQLValue]? = {
            guard let values = try rows() else { return nil }
            number += 1
            if let duplicate {
                throw BatchStoreError(.invalidArgument, "row \(number): the column \(duplicate.debugDescription) is given twice")
            }
            guard values.count == columns.count else {
                throw BatchStoreError(.invalidArgument, "row \(number): \(values.count) values for \(columns.count) columns")
            }
            return values
        }
        self.positional = (columns, checked)
        self.next = {
            guard let values = try checked() else { return nil }
            return Dictionary(zip(columns, values), uniquingKeysWith: { first, _ in first })
        }
    }
}
