import Foundation

/// A recursive-descent parser for predicates and expressions. Depth is capped, so no input can
/// overflow the stack; every failure is a `.syntax` error with a column.
struct Parser {
    private let tokens: [Token]
    private var index = 0
    private var arguments: [PredicateArgument]
    private var argumentIndex = 0
    private let what: String
    private var depth = 0
    /// When true, `||` concatenates strings (assignment expressions) instead of meaning OR.
    private let concatenation: Bool
    static let maximumDepth = 200

    init(text: String, arguments: [PredicateArgument] = [], what: String, concatenation: Bool = false) throws {
        self.tokens = try Lexer.tokenize(text, what: what)
        self.arguments = arguments
        self.what = what
        self.concatenation = concatenation
    }

    // MARK: - Helpers

    private var current: Token { tokens[min(index, tokens.count - 1)] }
    private var next: Token { tokens[min(index + 1, tokens.count - 1)] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func error(_ message: String, at token: Token? = nil) -> BatchStoreError {
        let t = token ?? current
        return BatchStoreError(.syntax, "\(what) error at column \(t.column): \(message)", column: t.column)
    }

    private func isSymbol(_ s: String) -> Bool { current.kind == .symbol(s) }
    private func isKeyword(_ s: String) -> Bool { current.kind == .keyword(s) }

    private mutating func enter() throws {
        depth += 1
        if depth > Self.maximumDepth {
            throw error("nested too deeply: more than \(Self.maximumDepth) levels or operators in a row (each one nests the SQL a level deeper, and SQLite stops at 1,000); split it, or use IN {…} for a list of values")
        }
    }

    private mutating func takeArgument(_ token: Token) throws -> PredicateArgument {
        guard argumentIndex < arguments.count else {
            throw error("\(token.text) has no argument (only \(arguments.count) given)", at: token)
        }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    private func checkArgumentsUsed() throws {
        if argumentIndex < arguments.count {
            throw BatchStoreError(.invalidQuery, "\(what) has \(arguments.count) arguments but uses only \(argumentIndex)")
        }
    }

    // MARK: - Predicates

    mutating func parsePredicateToEnd() throws -> PredicateNode {
        if current.kind == .end { throw error("expected a predicate, found nothing") }
        let node = try parseOr()
        guard current.kind == .end else { throw error("unexpected \(current.text) after a complete predicate") }
        try checkArgumentsUsed()
        return node
    }

    private mutating func parseOr() throws -> PredicateNode {
        try enter(); defer { depth -= 1 }
        var terms = [try parseAnd()]
        while isKeyword("OR") || isSymbol("||") {
            advance()
            terms.append(try parseAnd())
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws -> PredicateNode {
        var terms = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            advance()
            terms.append(try parseNot())
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseNot() throws -> PredicateNode {
        try enter(); defer { depth -= 1 }
        if isKeyword("NOT") || isSymbol("!") {
            advance()
            return .not(try parseNot())
        }
        return try parsePrimaryPredicate()
    }

    private mutating func parsePrimaryPredicate() throws -> PredicateNode {
        if isKeyword("TRUEPREDICATE") { advance(); return .constant(true) }
        if isKeyword("FALSEPREDICATE") { advance(); return .constant(false) }
        if isSymbol("(") && parenthesisOpensPredicate() {
            let open = current
            advance()
            let inner = try parseOr()
            guard isSymbol(")") else { throw error("expected ')' to close the '(' at column \(open.column), found \(current.text)") }
            advance()
            return inner
        }
        if case .keyword(let k) = current.kind, ["ANY", "ALL", "SOME", "NONE", "SUBQUERY"].contains(k) {
            throw error("\(k) needs a to-many relationship; only to-one key paths are supported")
        }
        return try parseComparison()
    }

    /// Decides whether a '(' starts a grouped predicate or a parenthesised expression, by scanning to
    /// its matching ')' for a comparison or logical operator at depth 1.
    private func parenthesisOpensPredicate() -> Bool {
        var level = 0
        var i = index
        while i < tokens.count {
            let k = tokens[i].kind
            switch k {
            case .symbol("("): level += 1
            case .symbol(")"):
                level -= 1
                if level == 0 {
                    // "(a + b) > 3": what follows decides
                    let after = i + 1 < tokens.count ? tokens[i + 1].kind : .end
                    if case .symbol(let s) = after, ["==", "=", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "**", "%"].contains(s) { return false }
                    if case .keyword(let w) = after, ["BETWEEN", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES"].contains(w) { return false }
                    return true
                }
            case .end: return true
            default:
                if level == 1 {
                    if case .symbol(let s) = k, ["==", "=", "!=", "<>", "<", "<=", ">", ">=", "&&", "||", "!"].contains(s) { return true }
                    if case .keyword(let w) = k, ["AND", "OR", "NOT", "BETWEEN", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE"].contains(w) { return true }
                }
            }
            i += 1
        }
        return true
    }

    private mutating func parseComparison() throws -> PredicateNode {
        let startToken = current
        let lhs = try parseExpression()
        let opToken = current
        var negated = false
        if isKeyword("NOT"), case .keyword(let w) = next.kind, ["IN", "BETWEEN", "LIKE", "CONTAINS", "BEGINSWITH", "ENDSWITH", "MATCHES"].contains(w) {
            negated = true
            advance()
        }
        let op: ComparisonOperator
        switch current.kind {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="): op = .greaterOrEqual
        case .keyword("BEGINSWITH"): op = .beginsWith
        case .keyword("ENDSWITH"): op = .endsWith
        case .keyword("CONTAINS"): op = .contains
        case .keyword("LIKE"): op = .like
        case .keyword("MATCHES"): op = .matches
        case .keyword("BETWEEN"):
            advance()
            let flags = takeModifier()
            let bounds = try parseList(context: "after BETWEEN")
            guard bounds.count == 2 else { throw error("BETWEEN needs exactly two values, as in BETWEEN {1, 10}", at: opToken) }
            let node = PredicateNode.between(lhs, bounds[0], bounds[1], flags: flags)
            return negated ? .not(node) : node
        case .keyword("IN"):
            advance()
            let flags = takeModifier()
            let node: PredicateNode
            switch try parseInOperand() {
            case .list(let items): node = .inList(lhs, items, flags: flags)
            // NSPredicate: with a string (or a key) on the right, IN is a substring test.
            case let haystack: node = .comparison(haystack, .contains, flags: flags, lhs)
            }
            return negated ? .not(node) : node
        case .end:
            throw error("expected a comparison operator (==, !=, <, >, BEGINSWITH, IN, …) after \(describe(startToken))")
        default:
            throw error("expected a comparison operator (==, !=, <, >, BEGINSWITH, IN, …), found \(current.text)")
        }
        let operatorToken = current
        advance()
        let flags = takeModifier()
        if current.kind == .end { throw error("expected a value after '\(operatorToken.text)'") }
        let rhs = try parseExpression()
        if case .list = rhs { throw error("a list {…} fits only after IN or BETWEEN, or before CONTAINS", at: operatorToken) }
        if case .list(let items) = lhs {
            // `{1, 2} CONTAINS year` is `year IN {1, 2}`.
            guard op == .contains else { throw error("a list {…} fits only after IN or BETWEEN, or before CONTAINS", at: startToken) }
            let node = PredicateNode.inList(rhs, items, flags: flags)
            return negated ? .not(node) : node
        }
        let node = PredicateNode.comparison(lhs, op, flags: flags, rhs)
        return negated ? .not(node) : node
    }

    /// `[c]`, `[d]` or `[cd]` after an operator, or 0.
    private mutating func takeModifier() -> Int {
        guard case .modifier(let f) = current.kind else { return 0 }
        advance()
        return f
    }

    /// The right side of IN: `{…}`, `(a, b)`, a list bound to `%@` (all as `.list`), or one value
    /// or key (a string to search in).
    private mutating func parseInOperand() throws -> ExpressionNode {
        if isSymbol("(") && parenthesisHoldsList() { return .list(try parseList(context: "after IN")) }
        if current.kind == .end { throw error("expected a list like {1, 2} or a string after IN") }
        let e = try parseExpression()
        if case .value(let v) = e, v != .null, !v.isText { return .list([e]) }
        return e
    }

    /// True when the '(' at the current token holds `a, b, …` or nothing, rather than one expression.
    private func parenthesisHoldsList() -> Bool {
        var level = 0
        var i = index
        while i < tokens.count {
            switch tokens[i].kind {
            case .symbol("("), .symbol("{"): level += 1
            case .symbol(")"), .symbol("}"):
                level -= 1
                if level == 0 { return i == index + 1 }
            case .symbol(","): if level == 1 { return true }
            case .end: return false
            default: break
            }
            i += 1
        }
        return false
    }

    private func describe(_ token: Token) -> String {
        if case .identifier(let s) = token.kind { return "'\(s)'" }
        return token.text
    }

    /// `{a, b, …}`, `%@` bound to a list, or a single parenthesised list `(a, b)`.
    private mutating func parseList(context: String) throws -> [ExpressionNode] {
        if current.kind == .objectPlaceholder {
            let t = current
            advance()
            switch try takeArgument(t) {
            case .list(let values): return values.map { .value($0) }
            case .value(let v): return [.value(v)]
            case .key: throw error("%@ \(context) needs a value or a list, not a key", at: t)
            }
        }
        if isSymbol("{") || isSymbol("(") { return try parseBracedList(context: context) }
        throw error("expected '{' \(context), found \(current.text)")
    }

    /// `{a, b, …}` or `(a, b, …)`.
    private mutating func parseBracedList(context: String) throws -> [ExpressionNode] {
        let close = isSymbol("{") ? "}" : ")"
        let open = current
        advance()
        var items: [ExpressionNode] = []
        if isSymbol(close) { advance(); return items }
        while true {
            items.append(try parseExpression())
            if isSymbol(",") { advance(); continue }
            guard isSymbol(close) else { throw error("expected ',' or '\(close)' to close the list opened at column \(open.column), found \(current.text)") }
            advance()
            return items
        }
    }

    // MARK: - Expressions

    /// Parses one expression and requires the end of input (for sort keys and single values).
    mutating func parseExpressionToEnd() throws -> ExpressionNode {
        if current.kind == .end { throw error("expected an expression, found nothing") }
        let e = try parseExpression()
        guard current.kind == .end else { throw error("unexpected \(current.text) after a complete expression") }
        try checkArgumentsUsed()
        return e
    }

    /// Parses `name = expression, name = expression, …` (assignments for batch updates).
    mutating func parseAssignmentsToEnd() throws -> [(name: String, column: Int, value: ExpressionNode)] {
        var result: [(String, Int, ExpressionNode)] = []
        if current.kind == .end { throw error("expected an assignment like votes = votes + 1, found nothing") }
        while true {
            let t = current
            let name: String
            switch t.kind {
            case .identifier(let s): name = s
            case .keyPlaceholder:
                guard case .key(let k) = try takeArgument(t) else { throw error("%K needs a key argument", at: t) }
                name = k
            default: throw error("expected a column name, found \(t.text)")
            }
            advance()
            guard isSymbol("=") || isSymbol("==") else { throw error("expected '=' after '\(name)', found \(current.text)") }
            advance()
            if current.kind == .end || isSymbol(",") { throw error("expected a value after '\(name) ='") }
            result.append((name, t.column, try parseExpression()))
            if isSymbol(",") { advance(); continue }
            guard current.kind == .end else { throw error("expected ',' or the end after the value of '\(name)', found \(current.text)") }
            try checkArgumentsUsed()
            return result
        }
    }

    mutating func parseExpression() throws -> ExpressionNode {
        try enter(); defer { depth -= 1 }
        return try parseLeftAssociative(concatenation ? ["+", "-", "||"] : ["+", "-"]) {
            try $0.parseLeftAssociative(["*", "/", "%"]) { try $0.parseUnary() }
        }
    }

    /// A row of `operators` of one level between operands `next` reads, nested from the left.
    /// Each operator in a row nests the tree (and the SQL) a level deeper: counted as depth.
    private mutating func parseLeftAssociative(_ operators: Set<String>, _ next: (inout Parser) throws -> ExpressionNode) throws -> ExpressionNode {
        var lhs = try next(&self)
        let outer = depth
        defer { depth = outer }
        while case .symbol(let op) = current.kind, operators.contains(op) {
            try enter()
            advance()
            lhs = .binary(op, lhs, try next(&self))
        }
        return lhs
    }

    /// `a ** b`: exponentiation, binding tighter than `*` and to the right (`2 ** 3 ** 2` is 2 ** 9).
    private mutating func parsePower() throws -> ExpressionNode {
        let base = try parseAtom()
        guard isSymbol("**") else { return base }
        advance()
        return .binary("**", base, try parseUnary())
    }

    private mutating func parseUnary() throws -> ExpressionNode {
        try enter(); defer { depth -= 1 }
        if isSymbol("-") {
            advance()
            let inner = try parseUnary()
            switch inner {
            case .value(.integer(let v)) where v != Int64.min: return .value(.integer(-v))
            case .value(.real(let v)): return .value(.real(-v))
            default: return .negate(inner)
            }
        }
        if isSymbol("+") { advance(); return try parseUnary() }
        return try parsePower()
    }

    private mutating func parseAtom() throws -> ExpressionNode {
        let t = current
        switch t.kind {
        case .integer(let v): advance(); return .value(.integer(v))
        case .real(let v): advance(); return .value(.real(v))
        case .string(let s): advance(); return .value(.text(s))
        case .keyword("NIL"), .keyword("NULL"): advance(); return .value(.null)
        case .keyword("TRUE"), .keyword("YES"): advance(); return .value(.integer(1))
        case .keyword("FALSE"), .keyword("NO"): advance(); return .value(.integer(0))
        case .objectPlaceholder:
            advance()
            switch try takeArgument(t) {
            case .value(let v): return .value(v)
            case .list(let values): return .list(values.map { .value($0) })
            case .key(let k): return .keyPath(k.split(separator: ".", omittingEmptySubsequences: false).map(String.init), column: t.column)
            }
        case .keyPlaceholder:
            advance()
            guard case .key(let k) = try takeArgument(t) else { throw error("%K needs a key argument (PredicateArgument.key)", at: t) }
            return .keyPath(k.split(separator: ".", omittingEmptySubsequences: false).map(String.init), column: t.column)
        case .symbol("{"):
            return .list(try parseBracedList(context: "here"))
        case .symbol("("):
            advance()
            let inner = try parseExpression()
            guard isSymbol(")") else { throw error("expected ')' to close the '(' at column \(t.column), found \(current.text)") }
            advance()
            return inner
        case .identifier(let name):
            advance()
            if isSymbol("(") {
                advance()
                var args: [ExpressionNode] = []
                if !isSymbol(")") {
                    while true {
                        args.append(try parseExpression())
                        if isSymbol(",") { advance(); continue }
                        break
                    }
                }
                guard isSymbol(")") else { throw error("expected ',' or ')' in the arguments of \(name)(), found \(current.text)") }
                advance()
                return .function(name.lowercased(), args, column: t.column)
            }
            var path = [name]
            while isSymbol(".") {
                advance()
                guard case .identifier(let part) = current.kind else { throw error("expected a name after '.', found \(current.text)") }
                path.append(part)
                advance()
            }
            return .keyPath(path, column: t.column)
        case .end:
            throw error("expected a value, found the end")
        case .keyword(let k):
            throw error("expected a value, found the keyword \(k) (write #\(k.lowercased()) or `\(k.lowercased())` for a column of that name)")
        default:
            throw error("expected a value, found \(t.text)")
        }
    }
}
