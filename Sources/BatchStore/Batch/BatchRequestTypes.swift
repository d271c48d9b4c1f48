import Foundation
import GRDB

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
