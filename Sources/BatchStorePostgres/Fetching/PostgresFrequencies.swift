import BatchStore
import Foundation

/// How one column's values are grouped, ordered, bounded and written back over PostgreSQL: what a
/// frequency sheet (`F`, `B`), a summary (`I`) and an edit of a sheet's values share, so that an
/// edit acts on exactly the rows a count counted.
///
/// A column groups by its own type where the type's equality is the one the predicate language
/// compares it with (integers, reals, `numeric`, booleans, `bytea`, dates and times, `uuid`,
/// `text`, `varchar`, `char`, `name`); every other type groups by its text, as `==` on it compares
/// (`interval`: '1 day' and '24 hours' are equal as intervals, not as text; `json` has no
/// equality, `point` no order). Binned (a bin width `w`), a number counts as its bin's lower bound
/// `floor(v / w) * w`: a `bigint` for integer columns (computed in `numeric`), a `double
/// precision` for reals, a `numeric` for `numeric` (computed with `mod`, exactly: a division
/// rounds to its scale; NaN and the infinities stay themselves).
struct PostgresGrouping {
    let column: PostgresColumn
    let binWidth: Int64?

    /// Base types read as text that group and sort by their own operators: the text types.
    static let groupable: Set<Int64> = [19, 25, 1042, 1043]

    private var groupsAsText: Bool {
        switch column.kind {
        case .json, .array: return true
        case .text: return !Self.groupable.contains(column.baseTypeOID)
        case .integer, .real, .numeric, .boolean, .blob, .timestamp, .uuid: return false
        }
    }

    /// True when the column holds numbers (what `B` bins).
    var isNumeric: Bool { [.integer, .real, .numeric].contains(column.kind) }

    /// The grouped value of `x` (the column on a row: `t."year"`, `ids.c2`).
    func expression(_ x: String) -> String {
        if let w = binWidth, isNumeric {
            switch column.kind {
            case .integer: return "CAST(floor(CAST(CAST(\(x) AS int8) AS numeric) / \(w)) * \(w) AS int8)"
            case .real: return "(floor(CAST(\(x) AS float8) / \(w)) * \(w))"
            default:
                let m = "mod(\(x), \(w))"
                return "(CASE WHEN \(m) = 'NaN' THEN \(x) WHEN \(m) < 0 THEN \(x) - \(m) - \(w) ELSE \(x) - \(m) END)"
            }
        }
        if groupsAsText { return "CAST(\(x) AS text)" }
        return column.baseTypeOID == 26 ? "CAST(\(x) AS int8)" : x
    }

    /// The grouped value's type, as a literal is cast to it.
    var valueType: String {
        if let _ = binWidth, isNumeric {
            switch column.kind {
            case .integer: return "int8"
            case .real: return "float8"
            default: return "numeric"
            }
        }
        if groupsAsText { return "text" }
        if column.baseTypeOID == 26 { return "int8" }
        return PostgresIDColumn.unlimited(column.declaredType, baseTypeOID: column.baseTypeOID)
    }

    /// The select-list expression that reads a grouped value `x` as an `SQLValue`: as the
    /// column reads (a binned `numeric` as a `double precision`, so that a bin has bounds; see
    /// ``shown(_:)``).
    func read(_ x: String) -> String {
        if binWidth != nil, isNumeric {
            return column.kind == .numeric ? "CAST(\(x) AS float8)" : x
        }
        if groupsAsText { return x }
        return column.kind.selectExpression(x, typeOID: column.baseTypeOID == 26 ? 20 : column.baseTypeOID)
    }

    /// True when grouped values are text of some kind, which orders by code point (`COLLATE
    /// "C"`), as SQLite's BINARY collation and the result's sorts order it, whatever the
    /// database's collation.
    private var isCollatable: Bool {
        if binWidth != nil, isNumeric { return false }
        return groupsAsText || [19, 25, 1042, 1043].contains(column.baseTypeOID)
    }

    /// A grouped value `x` as it orders: text by code point.
    func ordered(_ x: String) -> String { isCollatable ? "(\(x) COLLATE \"C\")" : x }

