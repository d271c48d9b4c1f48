import BatchStore
import Foundation

/// Compiles predicates and sort keys against one PostgreSQL table into SQL with `$1`, `$2`, …
/// placeholders and an argument list: the PostgreSQL dialect of the predicate language, with
/// NSPredicate's semantics, so the same predicate selects the same rows as on a SQLite store.
///
/// What differs from SQLite, and how the SQL keeps NSPredicate's meaning:
/// - Columns are typed, so each operand's kind (number, text, blob) is known before any row is
///   read: `year == "2001"` is false outright, as NSPredicate never equals a number and text,
///   and `year < "2001"` is an error, as on SQLite.
/// - Text orders by code point (`COLLATE "C"`), as SQLite's BINARY collation and Swift do,
///   whatever the database's locale; sorts put NULL first ascending, last descending, as SQLite.
/// - `[c]`, `[d]`, `lowercase()` and `uppercase()` use the session's `pg_temp` functions
///   (``PostgresTextFunctions``), which fold as Swift does, not as the server's locale does.
/// - Comparisons are two-valued: `NOT P` is `NOT coalesce(P, false)`; a comparison with nil is
///   false except `== nil` and `!=`.
/// - `/` divides as floating point and gives nil for a zero divisor, `min()` and `max()` give nil
///   when an argument is nil, as SQLite does.
/// - Booleans compare as the numbers 1 and 0 they are read as. A text literal compared with a
///   column of a typed kind (dates, times, timestamps, intervals, numeric, uuid, jsonb, inet…) is
///   cast to the column's type, as psql reads it (``typedComparisonTypes``); two such columns, or
///   a column and an expression, and the other types (json, arrays) compare as the text they are
///   read as.
///
/// Names are resolved against the schema and quoted; values are only ever bound.
final class PostgresQueryBuilder: PredicateDialect {
    static let trueSQL = "TRUE"
    static let falseSQL = "FALSE"
    let schema: PostgresSchema
    /// True when the database's character classes are ASCII only (`datctype` C or POSIX), so a
    /// MATCHES pattern's `\w`, `\d`, `\s` and `[:alpha:]` would not match non-ASCII text as ICU's do.
    let asciiCharacterClasses: Bool
    /// The table, its alias and the LEFT JOINs the key paths compiled so far need.
    package private(set) var paths: KeyPathJoins<PostgresTable>
    private(set) var arguments: [SQLValue] = []
    var table: PostgresTable { paths.root }

    init(table: PostgresTable, schema: PostgresSchema, alias: String = "t", asciiCharacterClasses: Bool = false) {
        self.schema = schema
        self.asciiCharacterClasses = asciiCharacterClasses
        paths = KeyPathJoins(table, alias: alias, destination: { schema.table(named: $0) }, qualifiedName: \.qualifiedSQL)
    }

    /// Binds `value` and returns its placeholder, cast where a bare parameter would be ambiguous.
    func bind(_ value: SQLValue) -> String {
        arguments.append(value)
        let placeholder = "$\(arguments.count)"
        switch value {
        case .null: return "\(placeholder)::text"
        case .integer: return "\(placeholder)::int8"
        case .real: return "\(placeholder)::float8"
        case .text: return "\(placeholder)::text"
        case .blob: return "\(placeholder)::bytea"
        }
    }

    // MARK: Key paths

    /// The column `name` of `table`, matched exactly (key paths are case-sensitive); a near miss is
    /// named in the error.
    func column(_ name: String, of table: PostgresTable, column position: Int) throws -> PostgresColumn {
        if let c = table.columns.first(where: { $0.name == name }) { return c }
        throw KeyPathJoins<PostgresTable>.noColumn(name, in: table, column: position)
    }

    /// The column a key path ends at, under the alias of the table that holds it (joining to-one
    /// relationships on the way).
    func resolve(_ path: [String], at position: Int = 0) throws -> (alias: String, column: PostgresColumn) {
        let (currentAlias, current, last) = try paths.walk(path, from: table)
        return (currentAlias, try column(last, of: current, column: position))
    }

