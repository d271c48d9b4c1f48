import Foundation

/// Compiles predicates, expressions and sort keys against one entity into SQL text with `?`
/// placeholders and an argument list. Names are resolved against the schema and quoted; values are
/// only ever bound.
final class QueryBuilder {
    let entity: Entity
    let schema: Schema
    let alias: String
    /// Whether key paths may cross relationships (they add LEFT JOINs); off for UPDATE … SET.
    let allowsJoins: Bool
    private(set) var joins: [String] = []
    private var joinAliases: [String: (alias: String, entity: Entity)] = [:]
    private(set) var arguments: [SQLValue] = []
    /// The attached database the tables live in: `main`, or a coordinator's alias for a store.
    let databaseName: String

    init(entity: Entity, schema: Schema, alias: String = "t", allowsJoins: Bool = true, databaseName: String = "main") {
        self.entity = entity
        self.schema = schema
        self.alias = alias
        self.allowsJoins = allowsJoins
        self.databaseName = databaseName
    }

    /// `main."table" AS t LEFT JOIN …` for the joins key paths needed so far.
    var fromClause: String {
        (["\(databaseName).\(quoteIdentifier(entity.name)) AS \(alias)"] + joins).joined(separator: " ")
    }

    func bind(_ value: SQLValue) -> String {
        arguments.append(value)
        return "?"
    }

    /// The key columns of the entity, qualified by the alias (`t."rowid"`).
    var keyColumnsSQL: [String] { qualified(entity.keyColumns, alias: alias) }

    // MARK: Key paths

    func column(for path: [String], at column: Int = 0) throws -> String {
        guard let last = path.last, !path.contains(where: \.isEmpty) else {
            throw BatchStoreError(.syntax, "empty name in key path \(path.joined(separator: ".").debugDescription)")
        }
        var current = entity
        var currentAlias = alias
        var walked: [String] = []
        for part in path.dropLast() {
            guard allowsJoins else {
                throw BatchStoreError(.invalidQuery, "key path \(path.joined(separator: ".")) crosses a relationship, which is not allowed here")
            }
            guard let rel = current.relationship(named: part) else {
                throw BatchStoreError(.noSuchAttribute, "\(current.name) has no relationship named \(part.debugDescription) (relationships: \(current.relationships.map(\.name).joined(separator: ", ").ifEmpty("none")))")
            }
            walked.append(rel.name)
            let key = walked.joined(separator: "\u{1F}")
            if let existing = joinAliases[key] {
                current = existing.entity
                currentAlias = existing.alias
                continue
            }
            guard let destination = schema.entity(named: rel.destinationEntityName) else {
                throw BatchStoreError(.noSuchEntity, "relationship \(rel.name) points to a missing table \(rel.destinationEntityName.debugDescription)")
            }
            var destColumns = rel.destinationColumns
            if destColumns.isEmpty { destColumns = destination.primaryKey.isEmpty ? destination.keyColumns : destination.primaryKey }
            guard destColumns.count == rel.sourceColumns.count else {
                throw BatchStoreError(.invalidQuery, "relationship \(rel.name) has mismatched key columns")
            }
            let joinAlias = "j\(joinAliases.count + 1)"
            let on = zip(rel.sourceColumns, destColumns).map { "\(joinAlias).\(quoteIdentifier($1)) = \(currentAlias).\(quoteIdentifier($0))" }
            joins.append("LEFT JOIN \(databaseName).\(quoteIdentifier(destination.name)) AS \(joinAlias) ON \(on.joined(separator: " AND "))")
            joinAliases[key] = (joinAlias, destination)
            current = destination
            currentAlias = joinAlias
        }
        if let attribute = current.attribute(named: last) {
            return "\(currentAlias).\(quoteIdentifier(attribute.name))"
        }
        if let rowid = current.rowidName, ["rowid", "_rowid_", "oid"].contains(last.lowercased()) {
            return "\(currentAlias).\(rowid)"
        }
        let names = current.attributes.map(\.name)
        let list = names.prefix(20).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
        let where_ = column > 0 ? " (column \(column))" : ""
        throw BatchStoreError(.noSuchAttribute, "\(current.name) has no column named \(last.debugDescription)\(where_); columns: \(list)")
    }

    // MARK: Expressions

    func compile(_ e: ExpressionNode) throws -> String {
        switch e {
        case .value(let v): return bind(v)
        case .keyPath(let path, let column): return try self.column(for: path, at: column)
        case .negate(let inner): return "(-\(try compile(inner)))"
        case .binary(let op, let l, let r):
            return "(\(try compile(l)) \(op) \(try compile(r)))"
        case .function(let name, let args, let column):
            return try compileFunction(name, args, column: column)
        }
    }