    /// A grouped value as read, as the sheet shows it: a bin of reals or `numeric` with an
    /// integral lower bound as that integer, as SQLite's bins are (NaN and the infinities stay reals).
    func shown(_ value: SQLValue) -> SQLValue {
        guard binWidth != nil, isNumeric, case .real(let d) = value, d.isFinite, d == d.rounded(),
              abs(d) < 9.2e18 else { return value }
        return .integer(Int64(d))
    }

    /// `min`/`max` of grouped values `x`, read as an `SQLValue`: booleans as 0 and 1, text by
    /// code point, types without a `min` by their text.
    func bound(_ function: String, _ x: String) -> String {
        switch column.kind {
        case .integer, .real, .numeric, .timestamp: return read("\(function)(\(x))")
        // No min(bytea): its hex digits order as its bytes do.
        case .blob: return "decode(\(function)(encode(\(x), 'hex') COLLATE \"C\"), 'hex')"
        case .boolean: return "\(function)(CAST(\(x) AS int4))"
        case .uuid: return "\(function)(CAST(\(x) AS text))"
        case .json, .array: return "\(function)(\(x) COLLATE \"C\")"
        case .text:
            if isCollatable, !groupsAsText { return "CAST(\(function)(\(x) COLLATE \"C\") AS text)" }
            return "\(function)(CAST(\(x) AS text) COLLATE \"C\")"
        }
    }

    /// The rows of `t` whose value is one of `selection`'s, as the GROUP BY grouped them:
    /// `(t."genre" IN (CAST('Drama' AS text)) OR t."genre" IS NULL)`; `false` for no values. The
    /// literals are the sheet's own (each value's text cast to the grouped type) or, for a
    /// selection made by hand, each value as an untyped literal the column's type reads.
    func condition(_ selection: ValueSelection, alias: String = "t") -> String {
        let x = "\(alias).\(quoteIdentifier(column.name))"
        let literals = selection.literalDialect == .postgres ? (selection.exactLiterals ?? []) : selection.values.map(Self.untypedLiteral)
        var present: [String] = []
        for (value, literal) in zip(selection.values, literals) where !value.isNull { present.append(literal) }
        var parts: [String] = []
        if !present.isEmpty { parts.append("\(expression(x)) IN (\(present.joined(separator: ", ")))") }
        if selection.values.contains(.null) { parts.append("\(x) IS NULL") }
        return parts.isEmpty ? "false" : "(" + parts.joined(separator: " OR ") + ")"
    }

    /// `value` as a quoted literal of unknown type (`'42'`, `'Drama'`, `'\x00ff'`, `'NaN'`), which
    /// PostgreSQL reads as the type it is compared with.
    static func untypedLiteral(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let i): return "'\(i)'"
        case .real(let d):
            if d.isNaN { return "'NaN'" }
            if d.isInfinite { return d < 0 ? "'-Infinity'" : "'Infinity'" }
            return "'\(d)'"
        case .text(let s): return quoteLiteral(s)
        case .blob(let b): return "'\\x" + b.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}

extension PostgresResultSource {
    /// The column `attribute` names, or `.noSuchAttribute`.
    private func valueColumn(_ attribute: String) throws -> (column: PostgresColumn, index: Int) {
        guard let i = entity.indexOfAttribute(named: attribute), i < table.columns.count else {
            throw BatchStoreError(.noSuchAttribute, "\(table.name) has no column named \(attribute.debugDescription)")
        }
        return (table.columns[i], i)
    }