    // MARK: Operands

    /// The operand a column of the row under `alias` is, as its value kind reads it (PostgreSQL's
    /// types make every column's kind certain).
    static func columnOperand(_ column: PostgresColumn, alias: String, name: String) -> Operand {
        let sql = "\(alias).\(quoteIdentifier(column.name))"
        switch column.kind {
        case .integer: return Operand(sql: column.baseTypeOID == 26 ? "\(sql)::int8" : sql, kind: .number, isInteger: true, name: name)
        case .real, .numeric: return Operand(sql: sql, kind: .number, name: name)
        case .boolean: return Operand(sql: "\(sql)::int", kind: .number, isInteger: true, name: name)
        case .blob: return Operand(sql: sql, kind: .blob, name: name)
        case .text where [25, 1043].contains(column.baseTypeOID):
            return Operand(sql: sql, kind: .text, name: name)
        case .text, .timestamp, .json, .uuid, .array:
            return Operand(sql: "\(sql)::text", kind: .text, name: name)
        }
    }

    /// The SQL of a key path's column, as its kind compares and sorts.
    func keyPathOperand(_ path: [String], at position: Int = 0) throws -> Operand {
        let (columnAlias, column) = try resolve(path, at: position)
        return Self.columnOperand(column, alias: columnAlias, name: "\(path.joined(separator: ".")) (\(column.declaredType) column)")
    }

    func folded(_ o: Operand, _ flags: Int) -> Operand {
        guard o.kind == .text else { return o }
        var o = o
        o.sql = "pg_temp.bs_fold_\(flags & 3 == 3 ? "cd" : flags & 1 != 0 ? "c" : "d")(\(o.sql))"
        return o
    }

    func negated(_ o: Operand) -> Operand {
        Operand(sql: o.isInteger ? "(-(\(o.sql))::numeric)" : "(-(\(o.sql))::float8)", kind: .number, isInteger: o.isInteger, name: "an arithmetic expression")
    }

    func concatenation(_ l: Operand, after left: ExpressionNode, _ r: Operand) -> Operand {
        Operand(sql: "(\(textForm(l)) || \(textForm(r)))", kind: .text, name: "a concatenation")
    }

    func arithmetic(_ lo: Operand, _ op: String, _ ro: Operand, after left: ExpressionNode) -> Operand {
        let sql: String
        var integer = false
        switch op {
        // NSExpression divides as floating point (9 / 4 is 2.25); SQLite gives NULL for / 0.
        case "/": sql = "((\(lo.sql))::float8 / NULLIF((\(ro.sql))::float8, 0))"
        // SQLite's bs_pow: nil where pow() is not finite (a negative base and a fractional
        // exponent, zero to a negative power), where PostgreSQL's power() fails.
        case "**":
            let (b, e) = ("(\(lo.sql))::float8", "(\(ro.sql))::float8")
            sql = "(CASE WHEN (\(b) < 0 AND \(e) <> trunc(\(e))) OR (\(b) = 0 AND \(e) < 0) THEN NULL ELSE power(\(b), \(e)) END)"
        // SQLite's %: both sides as integers, nil for a zero divisor, the dividend's sign.
        case "%":
            sql = "(trunc((\(lo.sql))::numeric) % NULLIF(trunc((\(ro.sql))::numeric), 0))"
            integer = true
        default:
            // Integers add, subtract and multiply exactly (numeric never overflows, where
            // SQLite turns an overflowing integer into a real); anything with a real, as reals.
            integer = lo.isInteger && ro.isInteger
            let cast = integer ? "numeric" : "float8"
            sql = "((\(lo.sql))::\(cast) \(op) (\(ro.sql))::\(cast))"
        }
        return Operand(sql: sql, kind: .number, isInteger: integer, name: "an arithmetic expression")
    }

    /// The operand as text (numbers and blobs in their text form).
    func textForm(_ o: Operand) -> String { o.kind == .text ? o.sql : "(\(o.sql))::text" }

