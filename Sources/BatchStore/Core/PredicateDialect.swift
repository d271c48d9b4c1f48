import Foundation

/// What both engines' statement compilers need of a table to walk a key path: its name, its
/// relationships, the column a relationship's destination is joined on when it names none, and
/// its columns (for naming a near miss). SQLite's ``Entity`` and PostgreSQL's table adopt it.
package protocol KeyPathTable {
    var name: String { get }
    var relationships: [Relationship] { get }
    /// The destination columns of a relationship that names none (the primary key, or where the
    /// engine has one, the row key).
    var joinColumns: [String] { get }
    /// Column names, for messages.
    var columnNames: [String] { get }
}

extension Entity: KeyPathTable {
    package var joinColumns: [String] { primaryKey.isEmpty ? keyColumns : primaryKey }
    package var columnNames: [String] { attributes.map(\.name) }
}

/// The LEFT JOINs a statement's key paths need, each made once however often its path is named:
/// both engines' compilers walk `director.name` the same way and word a missing name the same way
/// (the dialect gives only how a table is named in SQL and where a relationship leads).
package struct KeyPathJoins<Table: KeyPathTable> {
    /// The statement's own table, and its alias (`t`).
    package let root: Table
    package let alias: String
    /// `LEFT JOIN … AS j1 ON …`, in the order the paths needed them.
    package private(set) var joins: [String] = []
    private var aliases: [String: (alias: String, table: Table)] = [:]
    /// The table a relationship points to, by name (nil: missing from the schema).
    private let destination: (String) -> Table?
    /// The table as FROM names it (`main."movie"`, `"public"."movie"`).
    private let qualifiedName: (Table) -> String

    package init(_ root: Table, alias: String, destination: @escaping (String) -> Table?, qualifiedName: @escaping (Table) -> String) {
        self.root = root
        self.alias = alias
        self.destination = destination
        self.qualifiedName = qualifiedName
    }

    /// `main."movie" AS t LEFT JOIN …`: the root table and the joins the paths walked so far need.
    package var fromClause: String {
        (["\(qualifiedName(root)) AS \(alias)"] + joins).joined(separator: " ")
    }

    /// Walks every part of `path` but the last from `table` (joining each to-one relationship once)
    /// and answers the alias and table that hold the last part. Throws for an empty part, a path
    /// that crosses a relationship where `allowsJoins` is false, or a relationship that is not
    /// there (naming what is).
    package mutating func walk(_ path: [String], from table: Table, allowsJoins: Bool = true) throws -> (alias: String, table: Table, last: String) {
        guard let last = path.last, !path.contains(where: \.isEmpty) else {
            throw BatchStoreError(.syntax, "empty name in key path \(path.joined(separator: ".").debugDescription)")
        }
        var current = table
        var currentAlias = alias
        var walked: [String] = []
        for part in path.dropLast() {
            guard allowsJoins else {
                throw BatchStoreError(.invalidQuery, "key path \(path.joined(separator: ".")) crosses a relationship, which is not allowed here")
            }
            let rel = try Self.relationship(part, of: current)
            walked.append(rel.name)
            let key = walked.joined(separator: "\u{1F}")
            if let existing = aliases[key] {
                current = existing.table
                currentAlias = existing.alias
                continue
            }
            guard let next = destination(rel.destinationEntityName) else {
                throw BatchStoreError(.noSuchEntity, "relationship \(rel.name) points to a missing table \(rel.destinationEntityName.debugDescription)")
            }
            let destColumns = rel.destinationColumns.isEmpty ? next.joinColumns : rel.destinationColumns
            guard destColumns.count == rel.sourceColumns.count, !destColumns.isEmpty else {
                throw BatchStoreError(.invalidQuery, "relationship \(rel.name) has mismatched key columns")
            }
            let joinAlias = "j\(aliases.count + 1)"
            let on = zip(rel.sourceColumns, destColumns).map { "\(joinAlias).\(quoteIdentifier($1)) = \(currentAlias).\(quoteIdentifier($0))" }
            joins.append("LEFT JOIN \(qualifiedName(next)) AS \(joinAlias) ON \(on.joined(separator: " AND "))")
            aliases[key] = (joinAlias, next)
            current = next
            currentAlias = joinAlias
        }
        return (currentAlias, current, last)
    }

    /// The relationship `name` of `table` (exact name, or its single source column's exact name).
    static func relationship(_ name: String, of table: Table) throws -> Relationship {
        if let r = table.relationships.first(where: { $0.name == name }) ?? table.relationships.first(where: { $0.sourceColumns == [name] }) {
            return r
        }
        var message = "\(table.name) has no relationship named \(name.debugDescription)"
        let names = table.relationships.map(\.name) + table.relationships.compactMap { $0.sourceColumns.count == 1 ? $0.sourceColumns[0] : nil }
        if let suggestion = NameSuggestion.suggestion(for: name, among: names) {
            message += "; did you mean \(suggestion.debugDescription)?" + NameSuggestion.caseNote(name, suggestion)
        } else {
            message += " (relationships: \(table.relationships.map(\.name).joined(separator: ", ").ifEmpty("none")))"
        }
        throw BatchStoreError(.noSuchAttribute, message)
    }

    /// The error for a column `name` that `table` does not have, naming the likeliest one meant
    /// (key paths are case-sensitive) or the columns there are.
    package static func noColumn(_ name: String, in table: Table, column: Int) -> BatchStoreError {
        let names = table.columnNames
        let where_ = column > 0 ? " (column \(column))" : ""
        var message = "\(table.name) has no column named \(name.debugDescription)\(where_)"
        if let suggestion = NameSuggestion.suggestion(for: name, among: names + table.relationships.map(\.name)) {
            message += "; did you mean \(suggestion.debugDescription)?" + NameSuggestion.caseNote(name, suggestion)
        } else {
            message += "; columns: " + names.prefix(20).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
        }
        return BatchStoreError(.noSuchAttribute, message, column: column > 0 ? column : nil)
    }
}