    /// The ID rows `rows` reads, as a FROM item `ids`: the whole ID table, or for a sample the rows
    /// at its positions (`pos = ANY (…)` or, packed, `ctid = ANY (…)`: one lookup each).
    private func idsSource(_ rows: ResultRows) -> String {
        guard case .sample(let size) = rows, size > 0, idTable.count > size else { return "\(idTable.qualifiedName) AS ids" }
        let positions = ResultRows.samplePositions(size, of: idTable.count)
        let condition: String
        switch idTable.layout {
        case .numbered: condition = "pos = ANY ('{\(positions.map { String($0 + 1) }.joined(separator: ","))}'::int8[])"
        case .packed: condition = "ctid = ANY ('{\(positions.map { "\"\(idTable.tid($0))\"" }.joined(separator: ","))}'::tid[])"
        }
        return "(SELECT * FROM \(idTable.qualifiedName) WHERE \(condition)) AS ids"
    }

    /// The grouped values of the result's rows as one SELECT of a column `value` (and its bound
    /// values): the ID table's rows joined to the table by key (a view's from the ID table
    /// itself), or the rows the request's WHERE matches now (not for a request with a limit or an
    /// offset, whose rows the WHERE alone does not give).
    private func values(_ grouping: PostgresGrouping, index: Int, rows: ResultRows, request: FetchRequest) throws -> IDQuery {
        let name = quoteIdentifier(grouping.column.name)
        if rows == .matchingNow, request.fetchLimit == 0, request.fetchOffset == 0 {
            let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
            let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
            let sql = "SELECT \(grouping.expression("t.\(name)")) AS value FROM \(builder.fromClause)\(condition)"
            try prepare(sql)
            return IDQuery(select: sql, arguments: builder.arguments)
        }
        guard isAddressable else {
            return IDQuery(select: "SELECT \(grouping.expression("ids.\(idTable.columns[index].name)")) AS value FROM \(idsSource(rows))", arguments: [])
        }
        let on = idTable.columns.map { "\($0.source) = ids.\($0.name)" }.joined(separator: " AND ")
        return IDQuery(select: "SELECT \(grouping.expression("t.\(name)")) AS value FROM \(idsSource(rows)) JOIN \(table.qualifiedSQL) AS t ON \(on)", arguments: [])
    }

    func frequencies(of attribute: String, binWidth: Int64?, rows: ResultRows, request: FetchRequest, estimate: Int,
                     progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> any FrequencyTable {
        let (column, index) = try valueColumn(attribute)
        if let w = binWidth, w <= 0 { throw BatchStoreError(.invalidArgument, "a bin width must be positive, not \(w)") }
        let grouping = PostgresGrouping(column: column, binWidth: binWidth)
        let values = try values(grouping, index: index, rows: rows, request: request)
        return try PostgresFrequencyTable(source: self, grouping: grouping, values: values, name: makeFrequencyTableName(), progress: progress)
    }

    func summary(of attribute: String, rows: ResultRows, request: FetchRequest, estimate: Int,
                 progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> ColumnSummary {
        let (column, index) = try valueColumn(attribute)
        let grouping = PostgresGrouping(column: column, binWidth: nil)
        let values = try values(grouping, index: index, rows: rows, request: request)
        let kind = column.kind
        // A boolean is a number 0 or 1, as SQLite stores it and as it reads here.
        let average = grouping.isNumeric ? "CAST(avg(v.value) AS float8)" : kind == .boolean ? "avg(CAST(v.value AS int4))::float8" : "NULL::float8"
        let texty = kind.storageClass == "text"
        let length = texty ? "length(CAST(v.value AS text))" : "NULL::int4"
        func figuresSQL(_ average: String) -> String {
            """
            SELECT count(*), count(*) - count(v.value), \(grouping.bound("min", "v.value")), \(grouping.bound("max", "v.value")), \(average),
              min(\(length)), max(\(length)) FROM (\(values.select)) AS v
            """
        }
        let figures = figuresSQL(average)
        // The first of equal counts in value order (NULL first), as the frequency sheet orders ties.
        let grouped = """
            SELECT \(grouping.read("g.value")), g.c, count(g.value) OVER (), count(*) OVER (PARTITION BY g.c) FROM (SELECT v.value, count(*) AS c FROM (\(values.select)) AS v GROUP BY v.value) AS g
            ORDER BY g.c DESC, \(grouping.ordered("g.value")) NULLS FIRST LIMIT 3
            """
        try prepare(figures)
        func both(_ query: (String) throws -> [[SQLValue]]) throws -> (figures: [SQLValue], grouped: [[SQLValue]]) {
            let figureRow: [SQLValue]
            do {
                figureRow = try query(figures).first ?? []
            } catch let error as BatchStoreError where error.code == .postgres("22003") && kind == .real {
                // avg(float8) also sums the squares, which overflow past 1e154: the mean through
                // numeric then (exact, slower; SQLite's double sum gives the same for such values).
                figureRow = try query(figuresSQL("CAST(avg(CAST(v.value AS numeric)) AS float8)")).first ?? []
            }
            return (figureRow, try query(grouped))
        }
        let session = self.session
        let (f, tops): (figures: [SQLValue], grouped: [[SQLValue]])
        do {
            (f, tops) = try idTable.watching(progress) { watch, cancel in
                try both { try session.query($0, values.arguments, every: 0.05, watch: watch, cancel: cancel) }
            } ?? both { try session.query($0, values.arguments) }
        } catch let error as BatchStoreError where error.code != .cancelled && error.code != .serverUnavailable {
            throw BatchStoreError(error.code, "the summary of \(column.name): \(error.message)")
        }
        func int(_ i: Int) -> Int? { i < f.count ? f[i].integerValue.map { Int($0) } : nil }
        func value(_ i: Int) -> SQLValue? { i < f.count && f[i] != .null ? f[i] : nil }
        var mean: Double?
        if let v = value(4) { if case .real(let d) = v { mean = d } else if case .integer(let n) = v { mean = Double(n) } }
        let rowsSeen = int(0) ?? 0, nulls = int(1) ?? 0
        var mostFrequent: ValueCount?
        var distinct = 0
        var ties = 1
        var tied: [SQLValue] = []
        if let g = tops.first, g.count == 4, let c = g[1].integerValue {
            mostFrequent = ValueCount(value: g[0], count: Int(c))
            distinct = Int(g[2].integerValue ?? 0)
            ties = max(1, Int(g[3].integerValue ?? 1))
            tied = tops.filter { $0.count == 4 && $0[1].integerValue == c }.map { $0[0] }
        }
        var summary = ColumnSummary(attribute: column.name, declaredType: column.declaredType, rows: rowsSeen,
                                    storageClasses: rowsSeen > nulls ? [kind.storageClass] : [], nulls: nulls, distinct: distinct,
                                    min: value(2), max: value(3), mean: mean, shortest: int(5), longest: int(6), mostFrequent: mostFrequent)
        summary.mostFrequentTies = ties
        summary.tiedForMostFrequent = tied
        return summary
    }

    /// `SELECT CAST(min(v.value) AS float8), CAST(max(v.value) AS float8) FROM (<values>) AS v`
    /// for a column of numbers (NaN left out: it sorts above every number), nil for any other.
    func numericRange(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ClosedRange<Double>? {
        let (column, index) = try valueColumn(attribute)
        let grouping = PostgresGrouping(column: column, binWidth: nil)
        guard grouping.isNumeric else { return nil }
        let values = try values(grouping, index: index, rows: rows, request: request)
        let notNaN = column.kind == .integer ? "" : " WHERE v.value <> 'NaN'"
        let sql = "SELECT CAST(min(v.value) AS float8), CAST(max(v.value) AS float8) FROM (\(values.select)) AS v\(notNaN)"
        guard let row = try session.query(sql, values.arguments).first, row.count == 2,
              case .real(let low) = row[0], case .real(let high) = row[1] else { return nil }
        return low...high
    }

    /// The rows a sheet's `values` select, for an edit: the grouped value of each row in them.
    func condition(for values: ValueSelection) throws -> String {
        let (column, _) = try valueColumn(values.attribute)
        return PostgresGrouping(column: column, binWidth: values.binWidth).condition(values)
    }
}

/// A ``FrequencyTable`` in a temp table of the result's session,
/// `pg_temp."bs_freq_N"(pos bigint PRIMARY KEY, value <the grouped type>, count bigint)`, made by
/// `CREATE TEMP TABLE … AS SELECT row_number() OVER (ORDER BY g.c DESC, g.value NULLS FIRST) AS pos,
/// g.value, g.c AS count FROM (SELECT value, count(*) AS c FROM (<values>) AS v GROUP BY value) AS g`
/// (binned: ordered by value alone). It keeps the session open, and is dropped when it goes.
final class PostgresFrequencyTable: FrequencyTable {
    let figures: FrequencyFigures
    private let lease: PostgresSessionLease
    private let name: String
    private let grouping: PostgresGrouping
    private var session: PostgresSession { lease.session }
    private var qualifiedName: String { "pg_temp.\(quoteIdentifier(name))" }

    init(source: PostgresResultSource, grouping: PostgresGrouping, values: IDQuery, name: String,
         progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        let started = DispatchTime.now().uptimeNanoseconds
        lease = source.lease
        self.name = name
        self.grouping = grouping
        let table = "pg_temp.\(quoteIdentifier(name))"
        let value = grouping.ordered("g.value")
        let order = grouping.binWidth != nil && grouping.isNumeric ? "\(value) NULLS FIRST" : "g.c DESC, \(value) NULLS FIRST"
        let sql = "CREATE TEMP TABLE \(quoteIdentifier(name)) AS SELECT row_number() OVER (ORDER BY \(order)) AS pos, g.value, g.c AS count "
            + "FROM (SELECT v.value, count(*) AS c FROM (\(values.select)) AS v GROUP BY v.value) AS g"
        let session = source.session
        let drop = { _ = try? session.execute("DROP TABLE IF EXISTS \(table)") }
        let found: [SQLValue]
        do {
            if try source.idTable.watching(progress, { watch, cancel in
                _ = try session.execute(sql, values.arguments, every: 0.05, watch: watch, cancel: cancel)
                return true
            }, onLateCancel: drop) == nil {
                _ = try session.execute(sql, values.arguments)
            }
            _ = try session.execute("ALTER TABLE \(table) ADD PRIMARY KEY (pos)")
            found = try session.query("SELECT count(*), CAST(coalesce(sum(count), 0) AS int8), coalesce(max(count), 0) FROM \(table)").first ?? []
        } catch {
            drop()
            throw error
        }
        func int(_ i: Int) -> Int { i < found.count ? Int(found[i].integerValue ?? 0) : 0 }
        figures = FrequencyFigures(attribute: grouping.column.name, binWidth: grouping.binWidth, groupSQL: sql, groupArguments: values.arguments,
                                   count: int(0), total: int(1), maxCount: int(2), started: started)
    }

    deinit { session.executeDetached("DROP TABLE IF EXISTS \(qualifiedName)") }

    var pageSQL: String {
        "SELECT \(grouping.read("f.value")), f.count FROM \(qualifiedName) AS f WHERE f.pos BETWEEN $1 AND $2 ORDER BY f.pos"
    }

    var location: String { "PostgreSQL temp table \(name)" }

    func values(in positions: Range<Int>) throws -> [ValueCount] {
        let lower = max(0, positions.lowerBound), upper = min(count, positions.upperBound)
        guard lower < upper else { return [] }
        return try session.query(pageSQL, [.integer(Int64(lower + 1)), .integer(Int64(upper))]).map { row in
            ValueCount(value: grouping.shown(row.first ?? .null), count: Int(row.last?.integerValue ?? 0))
        }
    }

    /// Each value as its text cast to the grouped type (`CAST('Drama' AS text)`, `CAST('1990' AS
    /// int8)`): every PostgreSQL type reads its own text back as the same value.
    func selection(at positions: [Int]) throws -> ValueSelection {
        var values: [SQLValue] = [], literals: [String] = []
        let sql = "SELECT \(grouping.read("f.value")), CAST(f.value AS text) FROM \(qualifiedName) AS f WHERE f.pos = $1"
        for position in positions {
            guard let row = try session.query(sql, [.integer(Int64(position + 1))]).first, row.count == 2 else {
                throw BatchStoreError(.invalidArgument, "value \(position + 1) is not on the frequency sheet; nothing was changed")
            }
            values.append(grouping.shown(row[0]))
            if case .text(let text) = row[1] {
                literals.append("CAST(\(quoteLiteral(text)) AS \(grouping.valueType))")
            } else {
                literals.append("NULL")
            }
        }
        return ValueSelection(attribute: attribute, values: values, literals: literals, dialect: .postgres, binWidth: binWidth)
    }

    /// `SELECT pos FROM pg_temp."bs_freq_N" WHERE value IS NOT DISTINCT FROM <literal> ORDER BY pos LIMIT 1`.
    func position(of selection: ValueSelection) throws -> Int? {
        guard let value = selection.values.first else { return nil }
        let literal = selection.literalDialect == .postgres ? (selection.exactLiterals?.first ?? "NULL") : PostgresGrouping.untypedLiteral(value)
        let sql = "SELECT pos FROM \(qualifiedName) WHERE value IS NOT DISTINCT FROM \(literal) ORDER BY pos LIMIT 1"
        return try session.query(sql).first?.first?.integerValue.map { Int($0) - 1 }
    }
}