    func call(_ name: String, _ operands: [Operand], column: Int) throws -> Operand {
        func result(_ sql: String, _ kind: OperandKind) -> Operand { Operand(sql: sql, kind: kind, name: "\(name)()") }
        /// The kind shared by every non-nil operand, or an error naming the two kinds met.
        func commonKind() throws -> OperandKind {
            let kinds = Set(operands.map(\.kind)).subtracting([.null])
            guard kinds.count <= 1 else {
                throw BatchStoreError(.invalidQuery, "\(name)() at column \(column) mixes \(kinds.map(\.rawValue).sorted().joined(separator: " and ")), which a PostgreSQL column cannot hold together")
            }
            return kinds.first ?? .null
        }
        switch name {
        case "now":
            return result(#"to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#, .text)
        case "lowercase", "lower", "uppercase", "upper":
            let function = name.hasPrefix("l") ? "bs_lower" : "bs_upper"
            return operands[0].kind == .text ? result("pg_temp.\(function)(\(operands[0].sql))", .text) : result(operands[0].sql, operands[0].kind)
        case "coalesce":
            let kind = try commonKind()
            var o = result(operands.count == 1 ? operands[0].sql : "coalesce(\(operands.map(\.sql).joined(separator: ", ")))", kind)
            o.isInteger = operands.allSatisfy { $0.isInteger || $0.kind == .null }
            return o
        case "abs":
            try requireNumber(operands[0], for: "abs()")
            var o = result("abs(\(operands[0].sql))", .number)
            o.isInteger = operands[0].isInteger
            return o
        case "round":
            try operands.forEach { try requireNumber($0, for: "round()") }
            // SQLite rounds half away from zero and answers a real, as numeric's round does.
            // SQLite reads negative digits as 0.
            let digits = operands.count == 2 ? ", greatest((\(operands[1].sql))::int, 0)" : ""
            return result("(round((\(operands[0].sql))::numeric\(digits)))::float8", .number)
        case "length":
            let o = operands[0]
            var length = result(o.kind == .blob ? "octet_length(\(o.sql))" : "char_length(\(textForm(o)))", .number)
            length.isInteger = true
            return length
        case "trim":
            // SQLite's trim() answers text, a number's text form included.
            return result("btrim(\(textForm(operands[0])), ' ')", .text)
        case "concat":
            return result("(" + operands.map { "coalesce(\(textForm($0)), '')" }.joined(separator: " || ") + ")", .text)
        case "substr", "substring":
            for o in operands.dropFirst() {
                if let v = o.constant?.doubleValue, v < 0 {
                    throw BatchStoreError(.invalidQuery, "substr() at column \(column) with a negative start or length is not supported on PostgreSQL yet")
                }
            }
            let rest = operands.dropFirst().map { "(\($0.sql))::int" }.joined(separator: ", ")
            return result("substr(\(textForm(operands[0])), \(rest))", .text)
        case "string":
            return result(textForm(operands[0]), .text)
        case "min", "max":
            let kind = try commonKind()
            // SQLite's min() and max() are nil when any argument is; least() and greatest() skip nils.
            let anyNil = operands.map { "\($0.sql) IS NULL" }.joined(separator: " OR ")
            let values = operands.map { kind == .text ? "(\($0.sql) COLLATE \"C\")" : $0.sql }.joined(separator: ", ")
            var o = result("(CASE WHEN \(anyNil) THEN NULL ELSE \(name == "min" ? "least" : "greatest")(\(values)) END)", kind)
            o.isInteger = operands.allSatisfy { $0.isInteger || $0.kind == .null }
            return o
        default: preconditionFailure("PredicateFunctions.check knows \(name)() and this switch does not")
        }
    }

    // MARK: Predicates

    /// `e IN {…}`: `e == a OR e == b …`.
    func membership(_ e: ExpressionNode, _ items: [ExpressionNode], _ flags: Int) throws -> String {
        if items.isEmpty { return "FALSE" }
        return "(" + (try items.map { try equality(e, flags, $0) }).joined(separator: " OR ") + ")"
    }

    /// `l != r`: exactly `NOT (l == r)`, so a row whose value is NULL is kept.
    func inequality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        "NOT coalesce(\(try equality(l, flags, r)), FALSE)"
    }

