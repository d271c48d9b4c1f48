import Foundation

/// Compiles predicates, expressions and sort keys against one entity into SQL text with `?`
/// placeholders and an argument list. Names are resolved against the schema and quoted; values are
/// only ever bound.
package final class QueryBuilder: PredicateDialect {
    package static let trueSQL = "1"
    package static let falseSQL = "0"
    let schema: Schema
    /// Whether key paths may cross relationships (they add LEFT JOINs); off for UPDATE … SET.
    let allowsJoins: Bool
    /// The attached database the tables live in: `main`, or a coordinator's alias for a store.
    let databaseName: String
    let source: String?
    /// The entity, its alias and the LEFT JOINs the key paths compiled so far need.
    package private(set) var paths: KeyPathJoins<Entity>
    private(set) var arguments: [SQLValue] = []
    var entity: Entity { paths.root }

    /// `source`, when given, is the FROM item read in place of `entity`'s table (a subquery whose
    /// columns are named as the entity's); a query's entity is read as `(<query>)`.
    init(entity: Entity, schema: Schema, alias: String = "t", allowsJoins: Bool = true, databaseName: String = "main", source: String? = nil) {
        self.schema = schema
        self.allowsJoins = allowsJoins
        self.databaseName = databaseName
        self.source = source
        paths = KeyPathJoins(entity, alias: alias, destination: { schema.entity(named: $0) }, qualifiedName: { table in
            if let source, table === entity { return source }
            return table.query.map { "(\($0))" } ?? "\(databaseName).\(quoteIdentifier(table.name))"
        })
    }

    /// Binds `value` and returns its placeholder. GRDB binds text up to its first NUL, so text that
    /// holds one is bound as its UTF-8 bytes and cast back: `CAST(? AS TEXT)` keeps every byte.
    package func bind(_ value: SQLValue) -> String {
        if case .text(let s) = value, s.utf8.contains(0) {
            arguments.append(.blob(Data(s.utf8)))
            return "CAST(? AS TEXT)"
        }
        arguments.append(value)
        return "?"
    }

    /// The key columns of the entity, qualified by the alias (`t."rowid"`).
    var keyColumnsSQL: [String] { qualified(entity.keyColumns, alias: alias) }

    // MARK: Key paths

    /// The attribute `name` of `entity`, matched exactly: key paths are case-sensitive, as in
    /// key-value coding. A wrong case or a near miss is named in the error.
    private func attribute(_ name: String, of entity: Entity, column: Int) throws -> Attribute {
        if let i = entity.attributeIndex[name] { return entity.attributes[i] }
        throw KeyPathJoins<Entity>.noColumn(name, in: entity, column: column)
    }

    func column(for path: [String], at column: Int = 0) throws -> String {
        try resolve(path, at: column).sql
    }

    /// The SQL of a key path and the affinity of the column it ends at.
    private func resolve(_ path: [String], at column: Int) throws -> (sql: String, affinity: String, isRowid: Bool) {
        let (currentAlias, current, last) = try paths.walk(path, from: entity, allowsJoins: allowsJoins)
        if current.attributeIndex[last] == nil, let rowid = current.rowidName, ["rowid", "_rowid_", "oid"].contains(last.lowercased()) {
            return ("\(currentAlias).\(rowid)", "INTEGER", true)
        }
        let attribute = try attribute(last, of: current, column: column)
        return ("\(currentAlias).\(quoteIdentifier(attribute.name))", attribute.affinity, false)
    }

    // MARK: Expressions

    /// The column a key path ends at: its kind is what the column's affinity promises, never
    /// certain (SQLite stores any value in any column) but for the rowid.
    package func keyPathOperand(_ path: [String], at column: Int) throws -> Operand {
        let (sql, affinity, isRowid) = try resolve(path, at: column)
        return Operand(sql: sql, kind: Self.kind(ofAffinity: affinity), certain: isRowid, affinity: affinity,
                       name: "\(path.joined(separator: ".")) (\(affinity == "BLOB" ? "untyped" : affinity) column)")
    }

    /// The kind a column's affinity promises for the purpose of errors: INTEGER and REAL hold
    /// numbers, TEXT holds text; NUMERIC (dates, decimals) and BLOB columns hold anything.
    static func kind(ofAffinity affinity: String) -> OperandKind {
        switch affinity {
        case "INTEGER", "REAL": return .number
        case "TEXT": return .text
        default: return .unknown
        }
    }

    /// The `typeof()` names of an operand's kind.
    static func typeNames(_ o: Operand) -> String {
        switch o.kind {
        case .number: return "'integer', 'real'"
        case .text: return "'text'"
        case .blob: return "'blob'"
        case .null, .unknown: return ""
        }
    }

    package func folded(_ o: Operand, _ flags: Int) -> Operand {
        var o = o
        o.sql = "bs_fold(\(o.sql), \(flags))"
        o.affinity = nil
        return o
    }

    package func negated(_ o: Operand) -> Operand {
        Operand(sql: "(-\(o.sql))", kind: .number, name: "an arithmetic expression")
    }

    package func concatenation(_ l: Operand, after left: ExpressionNode, _ r: Operand) -> Operand {
        Operand(sql: chained(l.sql, after: left, "||", r.sql), kind: .text, name: "a concatenation")
    }

    package func arithmetic(_ l: Operand, _ op: String, _ r: Operand, after left: ExpressionNode) -> Operand {
        let sql: String
        switch op {
        // NSExpression divides as floating point: 9 / 4 is 2.25, not 2.
        case "/": sql = "(CAST(\(l.sql) AS REAL) / \(r.sql))"
        case "**": sql = "bs_pow(\(l.sql), \(r.sql))"
        default: sql = chained(l.sql, after: left, op, r.sql)
        }
        return Operand(sql: sql, kind: .number, name: "an arithmetic expression")
    }

    /// `(lhs op rhs)`; when the left side is itself `(… op2 …)` with `op2` of `op`'s level (`+ -`,
    /// `* %`, `||`), its group is extended instead, `(a + b - c)`: SQL reads such a row of operators
    /// from the left as the parser nested them, and SQLite's parser stack (about 100 open
    /// parentheses) no longer limits how many there may be.
    private func chained(_ lhs: String, after l: ExpressionNode, _ op: String, _ rhs: String) -> String {
        func level(_ o: String) -> Int { ["+": 1, "-": 1, "*": 2, "%": 2, "||": 3][o] ?? 0 }
        if case .binary(let inner, _, _) = l, level(inner) != 0, level(inner) == level(op), lhs.hasPrefix("("), lhs.hasSuffix(")") {
            return String(lhs.dropLast()) + " \(op) \(rhs))"
        }
        return "(\(lhs) \(op) \(rhs))"
    }

    package func call(_ name: String, _ arguments: [Operand], column: Int) throws -> Operand {
        let compiled = arguments.map(\.sql)
        func result(_ sql: String, _ kind: OperandKind, certain: Bool) -> Operand {
            Operand(sql: sql, kind: kind, certain: certain, name: "\(name)()")
        }
        switch name {
        case "now": return result("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", .text, certain: true)
        case "lowercase", "lower": return result("bs_case(\(compiled[0]), 0)", .text, certain: false)
        case "uppercase", "upper": return result("bs_case(\(compiled[0]), 1)", .text, certain: false)
        case "coalesce": return result(compiled.count == 1 ? compiled[0] : "coalesce(\(compiled.joined(separator: ", ")))", .unknown, certain: false)
        case "abs": return result("abs(\(compiled[0]))", .number, certain: true)
        case "round": return result("round(\(compiled.joined(separator: ", ")))", .number, certain: true)
        case "length": return result("length(\(compiled[0]))", .number, certain: true)
        case "trim": return result("trim(\(compiled[0]))", .text, certain: false)
        case "concat": return result("(" + compiled.map { "coalesce(\($0), '')" }.joined(separator: " || ") + ")", .text, certain: true)
        case "substr", "substring": return result("substr(\(compiled.joined(separator: ", ")))", .text, certain: false)
        // An extension (NSExpression has no such function): the value as SQLite writes it as
        // text, for searching what a grid shows (`string(year) CONTAINS "19"`).
        case "string": return result("CAST(\(compiled[0]) AS TEXT)", .text, certain: true)
        case "min": return result("min(\(compiled.joined(separator: ", ")))", .unknown, certain: false)
        case "max": return result("max(\(compiled.joined(separator: ", ")))", .unknown, certain: false)
        default: preconditionFailure("PredicateFunctions.check knows \(name)() and this switch does not")
        }
    }

    // MARK: Predicates

    /// `l == r`: nil equals nil only; numbers equal numbers, text text, blobs blobs; no conversion
    /// between kinds (`year == "2001"` does not match the integer 2001).
    ///
    /// A bare column compared with a constant keeps the plain `=` (so an index serves it); when the
    /// column's affinity would convert the constant to another kind, a `typeof()` guard keeps only
    /// rows whose value really is of the constant's kind. Other pairs drop affinity with unary `+`.
    package func equality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        try equalityTest(l, flags, r, negated: false)
    }

    /// `l != r`: exactly `NOT (l == r)`, so a row whose value is NULL is kept.
    package func inequality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        try equalityTest(l, flags, r, negated: true)
    }

    /// `l == r`, or with `negated` its exact negation (two-valued: NULL never makes it unknown).
    private func equalityTest(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode, negated: Bool) throws -> String {
        let not = negated ? "NOT " : ""
        if l == .value(.null) || r == .value(.null) {
            let other = l == .value(.null) ? r : l
            if other == .value(.null) { return negated ? "0" : "1" }
            return "(\(try operand(other).sql) IS \(not)NULL)"
        }
        let lo = try operand(l, fold: flags), ro = try operand(r, fold: flags)
        let pair = columnAndConstant(lo, ro)
        if let (column, constant) = pair, converts(column, constant) {
            let guarded = "\(lo.sql) = \(binary(ro.sql)) AND typeof(\(column.sql)) IN (\(Self.typeNames(constant)))"
            return negated ? "NOT coalesce(\(guarded), 0)" : "(\(guarded))"
        }
        if pair != nil || (lo.constant != nil || ro.constant != nil) && lo.affinity == nil && ro.affinity == nil {
            return "(\(lo.sql) \(negated ? "IS NOT" : "=") \(binary(ro.sql)))"
        }
        // Two keys (or a key and an expression): nil == nil is true, and no affinity applies.
        return "(\(unaffine(lo)) IS \(not)\(binary(unaffine(ro))))"
    }

    /// `sql` compared byte for byte: NSPredicate compares strings by code point, whatever
    /// collation a column declares (`COLLATE NOCASE` would make `name == "alice"` match 'ALICE',
    /// and a delete through it take rows nobody asked for). An explicit COLLATE decides a
    /// comparison's collation; on a column without one it changes nothing (its index still serves).
    private func binary(_ sql: String) -> String { "(\(sql)) COLLATE BINARY" }

    /// `l < r` and the like: false when either side is nil or the two are of different kinds;
    /// an error before anything runs when the schema already says they differ.
    package func ordering(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) { return "0" }
        let lo = try operand(l, fold: flags), ro = try operand(r, fold: flags)
        let known: Set<OperandKind> = [.number, .text, .blob]
        if known.contains(lo.kind), known.contains(ro.kind), lo.kind != ro.kind {
            throw BatchStoreError(.invalidQuery, "cannot order \(lo.name) (\(lo.kind.rawValue)) against \(ro.name) (\(ro.kind.rawValue)) with \(op.rawValue): NSPredicate compares numbers with numbers and text with text")
        }
        let comparison = "\(lo.sql) \(op.rawValue) \(binary(ro.sql))"
        if lo.certain && ro.certain && lo.kind == ro.kind { return "(\(comparison))" }
        if let (column, constant) = columnAndConstant(lo, ro) {
            if !converts(column, constant), OperandKind(constant.constant ?? .null) == .number {
                // SQLite orders NULL < numbers < text < blobs. Below a number, only numbers
                // (NULL never compares); above it, text and blobs too, which `column < ''` (''
                // is the least text) leaves out. A comparison, not a typeof() per row (a 2.5M-row
                // delete of 10M ran 1.23x slower with the typeof() form). The bound is written
                // `+column < ''` so that SQLite's planner does not take it for a second end of an
                // index range: with both ends it guesses a narrow range and chose the `year` index
                // and a table lookup per row for `genre` counts where `year >= 2000` (0.24 s at 1M)
                // over the covering (genre, year) index the plain WHERE uses (0.04 s). Unary + keeps
                // the column's collation; the index still serves the lower end.
                let columnIsLeft = column.sql == lo.sql
                let upward = (op == .greater || op == .greaterOrEqual) == columnIsLeft
                return upward ? "(\(comparison) AND +\(column.sql) < '')" : "(\(comparison))"
            }
            // Where the column's affinity would convert the constant ("2020" to 2020 in a DATE
            // column), compare without affinity, as text with text.
            let plain = converts(column, constant) ? "\(unaffine(lo)) \(op.rawValue) \(binary(unaffine(ro)))" : comparison
            return "(\(plain) AND typeof(\(column.sql)) IN (\(Self.typeNames(constant))))"
        }
        // A column against an expression of one known kind: no affinity, and a typeof() guard.
        let plain = "\(unaffine(lo)) \(op.rawValue) \(binary(unaffine(ro)))"
        if lo.affinity != nil, ro.affinity == nil, ro.certain, known.contains(ro.kind) {
            return "(\(plain) AND typeof(\(lo.sql)) IN (\(Self.typeNames(ro))))"
        }
        if ro.affinity != nil, lo.affinity == nil, lo.certain, known.contains(lo.kind) {
            return "(\(plain) AND typeof(\(ro.sql)) IN (\(Self.typeNames(lo))))"
        }
        // Kinds decided row by row: bs_cmp is NULL for nil or for two kinds, else -1, 0 or 1.
        return "(bs_cmp(\(lo.sql), \(ro.sql)) \(op.rawValue) 0)"
    }

    /// `x IN {a, b, …}`: `x == a OR x == b …`, as one `IN (…)` where the items allow it.
    package func membership(_ e: ExpressionNode, _ items: [ExpressionNode], _ flags: Int) throws -> String {
        if items.isEmpty { return "0" }
        var parts: [String] = []
        if items.contains(.value(.null)) { parts.append(try equality(e, 0, .value(.null))) }
        let others = items.filter { $0 != .value(.null) }
        // Constants whose kind the left side's affinity would not convert go in one IN (…).
        let probe = try QueryBuilder(copying: self).operand(e, fold: flags)
        var grouped: [ExpressionNode] = [], single: [ExpressionNode] = []
        for item in others {
            if case .value(let v) = item, probe.affinity == nil || !converts(probe, Operand(sql: "", kind: OperandKind(v), constant: v, name: "")) {
                grouped.append(item)
            } else {
                single.append(item)
            }
        }
        if grouped.count == 1 { single.insert(grouped.removeFirst(), at: 0) }
        if !grouped.isEmpty {
            let lhs = try operand(e, fold: flags)
            let values = try grouped.map { try operand($0, fold: flags).sql }
            parts.append("\(binary(lhs.sql)) IN (\(values.joined(separator: ", ")))")
        }
        for item in single { parts.append(try equality(e, flags, item)) }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " OR ") + ")"
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS, LIKE and MATCHES: text only (nil, numbers and blobs do not
    /// match); an empty string is found in nothing, as with Foundation's `range(of:)`.
    package func stringOperation(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) { return "0" }
        try requireTextSides(l, op, r)
        if op == .matches {
            if case .value(.text(let pattern)) = r, let problem = SQLFunctions.validateRegex(pattern) {
                throw BatchStoreError(.invalidQuery, problem)
            }
            let lo = try operand(l), ro = try operand(r)
            return "(bs_matches(\(lo.sql), \(ro.sql), \(flags)) = 1)"
        }
        if flags != 0, op != .like {
            // One call per row that folds and compares ASCII text byte by byte without a copy
            // (what a search of a column does to every row): see `bs_search`.
            // string(x): the function reads x as text itself (what CAST(x AS TEXT) gives), one
            // expression fewer per row.
            var subjectNode = l, code = op == .contains ? 0 : (op == .beginsWith ? 1 : 2)
            if case .function(let name, let args, _) = l, name == "string", args.count == 1 {
                subjectNode = args[0]
                code |= 8
            }
            let subject = try operand(subjectNode)
            let needle = try operand(r, fold: flags)
            return "(bs_search(\(code), \(flags), \(subject.sql), \(needle.sql)) = 1)"
        }
        let lo = try operand(l, fold: flags)
        // A bare column searched for a constant: a GLOB prefix (which an index can serve) or instr,
        // with a typeof() guard (SQLite would otherwise match the text form of a number). GLOB
        // reads text up to a NUL, which is exact for a prefix without one; instr reads lengths.
        if lo.affinity != nil, case .value(.text(let needle)) = r, op == .beginsWith || op == .contains {
            let folded = SQLFunctions.fold(needle, flags: flags)
            if folded.isEmpty { return "0" }
            let guardSQL = "typeof(\(lo.sql)) = 'text'"
            if op == .contains { return "(instr(\(lo.sql), \(bind(.text(folded)))) > 0 AND \(guardSQL))" }
            if !folded.utf8.contains(0) { return "(\(lo.sql) GLOB \(bind(.text(Self.escapeGlob(folded) + "*"))) AND \(guardSQL))" }
        }
        let ro = try operand(r, fold: flags)
        let code: Int
        switch op {
        case .contains: code = 0
        case .beginsWith: code = 1
        case .endsWith: code = 2
        default: code = 3
        }
        return "(bs_has(\(code), \(lo.sql), \(ro.sql)) = 1)"
    }

    /// "an INTEGER" or "a REAL" for a column of that affinity.
    package func numberColumnType(_ path: [String], at column: Int) throws -> String? {
        let affinity = try QueryBuilder(copying: self).resolve(path, at: column).affinity
        guard Self.kind(ofAffinity: affinity) == .number else { return nil }
        return affinity == "INTEGER" ? "an INTEGER" : "a \(affinity)"
    }

    /// A SQL condition: on a table with a key, a test of the key against the rows the condition
    /// keeps (read under the alias `t`, which hides any outer `t`), so that its names mean the
    /// table's columns whatever the statement joins; on a view or a query's result, inline.
    package func sqlCondition(_ condition: String) throws -> String {
        let keys = entity.keyColumns
        guard source == nil, entity.query == nil, entity.kind != .view, !keys.isEmpty else { return "(\(condition))" }
        let table = "\(databaseName).\(quoteIdentifier(entity.name))"
        return "\(sqlTuple(qualified(keys, alias: alias))) IN (SELECT \(qualified(keys).joined(separator: ", ")) FROM \(table) AS t WHERE (\(condition)))"
    }

    /// The bare column and the constant, when one side is each.
    private func columnAndConstant(_ a: Operand, _ b: Operand) -> (column: Operand, constant: Operand)? {
        if a.affinity != nil, b.constant != nil { return (a, b) }
        if b.affinity != nil, a.constant != nil { return (b, a) }
        return nil
    }

    /// True when comparing `column` with `constant` would make SQLite convert the constant to
    /// another kind (numeric affinity turns text that looks like a number into a number; TEXT
    /// affinity turns numbers into text).
    private func converts(_ column: Operand, _ constant: Operand) -> Bool {
        switch (column.affinity, OperandKind(constant.constant ?? .null)) {
        case ("INTEGER", .text), ("REAL", .text), ("NUMERIC", .text): return true
        case ("TEXT", .number): return true
        default: return false
        }
    }

    /// The operand's SQL with its column affinity dropped (unary `+`), so nothing is converted.
    private func unaffine(_ o: Operand) -> String { o.affinity == nil ? o.sql : "+\(o.sql)" }

    /// A builder over the same entity whose bound arguments are thrown away (for looking at an
    /// operand's kind without binding it into this builder's SQL).
    private convenience init(copying other: QueryBuilder) {
        self.init(entity: other.entity, schema: other.schema, alias: other.alias, allowsJoins: other.allowsJoins, databaseName: other.databaseName, source: other.source)
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
}