/// The name a user most likely meant, for messages about names that are not there.
package enum NameSuggestion {
    /// " (names are case-sensitive)" when `suggestion` differs from `name` only by case.
    package static func caseNote(_ name: String, _ suggestion: String) -> String {
        name.caseInsensitiveCompare(suggestion) == .orderedSame ? " (names are case-sensitive)" : ""
    }

    /// The name among `names` that `name` most likely meant: the same but for case, else one within
    /// two edits (for names of four or more characters).
    package static func suggestion(for name: String, among names: [String]) -> String? {
        if let same = names.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) { return same }
        guard name.count >= 4 else { return nil }
        let lower = Array(name.lowercased())
        var best: (String, Int)?
        for candidate in names {
            let d = editDistance(lower, Array(candidate.lowercased()), limit: 2)
            if d <= 2, d < (best?.1 ?? 3) { best = (candidate, d) }
        }
        return best?.0
    }

    private static func editDistance(_ a: [Character], _ b: [Character], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(1, b.count) where !b.isEmpty {
                row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = row
        }
        return previous[b.count]
    }
}

/// The predicate language's functions, their arity, and the words of a wrong call: one table for
/// both engines' compilers (each writes the SQL of a call its own way).
package enum PredicateFunctions {
    /// The functions there are, in the order a message lists them.
    package static let known = ["now", "lowercase", "uppercase", "coalesce", "abs", "round", "length", "trim", "concat", "substr", "string", "min", "max"]

    /// How many arguments `name` takes (aliases included), nil for no such function.
    package static func arity(_ name: String) -> ClosedRange<Int>? {
        switch name {
        case "now": return 0...0
        case "lowercase", "lower", "uppercase", "upper", "abs", "length", "trim", "string": return 1...1
        case "coalesce", "concat": return 1...64
        case "round": return 1...2
        case "substr", "substring": return 2...3
        case "min", "max": return 2...64
        default: return nil
        }
    }

    /// Refuses an unknown function, naming those there are: checked before the arguments are
    /// compiled (a misspelt function's argument is not the problem to name).
    package static func checkName(_ name: String, column: Int) throws {
        guard arity(name) == nil else { return }
        throw BatchStoreError(.invalidQuery, "unknown function \(name)() at column \(column); known: \(known.joined(separator: ", "))")
    }

    /// Checks a call of `name` with `count` arguments at `column`: an unknown function, or the
    /// wrong number of arguments, is one error naming what was expected.
    package static func check(_ name: String, arguments count: Int, column: Int) throws {
        try checkName(name, column: column)
        guard let range = arity(name), range.contains(count) else {
            let range = arity(name) ?? 0...0
            let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw BatchStoreError(.invalidQuery, "\(name)() at column \(column) takes \(expected) argument\(range.upperBound == 1 ? "" : "s"), not \(count)")
        }
    }
}

/// The storage classes NSPredicate tells apart, as a compiler knows them of an operand before any
/// row is read: numbers (integer and real) compare with numbers, text with text, blobs with
/// blobs; `unknown` where rows decide (an SQLite column may hold any kind).
package enum OperandKind: String, Sendable {
    case number, text, blob, null, unknown

    /// The kind of a constant.
    package init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer, .real: self = .number
        case .text: self = .text
        case .blob: self = .blob
        }
    }
}

