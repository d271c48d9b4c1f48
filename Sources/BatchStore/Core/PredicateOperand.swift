import Foundation

/// What the predicate language does to text outside SQL: `[c]` / `[d]` folding here; the SQL
/// functions an SQLite connection registers are in its extension in `Store`.
package enum SQLFunctions {
    /// `s` folded as `[c]` (flags & 1, case) and `[d]` (flags & 2, diacritics) fold it, as
    /// Foundation folds without a locale.
    package static func fold(_ s: String, flags: Int) -> String {
        var options: String.CompareOptions = []
        if flags & 1 != 0 { options.insert(.caseInsensitive) }
        if flags & 2 != 0 { options.insert(.diacriticInsensitive) }
        if options.isEmpty { return s }
        return s.folding(options: options, locale: nil)
    }
}

/// What a statement compiler knows of an expression before any row is read: its SQL, the kind of
/// its non-nil values, and what each engine needs to compare it as NSPredicate does.
package struct Operand {
    package var sql: String
    /// The kind of every non-nil value, as far as the schema says (`unknown`: rows decide, which
    /// happens only on SQLite, where a column holds any kind).
    package var kind: OperandKind
    /// True when every non-nil value is surely of `kind` (constants, arithmetic); false when a row
    /// may hold another kind (an SQLite column).
    package var certain: Bool
    /// The value, when the operand is a constant.
    package var constant: SQLValue?
    /// SQLite: the column's affinity when the operand is a bare column reference (SQLite converts
    /// the other side of a comparison to it).
    package var affinity: String?
    /// PostgreSQL: true for numbers that are surely integers (integer and boolean columns, integer
    /// constants, integer arithmetic), whose arithmetic runs exactly, in `numeric`.
    package var isInteger: Bool
    /// What to call the operand in an error.
    package var name: String

    package init(sql: String, kind: OperandKind, certain: Bool = true, constant: SQLValue? = nil, affinity: String? = nil, isInteger: Bool = false, name: String) {
        self.sql = sql
        self.kind = kind
        self.certain = certain
        self.constant = constant
        self.affinity = affinity
        self.isInteger = isInteger
        self.name = name
    }
}

/// The SQL one engine writes for each form of expression. The walk over expressions, the order in
/// which a call's name, arguments and arity are checked, and the words of every refusal are
/// written once, in this protocol's extension; ``PredicateDialect`` adds the comparisons.
package protocol ExpressionDialect: AnyObject {
    /// Binds `value` and answers its placeholder.
    func bind(_ value: SQLValue) -> String
    /// The column a key path ends at (joining to-one relationships on the way).
    func keyPathOperand(_ path: [String], at column: Int) throws -> Operand
    /// A non-constant operand folded for `[c]` / `[d]` (`flags`).
    func folded(_ o: Operand, _ flags: Int) -> Operand
    /// `-o`, of a number.
    func negated(_ o: Operand) -> Operand
    /// `l || r` (`left` is the expression `l` came from, for chaining).
    func concatenation(_ l: Operand, after left: ExpressionNode, _ r: Operand) -> Operand
    /// `l op r` for `+ - * / % **`, both numbers.
    func arithmetic(_ l: Operand, _ op: String, _ r: Operand, after left: ExpressionNode) throws -> Operand
    /// A call of a function ``PredicateFunctions`` knows, with its arguments' count checked.
    func call(_ name: String, _ arguments: [Operand], column: Int) throws -> Operand
}

extension ExpressionDialect {
    /// Compiles an expression, folding text for `[c]` / `[d]` when `flags` says so.
    package func operand(_ e: ExpressionNode, fold flags: Int = 0) throws -> Operand {
        if flags != 0 {
            if case .value(.text(let s)) = e {
                let folded = SQLValue.text(SQLFunctions.fold(s, flags: flags))
                return Operand(sql: bind(folded), kind: .text, constant: folded, name: s.debugDescription)
            }
            let o = try operand(e)
            return o.constant == nil ? folded(o, flags) : o
        }
        switch e {
        case .value(let v):
            let name = v.isText ? (v.textValue ?? "").debugDescription : v.description
            var isInteger = false
            if case .integer = v { isInteger = true }
            return Operand(sql: bind(v), kind: OperandKind(v), constant: v, isInteger: isInteger, name: name)
        case .keyPath(let path, let column):
            return try keyPathOperand(path, at: column)
        case .negate(let inner):
            let o = try operand(inner)
            try requireNumber(o, for: "-")
            return negated(o)
        case .binary(let op, let l, let r):
            let lo = try operand(l), ro = try operand(r)
            if op == "||" { return concatenation(lo, after: l, ro) }
            try requireNumber(lo, for: op)
            try requireNumber(ro, for: op)
            return try arithmetic(lo, op, ro, after: l)
        case .function(let name, let args, let column):
            // An unknown name first; then the arguments, whose errors come before a wrong count.
            try PredicateFunctions.checkName(name, column: column)
            let operands = try args.map { try operand($0) }
            try PredicateFunctions.check(name, arguments: args.count, column: column)
            return try call(name, operands, column: column)
        case .list:
            throw BatchStoreError(.invalidQuery, "a list {…} fits only after IN or BETWEEN, or before CONTAINS")
        }
    }

    /// The SQL of an expression.
    package func compile(_ e: ExpressionNode) throws -> String { try operand(e).sql }

    /// Refuses an operand that surely is not a number where `op` needs one.
    package func requireNumber(_ o: Operand, for op: String) throws {
        guard o.kind == .number || o.kind == .unknown || o.kind == .null else {
            throw BatchStoreError(.invalidQuery, "'\(op)' needs numbers, and \(o.name) is \(o.kind == .text ? "text" : "a blob")")
        }
    }
}