    /// Type OIDs (of a column's base type) whose values compare in their own type when a text
    /// literal meets them, as psql compares them: `time_hour < '2013-1-2'` is a time, not a
    /// string: dates and times (date, time, timetz, timestamp, timestamptz), interval, numeric,
    /// uuid, jsonb, inet, cidr, macaddr, macaddr8, money. (json, xml and the geometric types have
    /// no equality; text types compare as text.)
    static let typedComparisonTypes: Set<Int64> = Set(typedComparisonNames.keys)

    /// The base type each literal is cast to, without the column's precision or domain: a
    /// `numeric(8,2)` column compares with `'12.245'` as psql does (no match), not with 12.25,
    /// and a domain's CHECK does not reject a literal that is only compared.
    static let typedComparisonNames: [Int64: String] = [
        1082: "date", 1083: "time", 1266: "timetz", 1114: "timestamp", 1184: "timestamptz", 1186: "interval",
        1700: "numeric", 2950: "uuid", 3802: "jsonb", 869: "inet", 650: "cidr", 829: "macaddr", 774: "macaddr8", 790: "money",
    ]

    /// `column op CAST('literal' AS type)` when one side is a column of a type in
    /// ``typedComparisonTypes`` and the other a text literal (no `[c]`/`[d]`): the literal is read
    /// by the type's own input function, as psql reads `time_hour < '2013-1-2'` (the session's
    /// time zone for timestamptz, `2013-1-2` as a date), so a predicate means what psql means. A
    /// literal the type cannot read is an error the server names (exit 2). Nil otherwise.
    func typedComparison(_ l: ExpressionNode, _ op: String, _ flags: Int, _ r: ExpressionNode) throws -> String? {
        guard flags == 0 else { return nil }
        func typedColumn(_ e: ExpressionNode) throws -> (sql: String, column: PostgresColumn)? {
            guard case .keyPath(let path, let position) = e else { return nil }
            let (columnAlias, column) = try resolve(path, at: position)
            guard Self.typedComparisonTypes.contains(column.baseTypeOID) else { return nil }
            return ("\(columnAlias).\(quoteIdentifier(column.name))", column)
        }
        if let (sql, column) = try typedColumn(l), case .value(.text(let text)) = r, let type = Self.typedComparisonNames[column.baseTypeOID] {
            return "(\(sql) \(op) CAST(\(bind(.text(text))) AS \(type)))"
        }
        if let (sql, column) = try typedColumn(r), case .value(.text(let text)) = l, let type = Self.typedComparisonNames[column.baseTypeOID] {
            return "(CAST(\(bind(.text(text))) AS \(type)) \(op) \(sql))"
        }
        return nil
    }

