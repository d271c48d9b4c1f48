import Foundation

/// A value given for `%@` (a value or a list, for `IN %@`) or `%K` (a key path) in a format string.
public enum PredicateArgument: Sendable, Hashable {
    case value(SQLValue)
    case list([SQLValue])
    case key(String)
}

extension PredicateArgument: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
    public init(floatLiteral value: Double) { self = .value(.real(value)) }
    public init(stringLiteral value: String) { self = .value(.text(value)) }
    public init(booleanLiteral value: Bool) { self = .value(.integer(value ? 1 : 0)) }
    public init(nilLiteral: ()) { self = .value(.null) }
}

/// Comparison operators of the predicate language.
package enum ComparisonOperator: String, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case like = "LIKE"
    case matches = "MATCHES"
}

/// An expression: a value, a key path, arithmetic or a function call.
package indirect enum ExpressionNode: Sendable, Equatable {
    case value(SQLValue)
    case keyPath([String], column: Int)
    case binary(String, ExpressionNode, ExpressionNode)
    case negate(ExpressionNode)
    case function(String, [ExpressionNode], column: Int)
    /// An aggregate `{a, b, …}` (or a list bound to `%@`): only on the right of IN, on the left of
    /// CONTAINS, or as BETWEEN's bounds.
    case list([ExpressionNode])
}

/// A predicate tree, produced by the parser and compiled to SQL per entity.
package indirect enum PredicateNode: Sendable, Equatable {
    case constant(Bool)
    case not(PredicateNode)
    case and([PredicateNode])
    case or([PredicateNode])
    case comparison(ExpressionNode, ComparisonOperator, flags: Int, ExpressionNode)
    case between(ExpressionNode, ExpressionNode, ExpressionNode, flags: Int)
    /// Membership: `x IN {a, b}` and `{a, b} CONTAINS x`, each item compared as `==` with `flags`.
    case inList(ExpressionNode, [ExpressionNode], flags: Int)
    /// A condition in the engine's own SQL, checked by ``FetchPredicate/init(sql:)`` to stay one
    /// expression in its parentheses.
    case sql(String)
}

extension PredicateNode {
    /// True when a SQL condition (``FetchPredicate/init(sql:)``) is part of the predicate.
    package var holdsSQL: Bool {
        switch self {
        case .sql: true
        case .not(let inner): inner.holdsSQL
        case .and(let terms), .or(let terms): terms.contains { $0.holdsSQL }
        case .constant, .comparison, .between, .inList: false
        }
    }
}

/// A filter in NSPredicate's format, parsed once and compiled to SQL with bound arguments per fetch.
///
/// ```swift
/// let p = try FetchPredicate("year >= %@ AND title BEGINSWITH[c] %@", 1990, "the")
/// // compiles to: t."year" >= ? AND bs_fold(t."title", 1) GLOB ?   -- arguments [1990, "the*"]
/// ```
/// Values are never spliced into SQL; names are checked against the schema and quoted.
public struct FetchPredicate: Sendable, Equatable, CustomStringConvertible {
    package let node: PredicateNode
    /// The text the predicate was parsed from.
    public let format: String

    /// Parses `format`, substituting `%@` and `%K` from `arguments` in order.
    /// - Throws: ``BatchStoreError`` `.syntax` naming the column and what was expected.
    public init(format: String, arguments: [PredicateArgument] = []) throws {
        var parser = try Parser(text: format, arguments: arguments, what: "predicate")
        self.node = try parser.parsePredicateToEnd()
        self.format = format
    }

    /// Parses `format` with variadic `%@`/`%K` arguments.
    public init(_ format: String, _ arguments: PredicateArgument...) throws {
        try self.init(format: format, arguments: arguments)
    }

    init(node: PredicateNode, format: String) {
        self.node = node
        self.format = format
    }

    /// The predicate that matches every row.
    public static let all = FetchPredicate(node: .constant(true), format: "TRUEPREDICATE")
    /// The predicate that matches no row.
    public static let none = FetchPredicate(node: .constant(false), format: "FALSEPREDICATE")

    /// Both predicates.
    public static func && (lhs: FetchPredicate, rhs: FetchPredicate) -> FetchPredicate {
        FetchPredicate(node: .and([lhs.node, rhs.node]), format: "(\(lhs.format)) AND (\(rhs.format))")
    }

    public var description: String { format }
}

extension SQLValue {
    /// True for `.text`.
    package var isText: Bool {
        if case .text = self { return true }
        return false
    }
}