    private func compileFunction(_ name: String, _ args: [ExpressionNode], column: Int) throws -> String {
        func arity(_ range: ClosedRange<Int>) throws {
            guard range.contains(args.count) else {
                let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
                throw BatchStoreError(.invalidQuery, "\(name)() at column \(column) takes \(expected) argument\(range.upperBound == 1 ? "" : "s"), not \(args.count)")
            }
        }
        let compiled = try args.map { try compile($0) }
        switch name {
        case "now": try arity(0...0); return "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
        case "lowercase", "lower": try arity(1...1); return "bs_case(\(compiled[0]), 0)"
        case "uppercase", "upper": try arity(1...1); return "bs_case(\(compiled[0]), 1)"
        case "coalesce": try arity(1...64); return compiled.count == 1 ? compiled[0] : "coalesce(\(compiled.joined(separator: ", ")))"
        case "abs": try arity(1...1); return "abs(\(compiled[0]))"
        case "round": try arity(1...2); return "round(\(compiled.joined(separator: ", ")))"
        case "length": try arity(1...1); return "length(\(compiled[0]))"
        case "trim": try arity(1...1); return "trim(\(compiled[0]))"
        case "concat": try arity(1...64); return "(" + compiled.map { "coalesce(\($0), '')" }.joined(separator: " || ") + ")"
        case "substr", "substring": try arity(2...3); return "substr(\(compiled.joined(separator: ", ")))"
        case "min": try arity(2...64); return "min(\(compiled.joined(separator: ", ")))"
        case "max": try arity(2...64); return "max(\(compiled.joined(separator: ", ")))"
        default:
            throw BatchStoreError(.invalidQuery, "unknown function \(name)() at column \(column); known: now, lowercase, uppercase, coalesce, abs, round, length, trim, concat, substr, min, max")
        }
    }

    // MARK: Predicates

    func compile(_ p: PredicateNode) throws -> String {
        switch p {
        case .constant(let b): return b ? "1" : "0"
        case .not(let inner): return "NOT (\(try compile(inner)))"
        case .and(let terms): return "(" + (try terms.map { try compile($0) }).joined(separator: " AND ") + ")"
        case .or(let terms): return "(" + (try terms.map { try compile($0) }).joined(separator: " OR ") + ")"
        case .between(let e, let lo, let hi):
            return "(\(try compile(e)) BETWEEN \(try compile(lo)) AND \(try compile(hi)))"
        case .inList(let e, let items):
            let lhs = try compile(e)
            if items.isEmpty { return "0" }
            let hasNull = items.contains(.value(.null))
            let others = items.filter { $0 != .value(.null) }
            var parts: [String] = []
            if !others.isEmpty { parts.append("\(lhs) IN (\(try others.map { try compile($0) }.joined(separator: ", ")))") }
            if hasNull { parts.append("\(lhs) IS NULL") }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .comparison(let l, let op, let flags, let r):
            return try compileComparison(l, op, flags, r)
        }
    }

    private func folded(_ e: ExpressionNode, _ flags: Int) throws -> String {
        if flags == 0 { return try compile(e) }
        if case .value(.text(let s)) = e { return bind(.text(SQLFunctions.fold(s, flags: flags))) }
        return "bs_fold(\(try compile(e)), \(flags))"
    }

    private func constantText(_ e: ExpressionNode) -> String? {
        if case .value(.text(let s)) = e { return s }
        return nil
    }

    private func compileComparison(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        let lIsNull = l == .value(.null), rIsNull = r == .value(.null)
        switch op {
        case .equal, .notEqual:
            if lIsNull || rIsNull {
                let other = lIsNull ? r : l
                return "(\(try compile(other)) IS \(op == .equal ? "" : "NOT ")NULL)"
            }
            let lhs = try folded(l, flags), rhs = try folded(r, flags)
            let bothKeys = !(isConstant(l) || isConstant(r))
            if op == .equal { return bothKeys ? "(\(lhs) IS \(rhs))" : "(\(lhs) = \(rhs))" }
            return "(\(lhs) IS NOT \(rhs))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return "(\(try folded(l, flags)) \(op.rawValue) \(try folded(r, flags)))"
        case .beginsWith:
            let lhs = try folded(l, flags)
            if let s = constantText(r) { return "(\(lhs) GLOB \(bind(.text(Self.escapeGlob(SQLFunctions.fold(s, flags: flags)) + "*"))))" }
            let rhs = try folded(r, flags)
            return "(substr(\(lhs), 1, length(\(rhs))) = \(rhs))"
        case .endsWith:
            let lhs = try folded(l, flags)
            if let s = constantText(r) { return "(\(lhs) GLOB \(bind(.text("*" + Self.escapeGlob(SQLFunctions.fold(s, flags: flags))))))" }
            let rhs = try folded(r, flags)
            return "(length(\(rhs)) = 0 OR substr(\(lhs), -length(\(rhs))) = \(rhs))"
        case .contains:
            return "(instr(\(try folded(l, flags)), \(try folded(r, flags))) > 0)"
        case .like:
            let lhs = try folded(l, flags)
            if let s = constantText(r) { return "(\(lhs) GLOB \(bind(.text(Self.likeToGlob(SQLFunctions.fold(s, flags: flags))))))" }
            return "(\(lhs) GLOB \(try folded(r, flags)))"
        case .matches:
            if let s = constantText(r), let problem = SQLFunctions.validateRegex(s) {
                throw BatchStoreError(.invalidQuery, problem)
            }
            return "(bs_matches(\(try compile(l)), \(try compile(r)), \(flags)) = 1)"
        }
    }

    private func isConstant(_ e: ExpressionNode) -> Bool {
        if case .value = e { return true }
        return false
    }

    /// Escapes GLOB's special characters so text matches literally.
    static func escapeGlob(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "*": out += "[*]"
            case "?": out += "[?]"
            case "[": out += "[[]"
            default: out.append(c)
            }
        }
        return out
    }

    /// NSPredicate LIKE (`*` any run, `?` one character, `\` escapes) as a GLOB pattern.
    static func likeToGlob(_ s: String) -> String {
        var out = ""
        var escaped = false
        for c in s {
            if escaped { out += escapeGlob(String(c)); escaped = false; continue }
            switch c {
            case "\\": escaped = true
            case "*", "?": out.append(c)
            case "[": out += "[[]"
            default: out.append(c)
            }
        }
        return out
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