    /// `l == r`: nil equals nil only; numbers equal numbers, text text, blobs blobs, never across kinds.
    func equality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) {
            let other = l == .value(.null) ? r : l
            if other == .value(.null) { return "TRUE" }
            return "(\(try operand(other).sql) IS NULL)"
        }
        if let typed = try typedComparison(l, "=", flags, r) { return typed }
        let lo = try operand(l, fold: flags), ro = try operand(r, fold: flags)
        if let a = lo.constant, let b = ro.constant { return Self.constantsEqual(a, b) ? "TRUE" : "FALSE" }
        if lo.kind != ro.kind, lo.kind != .null, ro.kind != .null { return "FALSE" }
        if lo.constant != nil || ro.constant != nil { return "(\(lo.sql) = \(ro.sql))" }
        // Two columns or expressions: nil == nil is true.
        return "(\(lo.sql) IS NOT DISTINCT FROM \(ro.sql))"
    }

    /// NSPredicate's `==` of two constants (already folded).
    static func constantsEqual(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y
        case (.integer(let x), .real(let y)): return Double(x) == y
        case (.real(let x), .integer(let y)): return x == Double(y)
        case (.real(let x), .real(let y)): return x == y
        case (.text(let x), .text(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.blob(let x), .blob(let y)): return x == y
        default: return false
        }
    }

    /// `l < r` and the like: false when either side is nil; an error when the kinds differ.
    func ordering(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) { return "FALSE" }
        if let typed = try typedComparison(l, op.rawValue, flags, r) { return typed }
        let lo = try operand(l, fold: flags), ro = try operand(r, fold: flags)
        if lo.kind != ro.kind, lo.kind != .null, ro.kind != .null {
            throw BatchStoreError(.invalidQuery, "cannot order \(lo.name) (\(lo.kind.rawValue)) against \(ro.name) (\(ro.kind.rawValue)) with \(op.rawValue): NSPredicate compares numbers with numbers and text with text")
        }
        return "(\(lo.ordered) \(op.rawValue) \(ro.ordered))"
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS, LIKE and MATCHES: text only (nil, numbers and blobs do not
    /// match); an empty string is found in nothing, as with Foundation's `range(of:)`.
    func stringOperation(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) { return "FALSE" }
        try requireTextSides(l, op, r)
        if op == .matches { return try matches(l, flags, r) }
        let lo = try operand(l, fold: flags), ro = try operand(r, fold: flags)
        // Blobs hold no text: nothing matches, as on SQLite.
        guard lo.kind == .text, ro.kind == .text else { return "FALSE" }
        if op == .like {
            guard case .text(let pattern)? = ro.constant else {
                throw BatchStoreError(.invalidQuery, "LIKE on PostgreSQL needs its pattern as a constant, not \(ro.name)")
            }
            guard let translated = Self.likePattern(pattern) else { return "FALSE" }
            arguments[arguments.count - 1] = .text(translated)
            return "(\(lo.sql) LIKE \(ro.sql) ESCAPE '\\')"
        }
        if case .text(let needle)? = ro.constant, needle.isEmpty { return "FALSE" }
        let nonEmpty = ro.constant == nil ? "char_length(\(ro.sql)) > 0 AND " : ""
        switch op {
        case .contains: return "(\(nonEmpty)strpos(\(lo.sql), \(ro.sql)) > 0)"
        case .beginsWith: return "(\(nonEmpty)starts_with(\(lo.sql), \(ro.sql)))"
        default: return "(\(nonEmpty)right(\(lo.sql), char_length(\(ro.sql))) = \(ro.sql))"
        }
    }

    // MARK: Sorts

    /// `expr ASC NULLS FIRST` / `expr DESC NULLS LAST`, text by code point: SQLite's order.
    func order(_ sort: BatchStore.SortDescriptor) throws -> String {
        let o = try keyPathOperand(sort.keyPath)
        return "\(o.ordered) \(sort.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")"
    }

    /// "a bigint", "an integer" (the column's declared type) for a column of numbers.
    /// Refused: a PostgreSQL function in a condition may write (`nextval`, a user's function), and
    /// the read-only transaction that would keep a condition a read is not built yet.
    func sqlCondition(_ condition: String) throws -> String {
        throw BatchStoreError(.invalidQuery, "a SQL condition (WHERE …) runs on SQLite files only for now; on PostgreSQL write the filter in NSPredicate's format, as in title LIKE 'U*'")
    }

    func numberColumnType(_ path: [String], at position: Int) throws -> String? {
        let (_, column) = try PostgresQueryBuilder(copying: self).resolve(path, at: position)
        guard Self.columnOperand(column, alias: alias, name: "").kind == .number else { return nil }
        let type = column.declaredType
        return ("aeiou".contains(type.prefix(1).lowercased()) ? "an " : "a ") + type
    }

    private convenience init(copying other: PostgresQueryBuilder) {
        self.init(table: other.table, schema: other.schema, alias: other.alias)
    }
}

extension Operand {
    /// The SQL for comparing this operand by code point when it is text.
    var ordered: String { kind == .text ? "(\(sql) COLLATE \"C\")" : sql }
}