/// A statement compiler of one engine: the comparisons it writes its own way (binding, casts, the
/// `IS` forms, folding, regular expressions). The walk over a predicate's logic, with
/// NSPredicate's two-valued NOT, is written once, here.
package protocol PredicateDialect: ExpressionDialect {
    associatedtype Table: KeyPathTable
    /// The statement's table, its alias and the LEFT JOINs the key paths compiled so far need.
    var paths: KeyPathJoins<Table> { get }
    /// The SQL of true and of false (`1`/`0`, `TRUE`/`FALSE`).
    static var trueSQL: String { get }
    static var falseSQL: String { get }
    /// `l == r`: nil equals nil only; numbers equal numbers, text text, blobs blobs.
    func equality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String
    /// `l != r`: exactly `NOT (l == r)`, so a row whose value is nil is kept.
    func inequality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String
    /// `l < r` and the like: false when either side is nil; an error when the kinds surely differ.
    func ordering(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String
    /// `e IN {…}`: `e == a OR e == b …` (nothing matches an empty list).
    func membership(_ e: ExpressionNode, _ items: [ExpressionNode], _ flags: Int) throws -> String
    /// BEGINSWITH, ENDSWITH, CONTAINS, LIKE and MATCHES: text only.
    func stringOperation(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String
    /// The column type a key path ends at when its column holds numbers, with its article ("an
    /// INTEGER", "a bigint"), for refusing a text operator on it; nil for any other column.
    func numberColumnType(_ path: [String], at column: Int) throws -> String?
    /// A condition in the engine's SQL (checked to be one parenthesised expression), true or
    /// false for each row of the statement's table, whatever else the statement joins.
    func sqlCondition(_ condition: String) throws -> String
}

extension PredicateDialect {
    package var alias: String { paths.alias }
    package var joins: [String] { paths.joins }
    /// `main."movie" AS t LEFT JOIN …`, `"public"."movie" AS t LEFT JOIN …`.
    package var fromClause: String { paths.fromClause }

    /// Refuses, before anything runs, a text operator (`op`) with a side that cannot be text: a
    /// constant number or blob, or a column of numbers. (Nil sides are the caller's: they match
    /// nothing.)
    package func requireTextSides(_ l: ExpressionNode, _ op: ComparisonOperator, _ r: ExpressionNode) throws {
        for side in [l, r] {
            if case .value(let v) = side, !v.isText {
                let what = switch v { case .integer, .real: "a number"; default: "a blob" }
                throw BatchStoreError(.invalidQuery, "\(op.rawValue) compares text, and \(v.description) is \(what)")
            }
            if case .keyPath(let path, let column) = side, let type = try numberColumnType(path, at: column) {
                throw BatchStoreError(.invalidQuery, "\(op.rawValue) compares text, and \(path.joined(separator: ".")) is \(type) column")
            }
        }
    }

    /// Compiles a predicate to an SQL condition with NSPredicate's two-valued logic.
    ///
    /// Every comparison is true or false, never unknown: a comparison with a nil operand is false
    /// (except `== nil`, `!= nil` and `!=`, which NSPredicate defines for nil), and `NOT P` is
    /// `NOT coalesce(P, false)`, the exact complement of `P`. AND and OR need no such care: SQL's
    /// three-valued AND and OR, read with unknown as false, agree with two-valued logic.
    package func compile(_ p: PredicateNode) throws -> String {
        switch p {
        case .constant(let b): return b ? Self.trueSQL : Self.falseSQL
        case .not(let inner): return "NOT coalesce(\(try compile(inner)), \(Self.falseSQL))"
        case .and(let terms): return balancedSQL(try terms.map { try compile($0) }, "AND")
        case .or(let terms): return balancedSQL(try terms.map { try compile($0) }, "OR")
        case .between(let e, let lo, let hi, let flags):
            return "(\(try ordering(e, .greaterOrEqual, flags, lo)) AND \(try ordering(e, .lessOrEqual, flags, hi)))"
        case .inList(let e, let items, let flags):
            return try membership(e, items, flags)
        case .sql(let condition):
            return try sqlCondition(condition)
        case .comparison(let l, let op, let flags, let r):
            switch op {
            case .equal: return try equality(l, flags, r)
            case .notEqual: return try inequality(l, flags, r)
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return try ordering(l, op, flags, r)
            case .beginsWith, .endsWith, .contains, .like, .matches: return try stringOperation(l, op, flags, r)
            }
        }
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}

/// `terms` joined by `op` (AND, OR) as a balanced tree of parenthesised groups of at most eight:
/// both engines nest a flat `a OR b OR c …` one level per term (SQLite refuses past 1,000), so
/// 5,000 ORs would fail; balanced, they nest about log2(n / 8) levels. The terms keep their order
/// (and so their bound arguments theirs).
package func balancedSQL(_ terms: [String], _ op: String) -> String {
    func group(_ part: ArraySlice<String>) -> String {
        if part.count <= 8 { return "(" + part.joined(separator: " \(op) ") + ")" }
        let middle = part.startIndex + part.count / 2
        return "(" + group(part[..<middle]) + " \(op) " + group(part[middle...]) + ")"
    }
    return group(terms[...])
}
