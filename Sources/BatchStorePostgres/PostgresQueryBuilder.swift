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
final class PostgresQueryBuilder {
    let table: PostgresTable
    let schema: PostgresSchema
    let alias: String
    private(set) var joins: [String] = []
    private var joinAliases: [String: (alias: String, table: PostgresTable)] = [:]
    private(set) var arguments: [SQLValue] = []

    /// True when the database's character classes are ASCII only (`datctype` C or POSIX), so a
    /// MATCHES pattern's `\w`, `\d`, `\s` and `[:alpha:]` would not match non-ASCII text as ICU's do.
    let asciiCharacterClasses: Bool

    init(table: PostgresTable, schema: PostgresSchema, alias: String = "t", asciiCharacterClasses: Bool = false) {
        self.table = table
        self.schema = schema
        self.alias = alias
        self.asciiCharacterClasses = asciiCharacterClasses
    }

    /// `"schema"."table" AS t LEFT JOIN …` for the joins key paths needed so far.
    var fromClause: String {
        (["\(table.qualifiedSQL) AS \(alias)"] + joins).joined(separator: " ")
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
    private func column(_ name: String, of table: PostgresTable, column position: Int) throws -> PostgresColumn {
        if let c = table.columns.first(where: { $0.name == name }) { return c }
        let names = table.columns.map(\.name)
        let where_ = position > 0 ? " (column \(position))" : ""
        var message = "\(table.name) has no column named \(name.debugDescription)\(where_)"
        if let suggestion = QueryBuilder.suggestion(for: name, among: names + table.relationships.map(\.name)) {
            message += "; did you mean \(suggestion.debugDescription)?" + QueryBuilder.caseNote(name, suggestion)
        } else {
            message += "; columns: " + names.prefix(20).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
        }
        throw BatchStoreError(.noSuchAttribute, message, column: position > 0 ? position : nil)
    }

    private func relationship(_ name: String, of table: PostgresTable) throws -> Relationship {
        if let r = table.relationships.first(where: { $0.name == name }) ?? table.relationships.first(where: { $0.sourceColumns == [name] }) {
            return r
        }
        var message = "\(table.name) has no relationship named \(name.debugDescription)"
        let names = table.relationships.map(\.name) + table.relationships.compactMap { $0.sourceColumns.count == 1 ? $0.sourceColumns[0] : nil }
        if let suggestion = QueryBuilder.suggestion(for: name, among: names) {
            message += "; did you mean \(suggestion.debugDescription)?" + QueryBuilder.caseNote(name, suggestion)
        } else {
            message += " (relationships: \(table.relationships.map(\.name).joined(separator: ", ").isEmpty ? "none" : table.relationships.map(\.name).joined(separator: ", ")))"
        }
        throw BatchStoreError(.noSuchAttribute, message)
    }

    /// The column a key path ends at, under the alias of the table that holds it (joining to-one
    /// relationships on the way).
    func resolve(_ path: [String], at position: Int = 0) throws -> (alias: String, column: PostgresColumn) {
        guard let last = path.last, !path.contains(where: \.isEmpty) else {
            throw BatchStoreError(.syntax, "empty name in key path \(path.joined(separator: ".").debugDescription)")
        }
        var current = table
        var currentAlias = alias
        var walked: [String] = []
        for part in path.dropLast() {
            let rel = try relationship(part, of: current)
            walked.append(rel.name)
            let key = walked.joined(separator: "\u{1F}")
            if let existing = joinAliases[key] {
                current = existing.table
                currentAlias = existing.alias
                continue
            }
            guard let destination = schema.table(named: rel.destinationEntityName) else {
                throw BatchStoreError(.noSuchEntity, "relationship \(rel.name) points to a missing table \(rel.destinationEntityName.debugDescription)")
            }
            let destColumns = rel.destinationColumns.isEmpty ? destination.primaryKey : rel.destinationColumns
            guard destColumns.count == rel.sourceColumns.count, !destColumns.isEmpty else {
                throw BatchStoreError(.invalidQuery, "relationship \(rel.name) has mismatched key columns")
            }
            let joinAlias = "j\(joinAliases.count + 1)"
            let on = zip(rel.sourceColumns, destColumns).map { "\(joinAlias).\(quoteIdentifier($1)) = \(currentAlias).\(quoteIdentifier($0))" }
            joins.append("LEFT JOIN \(destination.qualifiedSQL) AS \(joinAlias) ON \(on.joined(separator: " AND "))")
            joinAliases[key] = (joinAlias, destination)
            current = destination
            currentAlias = joinAlias
        }
        return (currentAlias, try column(last, of: current, column: position))
    }

    // MARK: Operands

    /// What the compiler knows of an expression: its SQL and the kind of its non-NULL values
    /// (PostgreSQL's types make every column's kind certain).
    struct Operand {
        enum Kind: String { case number, text, blob, null }
        var sql: String
        var kind: Kind
        /// The value, when the operand is a constant.
        var constant: SQLValue?
        /// True for a bare column reference (its kind is the column's).
        var isColumn = false
        /// True for numbers that are surely integers (integer and boolean columns, integer
        /// constants, integer arithmetic): their arithmetic runs exactly, in `numeric`.
        var isInteger = false
        var name: String

        static func kind(of value: SQLValue) -> Kind {
            switch value {
            case .null: return .null
            case .integer, .real: return .number
            case .text: return .text
            case .blob: return .blob
            }
        }

        /// The SQL for comparing this operand by code point when it is text.
        var ordered: String { kind == .text ? "(\(sql) COLLATE \"C\")" : sql }
    }

    /// The operand a column of the row under `alias` is, as its value kind reads it.
    static func columnOperand(_ column: PostgresColumn, alias: String, name: String) -> Operand {
        let sql = "\(alias).\(quoteIdentifier(column.name))"
        switch column.kind {
        case .integer: return Operand(sql: column.baseTypeOID == 26 ? "\(sql)::int8" : sql, kind: .number, isColumn: true, isInteger: true, name: name)
        case .real, .numeric: return Operand(sql: sql, kind: .number, isColumn: true, name: name)
        case .boolean: return Operand(sql: "\(sql)::int", kind: .number, isColumn: true, isInteger: true, name: name)
        case .blob: return Operand(sql: sql, kind: .blob, isColumn: true, name: name)
        case .text where [25, 1043].contains(column.baseTypeOID):
            return Operand(sql: sql, kind: .text, isColumn: true, name: name)
        case .text, .timestamp, .json, .uuid, .array:
            return Operand(sql: "\(sql)::text", kind: .text, isColumn: true, name: name)
        }
    }

    /// The SQL of a key path's column, as its kind compares and sorts.
    func column(for path: [String], at position: Int = 0) throws -> Operand {
        let (columnAlias, column) = try resolve(path, at: position)
        return Self.columnOperand(column, alias: columnAlias, name: "\(path.joined(separator: ".")) (\(column.declaredType) column)")
    }

    func operand(_ e: ExpressionNode, fold flags: Int = 0) throws -> Operand {
        if flags != 0 {
            if case .value(.text(let s)) = e {
                let folded = SQLValue.text(SQLFunctions.fold(s, flags: flags))
                return Operand(sql: bind(folded), kind: .text, constant: folded, name: s.debugDescription)
            }
            var o = try operand(e)
            if o.constant == nil, o.kind == .text {
                o.sql = "pg_temp.bs_fold_\(flags & 3 == 3 ? "cd" : flags & 1 != 0 ? "c" : "d")(\(o.sql))"
                o.isColumn = false
            }
            return o
        }
        switch e {
        case .value(let v):
            let name = v.isTextValue ? (v.textValue ?? "").debugDescription : v.description
            var o = Operand(sql: bind(v), kind: Operand.kind(of: v), constant: v, name: name)
            if case .integer = v { o.isInteger = true }
            return o
        case .keyPath(let path, let position):
            return try column(for: path, at: position)
        case .negate(let inner):
            let o = try operand(inner)
            try requireNumber(o, for: "-")
            return Operand(sql: o.isInteger ? "(-(\(o.sql))::numeric)" : "(-(\(o.sql))::float8)", kind: .number, isInteger: o.isInteger, name: "an arithmetic expression")
        case .binary(let op, let l, let r):
            let lo = try operand(l), ro = try operand(r)
            if op == "||" {
                return Operand(sql: "(\(textForm(lo)) || \(textForm(ro)))", kind: .text, name: "a concatenation")
            }
            try requireNumber(lo, for: op)
            try requireNumber(ro, for: op)
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
        case .function(let name, let args, let position):
            return try function(name, args, column: position)
        case .list:
            throw BatchStoreError(.invalidQuery, "a list {…} fits only after IN or BETWEEN, or before CONTAINS")
        }
    }

    /// The operand as text (numbers and blobs in their text form).
    private func textForm(_ o: Operand) -> String { o.kind == .text ? o.sql : "(\(o.sql))::text" }

    private func requireNumber(_ o: Operand, for op: String) throws {
        guard o.kind == .number || o.kind == .null else {
            throw BatchStoreError(.invalidQuery, "'\(op)' needs numbers, and \(o.name) is \(o.kind == .text ? "text" : "a blob")")
        }
    }

    private func function(_ name: String, _ args: [ExpressionNode], column: Int) throws -> Operand {
        func arity(_ range: ClosedRange<Int>) throws {
            guard range.contains(args.count) else {
                let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
                throw BatchStoreError(.invalidQuery, "\(name)() at column \(column) takes \(expected) argument\(range.upperBound == 1 ? "" : "s"), not \(args.count)")
            }
        }
        let operands = try args.map { try operand($0) }
        func result(_ sql: String, _ kind: Operand.Kind) -> Operand { Operand(sql: sql, kind: kind, name: "\(name)()") }
        /// The kind shared by every non-nil operand, or an error naming the two kinds met.
        func commonKind() throws -> Operand.Kind {
            let kinds = Set(operands.map(\.kind)).subtracting([.null])
            guard kinds.count <= 1 else {
                throw BatchStoreError(.invalidQuery, "\(name)() at column \(column) mixes \(kinds.map(\.rawValue).sorted().joined(separator: " and ")), which a PostgreSQL column cannot hold together")
            }
            return kinds.first ?? .null
        }
        switch name {
        case "now":
            try arity(0...0)
            return result(#"to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#, .text)
        case "lowercase", "lower", "uppercase", "upper":
            try arity(1...1)
            let function = name.hasPrefix("l") ? "bs_lower" : "bs_upper"
            return operands[0].kind == .text ? result("pg_temp.\(function)(\(operands[0].sql))", .text) : result(operands[0].sql, operands[0].kind)
        case "coalesce":
            try arity(1...64)
            let kind = try commonKind()
            var o = result(operands.count == 1 ? operands[0].sql : "coalesce(\(operands.map(\.sql).joined(separator: ", ")))", kind)
            o.isInteger = operands.allSatisfy { $0.isInteger || $0.kind == .null }
            return o
        case "abs":
            try arity(1...1)
            try requireNumber(operands[0], for: "abs()")
            var o = result("abs(\(operands[0].sql))", .number)
            o.isInteger = operands[0].isInteger
            return o
        case "round":
            try arity(1...2)
            try operands.forEach { try requireNumber($0, for: "round()") }
            // SQLite rounds half away from zero and answers a real, as numeric's round does.
            // SQLite reads negative digits as 0.
            let digits = operands.count == 2 ? ", greatest((\(operands[1].sql))::int, 0)" : ""
            return result("(round((\(operands[0].sql))::numeric\(digits)))::float8", .number)
        case "length":
            try arity(1...1)
            let o = operands[0]
            var length = result(o.kind == .blob ? "octet_length(\(o.sql))" : "char_length(\(textForm(o)))", .number)
            length.isInteger = true
            return length
        case "trim":
            try arity(1...1)
            // SQLite's trim() answers text, a number's text form included.
            return result("btrim(\(textForm(operands[0])), ' ')", .text)
        case "concat":
            try arity(1...64)
            return result("(" + operands.map { "coalesce(\(textForm($0)), '')" }.joined(separator: " || ") + ")", .text)
        case "substr", "substring":
            try arity(2...3)
            for o in operands.dropFirst() {
                if let v = o.constant?.doubleValue, v < 0 {
                    throw BatchStoreError(.invalidQuery, "substr() at column \(column) with a negative start or length is not supported on PostgreSQL yet")
                }
            }
            let rest = operands.dropFirst().map { "(\($0.sql))::int" }.joined(separator: ", ")
            return result("substr(\(textForm(operands[0])), \(rest))", .text)
        case "string":
            try arity(1...1)
            return result(textForm(operands[0]), .text)
        case "min", "max":
            try arity(2...64)
            let kind = try commonKind()
            // SQLite's min() and max() are nil when any argument is; least() and greatest() skip nils.
            let anyNil = operands.map { "\($0.sql) IS NULL" }.joined(separator: " OR ")
            let values = operands.map { kind == .text ? "(\($0.sql) COLLATE \"C\")" : $0.sql }.joined(separator: ", ")
            var o = result("(CASE WHEN \(anyNil) THEN NULL ELSE \(name == "min" ? "least" : "greatest")(\(values)) END)", kind)
            o.isInteger = operands.allSatisfy { $0.isInteger || $0.kind == .null }
            return o
        default:
            throw BatchStoreError(.invalidQuery, "unknown function \(name)() at column \(column); known: now, lowercase, uppercase, coalesce, abs, round, length, trim, concat, substr, string, min, max")
        }
    }

    // MARK: Assignments

    /// The guards a batch update's or insert's values go through, as PL/pgSQL functions of the
    /// session's `pg_temp` (PL/pgSQL is in every database unless it was dropped):
    /// `pg_temp.bs_integral(v, column)`: `v` when it has no fraction, else an error naming the
    /// column and the value, for integer columns: one for float8, checked in float8 (a whole float8
    /// casts to int8 exactly; through numeric it would keep 15 digits only), one for numeric;
    /// `pg_temp.bs_boolean(v, column)`: true for 1, false for 0, else an error.
    static let guardFunctions = ["float8", "numeric"].map { type in """
        CREATE OR REPLACE FUNCTION pg_temp.bs_integral(v \(type), col text) RETURNS \(type) LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          IF v <> trunc(v) THEN
            RAISE EXCEPTION '% holds integers, and the new value % has a fraction', col, v USING ERRCODE = '22003';
          END IF;
          RETURN v;
        END $$
        """ } + ["""
        CREATE OR REPLACE FUNCTION pg_temp.bs_boolean(v float8, col text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          IF v = 1 THEN RETURN true; ELSIF v = 0 THEN RETURN false; END IF;
          RAISE EXCEPTION '% holds booleans (1 or 0), and the new value is %', col, v USING ERRCODE = '22003';
        END $$
        """]

    /// Type OIDs whose explicit cast from text cuts a value that is too long (`bpchar`, `varchar`,
    /// `bit`, `varbit`): these take a new value by assignment, which refuses it instead.
    static let lengthLimitedTypes: Set<Int64> = [1042, 1043, 1560, 1562]
    /// Types whose every cast from text keeps only part of it (`"char"`: one byte, `name`: 63
    /// bytes): not written.
    static let cuttingTypes: Set<Int64> = [18, 19]

    /// The SQL that stores `o` in `column` of `table` as a batch update's new value: cast to the
    /// column's type as its input function reads text (a value it cannot read is an error naming
    /// it), a number with a fraction refused for an integer column (PostgreSQL's own cast would
    /// round it), nil as NULL. Length-limited text types (and domains over them, by base type)
    /// take the value by assignment, which refuses a value too long, where an explicit cast would
    /// cut it.
    func assignment(_ o: Operand, to column: PostgresColumn, in table: PostgresTable) throws -> String {
        let type = column.declaredType
        if Self.cuttingTypes.contains(column.baseTypeOID) {
            throw BatchStoreError(.invalidQuery, "\(table.name).\(column.name) is a \(type) column, whose casts cut text short: Faultline does not write it")
        }
        // A nil constant is bound as text: its cast is NULL of the column's type.
        if o.kind == .null { return "CAST(\(o.sql) AS \(type))" }
        func refuse() -> BatchStoreError {
            let what = o.kind == .blob ? "a blob" : o.kind == .text ? "text" : "a number"
            return BatchStoreError(.invalidQuery, "\(table.name).\(column.name) is a \(type) column, and \(o.name) is \(what)")
        }
        let lengthLimited = Self.lengthLimitedTypes.contains(column.baseTypeOID)
        func fromText(_ text: String) -> String {
            // bit(n) takes no text by assignment: through varbit, whose assignment checks the length.
            if [1560, 1562].contains(column.baseTypeOID) { return "CAST(\(text) AS varbit)" }
            return lengthLimited ? text : "CAST(\(text) AS \(type))"
        }
        switch column.kind {
        case .integer:
            switch o.kind {
            case .number where o.isInteger: return "CAST(CAST(\(o.sql) AS int8) AS \(type))"
            case .number:
                // The operand keeps its own type (float8 or numeric): the overload checks it exactly.
                let name = bind(.text(table.name + "." + column.name))
                return "CAST(CAST(pg_temp.bs_integral(\(o.sql), \(name)) AS int8) AS \(type))"
            case .text: return fromText(o.sql)
            default: throw refuse()
            }
        case .boolean:
            switch o.kind {
            // 1 and 0 only: PostgreSQL would read 2 or 0.5 as true, where SQLite keeps the number.
            case .number: return "pg_temp.bs_boolean((\(o.sql))::float8, \(bind(.text(table.name + "." + column.name))))"
            case .text: return "CAST(\(o.sql) AS \(type))"
            default: throw refuse()
            }
        case .real:
            guard o.kind == .number || o.kind == .text else { throw refuse() }
            return "CAST(\(o.sql) AS \(type))"
        case .numeric:
            // float8 to numeric keeps 15 digits; its text form is the shortest exact one.
            guard o.kind == .number || o.kind == .text else { throw refuse() }
            return o.kind == .number && !o.isInteger ? "CAST((\(o.sql))::text AS \(type))" : "CAST(\(o.sql) AS \(type))"
        case .blob:
            guard o.kind == .blob else { throw refuse() }
            return o.sql
        case .timestamp:
            // A number is no date: PostgreSQL would read 20010203 as 2001-02-03.
            guard o.kind == .text else { throw refuse() }
            return fromText(o.sql)
        case .text, .json, .uuid, .array:
            guard o.kind != .blob else { throw refuse() }
            return fromText(textForm(o))
        }
    }

    // MARK: Predicates

    /// Compiles a predicate to an SQL condition with NSPredicate's two-valued logic.
    func compile(_ p: PredicateNode) throws -> String {
        switch p {
        case .constant(let b): return b ? "TRUE" : "FALSE"
        case .not(let inner): return "NOT coalesce(\(try compile(inner)), FALSE)"
        case .and(let terms): return balancedSQL(try terms.map { try compile($0) }, "AND")
        case .or(let terms): return balancedSQL(try terms.map { try compile($0) }, "OR")
        case .between(let e, let lo, let hi, let flags):
            return "(\(try ordering(e, .greaterOrEqual, flags, lo)) AND \(try ordering(e, .lessOrEqual, flags, hi)))"
        case .inList(let e, let items, let flags):
            if items.isEmpty { return "FALSE" }
            return "(" + (try items.map { try equality(e, flags, $0) }).joined(separator: " OR ") + ")"
        case .comparison(let l, let op, let flags, let r):
            switch op {
            case .equal: return try equality(l, flags, r)
            case .notEqual: return "NOT coalesce(\(try equality(l, flags, r)), FALSE)"
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return try ordering(l, op, flags, r)
            case .beginsWith, .endsWith, .contains, .like, .matches: return try stringOperation(l, op, flags, r)
            }
        }
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
    private func typedComparison(_ l: ExpressionNode, _ op: String, _ flags: Int, _ r: ExpressionNode) throws -> String? {
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
    private func equality(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
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
    private func ordering(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
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
    private func stringOperation(_ l: ExpressionNode, _ op: ComparisonOperator, _ flags: Int, _ r: ExpressionNode) throws -> String {
        if l == .value(.null) || r == .value(.null) { return "FALSE" }
        for side in [l, r] {
            if case .value(let v) = side, !v.isTextValue {
                throw BatchStoreError(.invalidQuery, "\(op.rawValue) compares text, and \(v.description) is \(Operand.kind(of: v) == .number ? "a number" : "a blob")")
            }
            if case .keyPath(let path, let position) = side {
                let (_, column) = try PostgresQueryBuilder(copying: self).resolve(path, at: position)
                if Self.columnOperand(column, alias: alias, name: "").kind == .number {
                    throw BatchStoreError(.invalidQuery, "\(op.rawValue) compares text, and \(path.joined(separator: ".")) is a \(column.declaredType) column")
                }
            }
        }
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

    /// An NSPredicate LIKE pattern (`*` any run, `?` one character, `\` makes the next one
    /// literal) as a PostgreSQL LIKE pattern with `\` as its escape; nil for a pattern that
    /// matches nothing (a `\` at its end).
    static func likePattern(_ pattern: String) -> String? {
        var out = ""
        var escaped = false
        for c in pattern.unicodeScalars {
            if escaped {
                if c == "%" || c == "_" || c == "\\" { out += "\\" }
                out.unicodeScalars.append(c)
                escaped = false
                continue
            }
            switch c {
            case "\\": escaped = true
            case "*": out += "%"
            case "?": out += "_"
            case "%", "_": out += "\\" + String(c)
            default: out.unicodeScalars.append(c)
            }
        }
        return escaped ? nil : out
    }

    /// MATCHES: the whole text matches the regular expression. The pattern must be a constant in
    /// the part of ICU's syntax (NSPredicate's) that PostgreSQL's regular expressions read the same
    /// way; see ``postgresRegex(_:)``.
    private func matches(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        guard case .value(.text(let pattern)) = r else {
            throw BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL needs its pattern as a constant")
        }
        if let problem = SQLFunctions.validateRegex(pattern) { throw BatchStoreError(.invalidQuery, problem) }
        let folded = flags & 2 != 0 ? SQLFunctions.fold(pattern, flags: 2) : pattern
        if flags & 1 != 0, asciiCharacterClasses {
            throw BatchStoreError(.invalidQuery, "MATCHES[c] on PostgreSQL folds case by the database's locale, which is C (ASCII only) here; write the pattern for both cases, as in [Ee]lan, or compare lowercase(x)")
        }
        let regex = try Self.postgresRegex(folded, asciiCharacterClasses: asciiCharacterClasses)
        let lo = try operand(l)
        guard lo.kind == .text else { return "FALSE" }
        let subject = flags & 2 != 0 ? "pg_temp.bs_fold_d(\(lo.sql))" : lo.sql
        return "(\(subject) \(flags & 1 != 0 ? "~*" : "~") \(bind(.text(regex))))"
    }

    /// An ICU regular expression as a PostgreSQL one (ARE) that matches the same whole strings:
    /// wrapped in `^(?:…)$`, and `.` written as "any character but a line end", as ICU reads it
    /// (ARE's `.` matches a newline). Constructs the two read differently are refused by name:
    /// `\b` (a word boundary in ICU, a backspace in ARE), `\B`, `\A`, `\z`, `\Z`, `\G`, `\p{…}`,
    /// `\P{…}`, `\Q…\E`, `\h`, `\R`, `\X`, `\N`, possessive quantifiers, atomic groups, named
    /// groups and inline options. Where the database's character classes are ASCII only, so are
    /// `\w`, `\W`, `\d`, `\D`, `\s`, `\S` and `[:class:]`, which ICU reads over all of Unicode.
    static func postgresRegex(_ pattern: String, asciiCharacterClasses: Bool = false) throws -> String {
        let scalars = Array(pattern.unicodeScalars)
        var out = ""
        var i = 0
        var inBracket = false
        func refuseClass(_ what: String) -> BatchStoreError {
            BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL: \(what) in \(pattern.debugDescription) would match ASCII only (the database's character type is C); write the characters out, as in [0-9] or [A-Za-z]")
        }
        func refuse(_ what: String) -> BatchStoreError {
            BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL: \(what) in \(pattern.debugDescription) means something else to PostgreSQL's regular expressions; write the pattern without it")
        }
        while i < scalars.count {
            let c = scalars[i]
            if c == "\\", i + 1 < scalars.count {
                let next = scalars[i + 1]
                if "bBAzZGpPQEhHRXNkvVx".unicodeScalars.contains(next) { throw refuse("\\\(next)") }
                if asciiCharacterClasses, "wWdDsS".unicodeScalars.contains(next) { throw refuseClass("\\\(next)") }
                out.unicodeScalars.append(c)
                out.unicodeScalars.append(next)
                i += 2
                continue
            }
            if inBracket {
                if c == "]" { inBracket = false }
                if c == "[" {
                    // A POSIX class, [:alpha:], reads the same in both; set operations do not.
                    guard i + 1 < scalars.count, scalars[i + 1] == ":",
                          let end = (i + 2..<scalars.count).first(where: { scalars[$0] == ":" && $0 + 1 < scalars.count && scalars[$0 + 1] == "]" }) else {
                        throw refuse("a nested character class")
                    }
                    let name = String(String.UnicodeScalarView(scalars[i...(end + 1)]))
                    if asciiCharacterClasses { throw refuseClass(name) }
                    out += name
                    i = end + 2
                    continue
                }
                out.unicodeScalars.append(c)
                i += 1
                continue
            }
            switch c {
            case "[":
                // ICU reads a top-level [:alpha:] as a class; PostgreSQL as the characters in it.
                if i + 1 < scalars.count, scalars[i + 1] == ":" { throw refuse("a [:class:] outside brackets") }
                inBracket = true
                out.unicodeScalars.append(c)
                // A ']' first in the class is a literal in both syntaxes; so is a '^' before it.
                if i + 1 < scalars.count, scalars[i + 1] == "^" { out += "^"; i += 1 }
                if i + 1 < scalars.count, scalars[i + 1] == "]" { out += "]"; i += 1 }
            case ".":
                out += "[^\\n\\v\\f\\r\\u0085\\u2028\\u2029]"
            case "(":
                if i + 1 < scalars.count, scalars[i + 1] == "?" {
                    let rest = String(String.UnicodeScalarView(scalars[(i + 2)...].prefix(2)))
                    if !(rest.hasPrefix(":") || rest.hasPrefix("=") || rest.hasPrefix("!") || rest == "<=" || rest == "<!") {
                        throw refuse("(?\(rest.prefix(1))")
                    }
                }
                out.unicodeScalars.append(c)
            case "$":
                // ICU's $ also matches before a final line end; PostgreSQL's only at the end.
                if i + 1 < scalars.count { throw refuse("a $ before the end of the pattern") }
                out.unicodeScalars.append(c)
            case "*", "+", "?", "}":
                out.unicodeScalars.append(c)
                if i + 1 < scalars.count, scalars[i + 1] == "+" { throw refuse("a possessive quantifier") }
            default:
                out.unicodeScalars.append(c)
            }
            i += 1
        }
        return "^(?:\(out))$"
    }

    // MARK: Sorts

    /// `expr ASC NULLS FIRST` / `expr DESC NULLS LAST`, text by code point: SQLite's order.
    func order(_ sort: BatchStore.SortDescriptor) throws -> String {
        let o = try column(for: sort.keyPath)
        return "\(o.ordered) \(sort.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")"
    }

    private convenience init(copying other: PostgresQueryBuilder) {
        self.init(table: other.table, schema: other.schema, alias: other.alias)
    }
}

extension SQLValue {
    var isTextValue: Bool {
        if case .text = self { return true }
        return false
    }
}
