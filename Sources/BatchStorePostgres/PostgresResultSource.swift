import BatchStore
import Foundation

/// A column of a result's ID table on PostgreSQL: its name there, and the table column it copies
/// (whose type and kind say how to read it back and how to bind a value compared with it).
struct PostgresIDColumn {
    /// `key`, `k0`, `k1`, … or, for a relation without a key, `c0`, `c1`, …
    let name: String
    /// The SQL expression filling it, on the row under `t` (`t."id"`, `t.ctid`).
    let source: String
    /// How its values read: the column's kind, or text for `ctid`.
    let kind: PostgresValueKind
    let baseTypeOID: Int64
    /// The type a bound value is cast to before it is compared with the column (`bigint`, `tid`).
    let sqlType: String

    /// The column's source as the ID fetch's last sort key: text by code point (`COLLATE "C"`), as
    /// SQLite orders a text key, whatever the database's collation.
    var orderSQL: String { [25, 1042, 1043].contains(baseTypeOID) ? "\(source) COLLATE \"C\"" : source }

    /// A bound value (`$n`) as the column's type without its length or precision (a cast to
    /// `varchar(3)` would cut 'abcdef' to the key 'abc', one to `numeric(5,1)` round 1.04 to 1.0,
    /// and so name another row); a boolean key, read as 1 or 0, through int4.
    func cast(_ placeholder: String) -> String {
        if kind == .boolean { return "CAST(CAST(\(placeholder) AS int4) AS boolean)" }
        return "CAST(\(placeholder) AS \(Self.unlimited(sqlType, baseTypeOID: baseTypeOID)))"
    }

    /// `type` without a length or precision: the base type for the length-limited ones (and
    /// domains over them), otherwise the name with any `(n)` or `(p,s)` removed.
    static func unlimited(_ type: String, baseTypeOID: Int64) -> String {
        switch baseTypeOID {
        case 1042: return "bpchar"
        case 1043: return "varchar"
        case 1560, 1562: return "varbit"
        case 1700: return "numeric"
        case 1083: return "time"
        case 1266: return "timetz"
        case 1114: return "timestamp"
        case 1184: return "timestamptz"
        case 1186: return "interval"
        default: return type.replacingOccurrences(of: #"\(\d+(,\s*\d+)?\)"#, with: "", options: .regularExpression)
        }
    }

    /// The select-list expression that reads `source` on the row under `t` as an `SQLValue`
    /// (what a `RETURNING` or a first batch reads the key with).
    var readSource: String { kind.selectExpression(source, typeOID: baseTypeOID) }

    /// The select-list expression that reads the column under `alias` as an `SQLValue`.
    func read(_ alias: String) -> String { kind.selectExpression("\(alias).\(name)", typeOID: baseTypeOID) }

    /// The same column under another name (a journal's `k0`, `n0`).
    func named(_ newName: String) -> PostgresIDColumn {
        PostgresIDColumn(name: newName, source: source, kind: kind, baseTypeOID: baseTypeOID, sqlType: sqlType)
    }

    /// The ID columns of `table`: its primary key, its `ctid`, or every column.
    static func of(_ table: PostgresTable) -> [PostgresIDColumn] {
        switch table.rowKey {
        case .primaryKey(let names):
            let columns = names.compactMap { table.column(named: $0) }
            return columns.enumerated().map { i, c in
                PostgresIDColumn(name: columns.count == 1 ? "key" : "k\(i)", source: "t.\(quoteIdentifier(c.name))", kind: c.kind,
                                 baseTypeOID: c.baseTypeOID, sqlType: c.declaredType)
            }
        case .ctid:
            // ctid is unique within one table only: a parent's rows and its inheritance children's
            // can share one, so the table's OID goes with it.
            return [PostgresIDColumn(name: "k0", source: "t.tableoid", kind: .integer, baseTypeOID: 26, sqlType: "oid"),
                    PostgresIDColumn(name: "k1", source: "t.ctid", kind: .text, baseTypeOID: 27, sqlType: "tid")]
        case .none:
            return table.columns.enumerated().map { i, c in
                PostgresIDColumn(name: "c\(i)", source: "t.\(quoteIdentifier(c.name))", kind: c.kind, baseTypeOID: c.baseTypeOID, sqlType: c.declaredType)
            }
        }
    }
}

extension [PostgresIDColumn] {
    /// The columns' sources on the row under `t`, comma-separated (`t."id"`, `t."a", t."b"`): a key tuple's inside.
    var sourceList: String { map(\.source).joined(separator: ", ") }
}

/// How a result's positions find their rows in its ID table.
enum PostgresIDLayout: Equatable {
    /// `pos bigint PRIMARY KEY`, numbered by `row_number()`: any ID columns. A fault is a range
    /// scan of the index.
    case numbered
    /// No position column: the rows are in a fresh heap in result order, every one the same size,
    /// so position `p` (0-based) is tuple `(p / perPage, p % perPage + 1)`, and a fault is a TID
    /// range scan. Filling it is the `CREATE TEMP TABLE … AS SELECT … ORDER BY …` alone: numbering
    /// and indexing cost another 4 s on 10M rows (7.1 s in all, against 3.0 s).
    case packed(perPage: Int)
}

/// The row IDs of one result on PostgreSQL, in result order, in a temp table of the result's own
/// session, filled by one `CREATE TEMP TABLE … USING heap AS <ID query>`. When every ID column has
/// a fixed width (integers, floats, dates and times, uuid, `ctid`), rows are addressed by their
/// place in the heap (``PostgresIDLayout/packed(perPage:)``, checked after every fill); otherwise a
/// `pos` column is numbered and indexed (``PostgresIDLayout/numbered``). The IDs never cross the
/// network; positions are 1-based in SQL and 0-based in Swift.
final class PostgresIDTable: IDStore {
    let session: PostgresSession
    let columns: [PostgresIDColumn]
    /// True when the columns identify a row (a key); false for a relation's values, which may
    /// repeat, so a refill keeps no anchor.
    let keyed: Bool
    private(set) var name: String
    private(set) var count = 0
    private(set) var fillSeconds = 0.0
    private(set) var layout = PostgresIDLayout.numbered
    private var nextName = 0
    /// True once the session has JIT compilation off: the planner has no statistics for the ID
    /// table, overestimates a fault's rows and compiled each one (4 ms of a 5 ms fault at 10M rows).
    private var jitOff = false

    /// The session's backend process, once asked (a cancel names it).
    private var backendPID: Int?
    /// Asks the server to cancel a backend's statement (see ``PostgresStore/cancelStatement(of:)``).
    let cancel: ((Int) -> Void)?
    /// Runs before a statement that may be cancelled is sent (the result's read ahead settles).
    var beforeWatching: (() -> Void)?
    /// Whether a fill may go in chunks by its ``IDQuery/chunking`` column, asked only when a
    /// progress handler waits (queries of the catalog): nil when the column is not unique over
    /// the rows read (a table with inheritance children, whose rows can share a key with the
    /// parent's: a chunk bound would skip one of them), else the planner's estimate of the rows
    /// when the query reads the whole table (`whole`).
    var chunkPlan: ((_ whole: Bool) throws -> ChunkPlan?)?

    struct ChunkPlan {
        var estimatedRows: Int?
    }

    /// Base types of a fixed width that never need TOAST: rows of only these are all one size.
    static let fixedWidthTypes: Set<Int64> = [16, 20, 21, 23, 26, 27, 700, 701, 790, 1082, 1083, 1114, 1184, 1186, 1266, 2950]

    /// The server's `server_version_num`: TID range scans came in 14, `USING heap` in 12.
    let serverVersion: Int

    init(session: PostgresSession, columns: [PostgresIDColumn], keyed: Bool, serverVersion: Int, cancel: ((Int) -> Void)? = nil) {
        self.session = session
        self.serverVersion = serverVersion
        self.cancel = cancel
        self.columns = columns
        self.keyed = keyed
        self.name = ""
        self.name = makeName()
    }

    private func makeName() -> String {
        nextName += 1
        return "bs_ids_\(nextName)"
    }

    var location: String {
        switch layout {
        case .numbered: return "PostgreSQL temp table \(name) (numbered)"
        case .packed(let perPage): return "PostgreSQL temp table \(name) (by tuple, \(perPage) a page)"
        }
    }
    var qualifiedName: String { "pg_temp.\(quoteIdentifier(name))" }

    /// True when rows of these columns can be addressed by their place in the heap.
    /// (A server before 14 has no TID range scan: a fault would read the whole table.)
    var packable: Bool {
        serverVersion >= 140_000 && keyed && !columns.isEmpty && columns.allSatisfy { Self.fixedWidthTypes.contains($0.baseTypeOID) }
    }

    /// True once a fill began: the table may exist (a source that only read first rows made none).
    private(set) var wasFilled = false

    func fill(_ query: IDQuery, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        wasFilled = true
        (count, layout) = try build(name, query, progress: progress)
        analyzed = false
    }

    /// True once the table's statistics are taken (``analyzeOnce()``), until it is filled again.
    private var analyzed = false

    /// Takes the table's statistics, once per fill, before the first edit or count joined to it.
    /// Autovacuum never analyses a temp table: without statistics the planner takes it for a few
    /// hundred rows, and a delete, update or count joined to a million of its keys is planned as
    /// for those (a 10M-row delete's count took 26.8 s where count(*) takes 1.2 s). ANALYZE reads
    /// a sample of at most 30,000 rows, whatever the size; an open that is only browsed never
    /// pays for it.
    func analyzeOnce() throws {
        guard !analyzed else { return }
        try session.execute("ANALYZE \(qualifiedName)")
        analyzed = true
    }

    func fillSQL(_ query: IDQuery) -> String { createSQL(name, query, packed: packable) }

    private func createSQL(_ name: String, _ query: IDQuery, packed: Bool) -> String {
        // A heap named outright: the tuple arithmetic needs one, whatever default_table_access_method says.
        if packed { return "CREATE TEMP TABLE \(quoteIdentifier(name)) USING heap AS \(query.select)" }
        // row_number() over the ordered subquery numbers rows in the order the sort yields them.
        return "CREATE TEMP TABLE \(quoteIdentifier(name)) AS SELECT row_number() OVER () AS pos, s.* FROM (\(query.select)) AS s"
    }

    /// Creates and fills the table, then checks its layout (packed) or indexes `pos` (numbered);
    /// on failure no table is left.
    private func build(_ name: String, _ query: IDQuery, progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> (Int, PostgresIDLayout) {
        let started = DispatchTime.now().uptimeNanoseconds
        let table = "pg_temp.\(quoteIdentifier(name))"
        func create(packed: Bool) throws -> Int {
            let create = createSQL(name, query, packed: packed)
            return try watching(progress) { watch, cancel in
                try session.execute(create, query.arguments, every: 0.05, watch: watch, cancel: cancel) ?? 0
            } onLateCancel: {
                // A cancel that came as the statement ended: the table exists; drop it.
                _ = try? session.execute("DROP TABLE IF EXISTS \(table)")
            } ?? session.execute(create, query.arguments) ?? 0
        }
        var n: Int
        if packable, progress != nil, let chunking = query.chunking, let plan = try chunkPlan?(chunking.whole) {
            n = try createInChunks(name, query, column: chunking.column, estimatedRows: plan.estimatedRows, progress: progress)
        } else {
            n = try create(packed: packable)
        }
        var layout = PostgresIDLayout.numbered
        do {
            if packable, let perPage = try packedLayout(table, count: n) {
                layout = .packed(perPage: perPage)
            } else {
                if packable {
                    // Not laid out as the arithmetic needs (never seen): number it after all.
                    try session.execute("DROP TABLE \(table)")
                    n = try create(packed: false)
                }
                try session.execute("ALTER TABLE \(table) ADD PRIMARY KEY (pos)")
            }
            if !jitOff {
                try session.execute("SET jit = off")
                jitOff = true
            }
        } catch {
            _ = try? session.execute("DROP TABLE IF EXISTS \(table)")
            throw error
        }
        fillSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return (n, layout)
    }

    /// Rows in the `n`th chunk (from 0) of ``createInChunks(_:_:column:estimatedRows:progress:)``:
    /// 100,000, doubling to at most 1,000,000, so the first count comes at once and a large
    /// fetch takes few statements (at 10M rows, 13, each a fraction of a second).
    static func chunkRows(_ n: Int) -> Int { min(1_000_000, 100_000 << min(n, 4)) }

    /// Creates and fills the packed table `name` from `query` in chunks by its key `column`, so
    /// that progress counts the rows in so far (one `CREATE TABLE … AS` says nothing until it
    /// ends): the empty table, then `INSERT … SELECT * FROM (<query>) AS s WHERE s.<column> >
    /// <last> LIMIT <chunk>` until a chunk comes short (the last key read from the last page), all in one REPEATABLE READ transaction, so
    /// every chunk reads the same snapshot, as one statement would. On failure or cancel the
    /// transaction rolls back and no table is left.
    /// - Returns: the rows filled.
    private func createInChunks(_ name: String, _ query: IDQuery, column: String, estimatedRows: Int?,
                                progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int {
        let table = "pg_temp.\(quoteIdentifier(name))"
        let c = quoteIdentifier(column)
        let source = "SELECT * FROM (\(query.select)) AS s"
        let next = query.arguments.count + 1
        try session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        var total = 0
        do {
            try session.execute("CREATE TEMP TABLE \(quoteIdentifier(name)) USING heap AS \(source) WITH NO DATA", query.arguments)
            var last: SQLValue?
            var chunk = 0
            while true {
                let limit = Self.chunkRows(chunk)
                chunk += 1
                let bound = last.map { _ in " WHERE s.\(c) > $\(next)" } ?? ""
                let sql = "INSERT INTO \(table) \(source)\(bound) LIMIT \(limit)"
                let arguments = query.arguments + (last.map { [$0] } ?? [])
                let added = try watching(progress, rows: (total, estimatedRows)) { watch, cancel in
                    try session.execute(sql, arguments, every: 0.05, watch: watch, cancel: cancel) ?? 0
                } ?? session.execute(sql, arguments) ?? 0
                total += added
                guard added == limit else { break }
                // The last key in is the largest, on the last page: one page read (a RETURNING
                // of every key made each chunk twice as slow).
                // (The page is asked first: a bound computed in the statement is volatile, and
                // made it a scan of the whole table calling pg_relation_size for every row.)
                let pages = try session.query("SELECT pg_relation_size('\(table)') / current_setting('block_size')::int8").first?.first?.integerValue ?? 1
                var max = try session.query("SELECT max(\(c)) FROM \(table) WHERE ctid >= '(\(Swift.max(pages - 1, 0)),0)'").first?.first ?? .null
                if max == .null { max = try session.query("SELECT max(\(c)) FROM \(table)").first?.first ?? .null }
                guard max != .null else { throw BatchStoreError(.invalidQuery, "the ID table \(name) holds rows but no largest key") }
                last = max
            }
            try session.execute("COMMIT")
        } catch {
            _ = try? session.execute("ROLLBACK")
            throw error
        }
        return total
    }

    /// The rows per page of a freshly filled table of `count` rows, when its pages hold them in
    /// order, `perPage` on each but the last: nil when any check fails. A fresh heap (no deletes,
    /// no updates) numbers each page's tuples from 1 without gaps, so the checks prove it whatever
    /// the tuples' sizes (a NULL key in an inheritance child makes one row shorter):
    /// - page 0 holds `perPage`, and no page has a tuple at offset `perPage + 1`: none holds more;
    /// - no page after the last one by the arithmetic holds any, and that last page holds the
    ///   rest: the pages between hold `perPage` each, as together they hold that many times.
    /// Four TID scans; the third looks up one tuple per page (54k pages at 10M rows), through a
    /// `format()` call for each: 0.2 s at 10M rows in the server's log, about 2% of the open.
    private func packedLayout(_ table: String, count: Int) throws -> Int? {
        func rows(_ condition: String) throws -> Int {
            Int(try session.query("SELECT count(*) FROM \(table) WHERE \(condition)").first?.first?.integerValue ?? -1)
        }
        guard count > 0 else { return 1 }
        let perPage = try rows("ctid < '(1,0)'")
        guard perPage > 0 else { return nil }
        let last = (count - 1) / perPage
        let beyond = "ctid = ANY (ARRAY(SELECT format('(%s,%s)', p, \(perPage + 1))::tid FROM generate_series(0, \(last)) AS p))"
        guard try rows(beyond) == 0, try rows("ctid >= '(\(last + 1),0)'") == 0, try rows("ctid >= '(\(last),0)'") == count - last * perPage else { return nil }
        return perPage
    }

    /// Runs `body` with a watch that reports the seconds so far (and `rows`: the rows in so far
    /// and the estimate of all) to `progress` and a cancel that asks the server to cancel this
    /// session's statement; nil (without running `body`) when
    /// there is no `progress` or no way to cancel. A cancel makes the call throw `.cancelled`,
    /// also when the statement had ended as it came (after `onLateCancel`, which undoes it).
    func watching<T>(_ progress: ((IDFetchProgress) -> IDFetchDecision)?, rows: (sofar: Int, estimated: Int?) = (0, nil),
                     _ body: (_ watch: (Double) -> Bool, _ cancel: () -> Void) throws -> T,
                     onLateCancel: () -> Void = {}) throws -> T? {
        guard let progress, let cancel else { return nil }
        beforeWatching?()
        let pid = try backendPID ?? session.backendPID()
        backendPID = pid
        var cancelled = false
        let value: T
        do {
            value = try body({ seconds in
                progress(IDFetchProgress(rowsScanned: rows.sofar, estimatedRows: rows.estimated, elapsed: seconds)) == .proceed
            }, {
                cancelled = true
                cancel(pid)
            })
        } catch let error as BatchStoreError where error.code == .cancelled && cancelled {
            throw BatchStoreError(.cancelled, "the fetch was cancelled")
        }
        if cancelled {
            onLateCancel()
            throw BatchStoreError(.cancelled, "the fetch was cancelled")
        }
        return value
    }

    func refill(_ query: IDQuery, anchors: [Int]) throws -> Int? {
        let keys = keyed ? try anchors.compactMap { try row(at: $0) } : []
        let fresh = makeName()
        let (newCount, newLayout) = try build(fresh, query)
        try session.execute("DROP TABLE \(qualifiedName)")
        try session.execute("ALTER TABLE pg_temp.\(quoteIdentifier(fresh)) RENAME TO \(quoteIdentifier(name))")
        count = newCount
        layout = newLayout
        analyzed = false
        for key in keys {
            if let position = try position(of: key) { return position }
        }
        return nil
    }

    // MARK: Positions in SQL

    /// The 1-based position of the ID row under `alias`, as a `bigint` expression.
    func positionSQL(_ alias: String) -> String {
        switch layout {
        case .numbered: return "\(alias).pos"
        case .packed(let perPage):
            // (page, offset) through `point`, the one cast that takes a tid's text apart.
            let point = "(\(alias).ctid::text::point)"
            return "(\(point)[0]::bigint * \(perPage) + \(point)[1]::bigint)"
        }
    }

    /// The ID rows under `alias` at 0-based positions `first ..< end`, with placeholders from `$n`
    /// and their values.
    ///
    /// `typed`: the form a prepared statement runs (a fault's). Its placeholders say their types
    /// (`$1::int8`, `$1::text`), and a packed table's range is the list of its tuples,
    /// `ctid = ANY ($1::text::tid[])`, not two bounds. The planner then keeps the statement's
    /// generic plan: for a range between two unknown bounds it guesses 0.5% of the table's
    /// rows (52,000 at 10M), costs that plan far above a custom one for 100 rows, and so plans
    /// every fault again when it is bound (0.25 ms of a 1.2 ms fault at 10M rows, in the server's
    /// log). For a list it guesses 10 rows, and after its first five custom plans keeps the
    /// generic one, the same TID scans. (A numbered table's `pos BETWEEN` is still planned each
    /// time: an index scan of a list would descend the index once per row.)
    func rangeSQL(_ alias: String, _ first: Int, _ end: Int, from n: Int = 1, typed: Bool = false) -> (sql: String, arguments: [SQLValue]) {
        switch layout {
        case .numbered:
            let (a, b) = typed ? ("$\(n)::int8", "$\(n + 1)::int8") : ("$\(n)", "$\(n + 1)")
            return ("\(alias).pos BETWEEN \(a) AND \(b)", [.integer(Int64(first + 1)), .integer(Int64(end))])
        case .packed where typed:
            return ("\(alias).ctid = ANY (CAST($\(n)::text AS tid[]))", [.text(tidList(first, end))])
        case .packed:
            return ("\(alias).ctid >= CAST($\(n) AS tid) AND \(alias).ctid < CAST($\(n + 1) AS tid)", [.text(tid(first)), .text(tid(end))])
        }
    }

    /// The tuples of 0-based positions `first ..< end` in a packed table, as a `tid[]` literal
    /// (`{"(0,1)","(0,2)"}`).
    func tidList(_ first: Int, _ end: Int) -> String {
        guard case .packed(let perPage) = layout, first < end else { return "{}" }
        var list = "{"
        list.reserveCapacity((end - first) * 14 + 2)
        for position in first..<end {
            if position > first { list += "," }
            list += "\"(\(position / perPage),\(position % perPage + 1))\""
        }
        return list + "}"
    }

    /// Result order over the ID rows under `alias`.
    func orderSQL(_ alias: String, backwards: Bool = false) -> String {
        switch layout {
        case .numbered: return "\(alias).pos\(backwards ? " DESC" : "")"
        case .packed: return "\(alias).ctid\(backwards ? " DESC" : "")"
        }
    }

    /// The tuple of 0-based `position` in a packed table (one past the last, for an end).
    func tid(_ position: Int) -> String {
        guard case .packed(let perPage) = layout else { return "(0,0)" }
        return "(\(position / perPage),\(position % perPage + 1))"
    }

    // MARK: Reading

    func row(at position: Int) throws -> [SQLValue]? {
        guard position >= 0 && position < count else { return nil }
        let select = columns.map { $0.read("ids") }.joined(separator: ", ")
        let (condition, arguments) = rangeSQL("ids", position, position + 1)
        return try session.query("SELECT \(select) FROM \(qualifiedName) AS ids WHERE \(condition)", arguments).first
    }

    /// `CAST($n AS <type>)` for each column, numbered from `first`.
    private func placeholders(from first: Int) -> String {
        "(" + columns.enumerated().map { $1.cast("$\(first + $0)") }.joined(separator: ", ") + ")"
    }

    /// The first position whose ID columns are `values`.
    func position(of values: [SQLValue]) throws -> Int? {
        let match = columns.enumerated().map { "\($1.name) IS NOT DISTINCT FROM \($1.cast("$\($0 + 1)"))" }.joined(separator: " AND ")
        let rows = try session.query("SELECT \(positionSQL("ids")) FROM \(qualifiedName) AS ids WHERE \(match) ORDER BY \(orderSQL("ids")) LIMIT 1", values)
        return rows.first?.first?.integerValue.map { Int($0) - 1 }
    }
    func contains(_ rows: [[SQLValue]]) throws -> Set<[SQLValue]> {
        var found = Set<[SQLValue]>()
        let select = columns.map { $0.read("ids") }.joined(separator: ", ")
        let tuple = "(" + columns.map { "ids.\($0.name)" }.joined(separator: ", ") + ")"
        var offset = 0
        while offset < rows.count {
            let chunk = Array(rows[offset..<min(rows.count, offset + 500)])
            offset += chunk.count
            let list = chunk.indices.map { placeholders(from: 1 + $0 * columns.count) }.joined(separator: ", ")
            for row in try session.query("SELECT \(select) FROM \(qualifiedName) AS ids WHERE \(tuple) IN (\(list))", chunk.flatMap { $0 }) {
                found.insert(row)
            }
        }
        return found
    }

    /// The position the first of `queries` to find one selects: they are windows of the table in
    /// search order (see ``PostgresResultSource/searchQueries(_:after:backwards:)``), so the first
    /// answer is the nearest. `progress` is called every 50 ms, and between windows; `.cancel`
    /// cancels on the server.
    /// The comment that opens a search's far query (``PostgresResultSource/searchQueries(_:after:backwards:)``):
    /// it runs with hash joins allowed and the ID table analysed.
    static let farSearchMarker = "/* bs: far search */"

    func nearest(_ queries: [IDQuery], backwards: Bool, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int? {
        let started = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        // Each window must drive the join, a key lookup per ID row, and stop at its first match in
        // order; with no statistics on the ID table the planner would hash the whole table for
        // it (measured: a seq scan of 150k rows for a 4,096-row window).
        try session.execute("SET enable_hashjoin = off")
        try session.execute("SET enable_mergejoin = off")
        defer {
            _ = try? session.execute("RESET enable_hashjoin")
            _ = try? session.execute("RESET enable_mergejoin")
        }
        for query in queries {
            if let progress, progress(IDFetchProgress(rowsScanned: 0, estimatedRows: nil, elapsed: elapsed())) == .cancel {
                throw BatchStoreError(.cancelled, "the search was cancelled")
            }
            if query.select.hasPrefix(Self.farSearchMarker) {
                // The far search hashes the matches: the planner needs the ID table's size and
                // its hash joins back.
                try analyzeOnce()
                try session.execute("RESET enable_hashjoin")
                try session.execute("RESET enable_mergejoin")
            }
            let rows = try watching(progress.map { progress in { p in progress(IDFetchProgress(rowsScanned: 0, estimatedRows: nil, elapsed: elapsed())) } }) {
                watch, cancel in try session.query(query.select, query.arguments, every: 0.05, watch: watch, cancel: cancel)
            } ?? session.query(query.select, query.arguments)
            if let pos = rows.first?.first?.integerValue { return Int(pos) - 1 }
        }
        return nil
    }
}

/// A result over one PostgreSQL table: its ID table is in the result's own session, and a batch
/// is one join by position range,
/// `SELECT ids.pos, ids.key, t.<columns> FROM pg_temp."bs_ids_N" AS ids JOIN "s"."T" AS t
/// ON t."id" = ids.key WHERE ids.pos BETWEEN $1 AND $2` (a nested loop: an index range scan of
/// `pos`, then a primary-key lookup, or a TID lookup by `ctid`, per row).
///
/// Opened through a `PostgresContext`, its objects are that context's (its identity map, see
/// ``objects(from:positions:keysInline:)``); opened on the store alone, they have no context and
/// hold their values. Edits of the result run in its session,
/// limited to the rows of its ID table (`PostgresResultSource: ResultEditing`).
final class PostgresResultSource: ResultSource {
    let store: PostgresStore
    let table: PostgresTable
    let entity: Entity
    let idTable: PostgresIDTable
    /// Keeps the session open while the result, or an undo journal or change table made in it, lives.
    let lease: PostgresSessionLease
    /// The context that opened the result (its undo stack records edits made through it).
    weak var context: PostgresContext? {
        didSet { if context != nil { openedThroughContext = true } }
    }
    /// True when a context opened the result (so a nil ``context`` means it is gone).
    private var openedThroughContext = false
    /// Shared by the objects that no context holds (a result opened without a context, rows of
    /// a table without a primary key): its owner says why they take no unsaved changes.
    private let link = ContextLink(nil)
    private let uncontained: UncontainedRows
    /// True once the session has the `pg_temp` text functions (``PostgresTextFunctions``).
    private var hasTextFunctions = false
    /// Frequency tables made in the session so far (their names are numbered).
    private var frequencyTables = 0

    /// Creates the `pg_temp` text functions in the session before the first statement that calls
    /// them (most fetches call none, and building their tables costs a fraction of a second).
    func prepare(_ sql: String) throws {
        guard !hasTextFunctions, PostgresTextFunctions.areUsed(in: sql) else { return }
        try PostgresTextFunctions.install(in: session)
        hasTextFunctions = true
    }

    convenience init(store: PostgresStore, table: PostgresTable, entity: Entity, session: PostgresSession) {
        self.init(store: store, table: table, entity: entity, lease: PostgresSessionLease(session))
    }

    /// A source on a session others hold too (a context's own, for ``firstRows(_:progress:)``
    /// alone): it closes when the last holder lets go.
    init(store: PostgresStore, table: PostgresTable, entity: Entity, lease: PostgresSessionLease) {
        let session = lease.session
        self.store = store
        self.table = table
        self.entity = entity
        self.faultsAsRecords = store.faultsAsRecords
        self.lease = lease
        self.idTable = PostgresIDTable(session: session, columns: PostgresIDColumn.of(table), keyed: table.rowKey != .none,
                                       serverVersion: store.serverVersionNumber, cancel: { [weak store] pid in store?.cancelStatement(of: pid) })
        uncontained = UncontainedRows(table: table)
        idTable.beforeWatching = { [weak self] in self?.settleReadAhead() }
        idTable.chunkPlan = { [weak self] whole in
            guard let self, try !PostgresContext.hasInheritanceChildren(self.table, self.session) else { return nil }
            let estimate = whole
                ? try self.session.query("SELECT reltuples::int8 FROM pg_catalog.pg_class WHERE oid = \(self.table.oid) AND reltuples >= 0").first?.first?.integerValue
                : nil
            return PostgresIDTable.ChunkPlan(estimatedRows: estimate.map(Int.init))
        }
        link.owner = uncontained
    }

    deinit {
        link.owner = nil
        sweep?.stop()
        // The ID table goes now; the session stays open while an undo journal made in it does.
        if idTable.wasFilled { idTable.session.executeDetached("DROP TABLE IF EXISTS \(idTable.qualifiedName)") }
    }

    var ids: any IDStore { idTable }
    var session: PostgresSession { idTable.session }
    var isAddressable: Bool { idTable.keyed }
    /// The registered objects of the context that opened the result (0 without one).
    var objectsAlive: Int { context?.registeredObjectCount ?? 0 }
    var packsValues: Bool { false }

    func idQuery(_ request: FetchRequest) throws -> IDQuery {
        let query = try idQuery(request, select: nil)
        // What a sweep's stream reads (a refill comes through a refresh, which stops a stream).
        fetchedRequest = request
        return query
    }

    /// The request of the last ID fetch.
    private var fetchedRequest: FetchRequest?

    /// The ID query: `select` (by default the ID columns, named as the ID table names them) from
    /// the rows `request` matches, in its order, within its limit and offset.
    ///
    /// `readAfterLimit`: for a sorted request with a limit, the sort and limit run on the table's
    /// own columns in a subquery and `select` reads its rows after them, so the text casts of the
    /// select list are computed for the rows kept, not for every row sorted (a 10M-row top-N
    /// computed them for every row: 5.2 s where the plain `ORDER BY … LIMIT` takes 1.2 s).
    private func idQuery(_ request: FetchRequest, select selectList: String?, readAfterLimit: Bool = false) throws -> IDQuery {
        guard request.fetchLimit >= 0, request.fetchOffset >= 0, request.fetchBatchSize >= 0 else {
            throw BatchStoreError(.invalidArgument, "fetchLimit, fetchOffset and fetchBatchSize must not be negative")
        }
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
        var order = try request.effectiveSortDescriptors.map { try builder.order($0) }
        if isAddressable { order += idTable.columns.map { "\($0.orderSQL) \(request.keyDirection)" } }
        let select = selectList ?? (idTable.columns.map { "\($0.source) AS \($0.name)" } + (locatesRows ? Self.locatorColumns : []))
            .joined(separator: ", ")
        var limit = ""
        if request.fetchLimit > 0 { limit += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { limit += " OFFSET \(request.fetchOffset)" }
        let ordered = (order.isEmpty ? "" : " ORDER BY " + order.joined(separator: ", ")) + limit
        let sql: String
        if readAfterLimit, !order.isEmpty, request.fetchLimit > 0 {
            // The subquery is named t, as the table is, so the select list reads it unchanged;
            // the system columns it reads (ctid, a key-less table's key; tableoid, the partition
            // a row is in) are carried out under their own names.
            let read = idTable.columns.map(\.source) + [select]
            let system = ["ctid", "tableoid"].filter { name in read.contains { $0.contains("t.\(name)") } }.map { ", t.\($0) AS \($0)" }.joined()
            // A scan of a subquery keeps its rows' order.
            sql = "SELECT \(select.isEmpty ? "NULL AS c0" : select) FROM (SELECT t.*\(system) FROM \(builder.fromClause)\(condition)\(ordered)) AS t"
        } else {
            sql = "SELECT \(select.isEmpty ? "NULL AS c0" : select) FROM \(builder.fromClause)\(condition)" + ordered
        }
        try prepare(sql)
        var query = IDQuery(select: sql, arguments: builder.arguments)
        // Ordered by an integer key alone: a fill may read it in chunks by key, counting its rows.
        if selectList == nil, request.effectiveSortDescriptors.isEmpty, request.fetchLimit == 0, request.fetchOffset == 0,
           !request.reversesOrder, isAddressable, idTable.columns.count == 1, let key = idTable.columns.first,
           [20, 21, 23].contains(key.baseTypeOID) {
            query.chunking = (key.name, request.predicate == nil)
        }
        return query
    }

    /// The row's columns under `t`, each read as its kind.
    private var columnList: String { table.columns.map { $0.selectExpression(alias: "t") }.joined(separator: ", ") }

    /// The statement a fault runs (its placeholders bound as ``PostgresIDTable/rangeSQL(_:_:_:from:typed:)`` binds them, typed),
    /// made once per layout of the ID table (a refill may change it).
    var faultSQL: String { faultStatements.rows }

    /// ``faultSQL`` and ``recordsFaultSQL``, made once per layout of the ID table.
    private var faultStatements: (rows: String, records: String) {
        if let cached = cachedFaultSQL, cached.layout == idTable.layout { return (cached.rows, cached.records) }
        let sql = rowsSQL(ids: "\(idTable.qualifiedName) AS ids", tail: " WHERE " + idTable.rangeSQL("ids", 0, 0, typed: true).sql)
        let records = "SELECT array_agg(ROW(f.*)) FROM (\(sql)) AS f"
        cachedFaultSQL = (idTable.layout, sql, records)
        return (sql, records)
    }
    private var cachedFaultSQL: (layout: PostgresIDLayout, rows: String, records: String)?

    /// How often the server has run the fault statement prepared on this result's session by
    /// its generic plan and by custom ones (`pg_prepared_statements`); nil before the first
    /// fault. For the tests: faults over a packed ID table must keep the generic plan.
    package func faultPlans() throws -> (generic: Int, custom: Int)? {
        settleReadAhead()
        guard let row = try session.query("SELECT generic_plans, custom_plans FROM pg_catalog.pg_prepared_statements WHERE statement = $1",
                                          [.text(faultsAsRecords ? recordsFaultSQL : faultSQL)]).first,
              row.count == 2, let generic = row[0].integerValue, let custom = row[1].integerValue else { return nil }
        return (Int(generic), Int(custom))
    }

    /// True when the ID table also keeps each row's place (``locatorColumns``): a plain table with
    /// a primary key and columns. A fault then reads each row where it was, a heap page, instead of
    /// descending the key's index first: 4 pages read per row became 1, 6.4 ms for 100 rows at
    /// random positions of 10M became 0.7 ms.
    var locatesRows: Bool {
        guard table.kind == .table, case .primaryKey = table.rowKey, !table.columns.isEmpty else { return false }
        return true
    }

    /// The row's place as the ID fetch records it: its tuple. (Not its table: an inheritance
    /// child's tuple can have a parent row's number, but the key check then finds the row the
    /// key names in the parent and its children, as a lookup by key would.)
    static let locatorColumns = ["t.ctid AS loc_tid"]

    /// Rows as a fault reads them (the position, the key, the columns) from the ID rows `ids` names.
    ///
    /// With ``locatesRows``, each row is read by its place, checked against its key, else (it was
    /// updated or moved since the fetch) by its key:
    /// `CROSS JOIN LATERAL (SELECT … FROM T AS t WHERE t.ctid = ids.loc_tid AND t."id" = ids.key
    /// UNION ALL SELECT … FROM T AS t WHERE t."id" = ids.key LIMIT 1)`: the
    /// second branch runs only when the first finds nothing, so a row gone reads as gone, and a
    /// tuple reused by another row is never taken for it.
    private func rowsSQL(ids: String, tail: String) -> String {
        let keys = idTable.columns.map { $0.read("ids") }.joined(separator: ", ")
        let pos = idTable.positionSQL("ids")
        guard isAddressable else {
            let values = idTable.columns.map { $0.read("ids") }
            return "SELECT \(pos)\(values.isEmpty ? "" : ", " + values.joined(separator: ", ")) FROM \(ids)\(tail)"
        }
        let on = idTable.columns.map { "\($0.source) = ids.\($0.name)" }.joined(separator: " AND ")
        let columns = columnList
        if locatesRows {
            // The key's values are read from the row's own columns (one cell a row fewer to decode).
            let idKeys = keyIndexes == nil ? keys + ", " : ""
            let row = "SELECT \(columns) FROM \(table.qualifiedSQL) AS t WHERE "
            let located = row + "t.ctid = ids.loc_tid AND \(on) UNION ALL " + row + on + " LIMIT 1"
            return "SELECT \(pos), \(idKeys)r.* FROM \(ids) CROSS JOIN LATERAL (\(located)) AS r\(tail)"
        }
        return "SELECT \(pos), \(keys)\(columns.isEmpty ? "" : ", " + columns) FROM \(ids) JOIN \(table.qualifiedSQL) AS t ON \(on)\(tail)"
    }

    /// Every row `request` matches, every column read as its kind, in its order (the key breaking
    /// ties, as the ID fetch orders them), within its limit and offset: one statement, no ID table.
    func rowQuery(_ request: FetchRequest) throws -> IDQuery {
        let columns = table.columns.map { $0.selectExpression(alias: "t") }
        return try idQuery(request, select: columns.isEmpty ? "NULL AS c0" : columns.joined(separator: ", "))
    }

    /// The first `fetchBatchSize` rows of `request` (fewer with a smaller limit), before any ID
    /// table exists: the ID query with a LIMIT and every column in its select list, the same
    /// statement as a plain `SELECT … ORDER BY … LIMIT` (numbering it in SQL and joining back cost
    /// a third more on 10M rows); positions are counted here.
    /// `progress` is called as during the ID fetch (a sort of the whole table takes a while even
    /// for a LIMIT), and `.cancel` cancels the query on the server: the call throws `.cancelled`.
    func firstRows(_ request: FetchRequest, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> [ManagedObject] {
        var first = request
        first.fetchLimit = min(request.fetchBatchSize, request.fetchLimit > 0 ? request.fetchLimit : Int.max)
        // A primary key's values are read from the row's own columns: selecting a column twice
        // makes every scanned row a projection (0.70 s instead of 0.34 s at 10M rows).
        let keys = keyIndexes != nil ? [] : idTable.columns.map(\.readSource)
        let columns = isAddressable ? keys + table.columns.map { $0.selectExpression(alias: "t") } : keys
        let query = try idQuery(first, select: columns.isEmpty ? "NULL AS c0" : columns.joined(separator: ", "), readAfterLimit: true)
        let rows = try idTable.watching(progress) { watch, cancel in
            try session.query(query.select, query.arguments, every: 0.05, watch: watch, cancel: cancel)
        } ?? session.query(query.select, query.arguments)
        let numbered = rows.enumerated().map { i, row in [SQLValue.integer(Int64(i + 1))] + (columns.isEmpty ? [] : row) }
        return objects(from: numbered, positions: 0..<first.fetchLimit, keysInline: keyIndexes != nil).compactMap { $0 }
    }

    /// One join by position range: an index range scan of `pos`, or a TID scan of a packed table's
    /// tuples in the range; then a primary-key lookup (or a TID lookup by `ctid`) per row.
    /// As it runs: its rows sent as one `record[]` cell while ``faultsAsRecords``.
    func faultStatement(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue]) {
        let call = try faultCall(positions)
        return (call.sql, call.arguments)
    }

    /// ``faultStatement(_:)``, and whether it sends its rows as one `record[]` cell.
    private func faultCall(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue], records: Bool) {
        let arguments = idTable.rangeSQL("ids", positions.lowerBound, positions.upperBound, typed: true).arguments
        let statements = faultStatements
        return faultsAsRecords ? (statements.records, arguments, true) : (statements.rows, arguments, false)
    }

    /// ``faultSQL`` with its rows sent as one cell, a binary `record[]` (``PostgresRecordArray``):
    /// postgres-nio's work for each row it receives was most of the client's part of a fault.
    var recordsFaultSQL: String { faultStatements.records }

    /// True while faults read their rows as one `record[]` cell (``recordsFaultSQL``); false from
    /// the first that could not (``readsAsRows(after:)``) on, for the life of the result.
    private(set) var faultsAsRecords: Bool

    /// True when a fault that read its rows as one `record[]` cell failed in a way that reading
    /// them as rows would not: a field this client reads only as rows (a domain over a type read
    /// in binary: a record names the domain where a row's description names its base type), or
    /// an array too large for the server (over 1 GB: `54000`; "invalid memory alloc request
    /// size", `XX000` with those words; out of memory, `53200`). Any other error (a connection
    /// gone, a table dropped) is the fault's own.
    static func readsAsRows(after error: any Error) -> Bool {
        if error is PostgresRecordArray.Unreadable { return true }
        guard let error = error as? BatchStoreError, case .postgres(let state) = error.code else { return false }
        return state == "54000" || state == "53200" || (state == "XX000" && error.message.contains("invalid memory alloc request size"))
    }

    /// The largest record array a fault reads before the result's faults turn to rows (4 MB):
    /// the server builds the whole array in its memory before it sends it, where rows are sent
    /// as they are read; and for rows of kilobytes, postgres-nio's work a row no longer counts.
    static let recordsCellLimit = 4 << 20

    /// The rows of a fault's statement; one sent as records that ``readsAsRows(after:)`` is sent
    /// again as rows (and so are the result's faults from then on, as after an array larger
    /// than ``recordsCellLimit``).
    private func faultRows(_ pending: PendingRows, _ positions: Range<Int>) throws -> [[SQLValue]] {
        do {
            let rows = try session.rows(of: pending)
            if pending.records, pending.recordBytes > Self.recordsCellLimit { faultsAsRecords = false }
            return rows
        } catch where pending.records && Self.readsAsRows(after: error) {
            faultsAsRecords = false
            // A batch read ahead was asked for as records too: dropped, as its rows come.
            sentAhead = nil
            let (sql, arguments, _) = try faultCall(positions)
            let again = session.sendPrepared(sql, arguments)
            // A stream started for this sweep follows this statement now (not an edit).
            sweep?.serial = session.statementsSent
            return try session.rows(of: again)
        }
    }

    /// Reads the batch at `positions`. In a sweep (this batch follows the one faulted before), the
    /// next batch's statement is sent before this one's rows are read, so the server reads it
    /// while these are made into objects. It is used only when it is the next batch asked for,
    /// within half a second, and nothing else was sent on the session after it (an edit, a
    /// refill) nor was it discarded (a merge, a refresh: ``discardReadAhead()``); else it is dropped.
    func fault(_ positions: Range<Int>) throws -> FaultedBatch { try fault(positions, iterating: false) }

    /// ``fault(_:)``; in an iteration that has read ``sweepStreamAfter`` batches in a row, the
    /// rest of the result is then read by one statement (`PostgresSweepStream`), each batch of it
    /// checked against the ID table (see ``streamed(_:from:)``).
    func fault(_ positions: Range<Int>, iterating: Bool) throws -> FaultedBatch {
        if let sweep {
            if iterating, let batch = streamed(positions, from: sweep) {
                lastFaultEnd = positions.upperBound
                return batch
            }
            stopSweep()
        }
        iterationRun = iterating ? (lastFaultEnd == positions.lowerBound ? iterationRun + 1 : 1) : 0
        if iterationRun > Self.sweepStreamAfter {
            startSweep(at: positions.upperBound)
        }
        let (sql, arguments, records) = try faultCall(positions)
        let pending: PendingRows
        let now = DispatchTime.now().uptimeNanoseconds
        if let ahead = sentAhead, ahead.positions == positions, ahead.sql == sql, ahead.rows.serial == session.statementsSent,
           now - ahead.sentAt < Self.readAheadLife {
            pending = ahead.rows
        } else {
            pending = session.sendPrepared(sql, arguments, records: records)
        }
        sentAhead = nil
        if sweep == nil, lastFaultEnd == positions.lowerBound, positions.upperBound < idTable.count {
            let next = positions.upperBound..<min(idTable.count, positions.upperBound + positions.count)
            let (nextSQL, nextArguments, nextRecords) = try faultCall(next)
            sentAhead = (next, nextSQL, session.sendPrepared(nextSQL, nextArguments, records: nextRecords), DispatchTime.now().uptimeNanoseconds)
        }
        lastFaultEnd = positions.upperBound
        // A stream started for this sweep follows this batch's statement, its own.
        sweep?.serial = session.statementsSent
        return FaultedBatch(objects: objects(from: try faultRows(pending, positions), positions: positions, keysInline: locatesRows && keyIndexes != nil))
    }

    /// How long a batch read ahead may wait for its fault (a sweep asks for it within
    /// milliseconds; a reader who pauses gets the rows as they are when the fault comes).
    static let readAheadLife: UInt64 = 500_000_000

    /// Forgets the batch read ahead, and a sweep's stream; rows of either, if still coming, are
    /// dropped as they arrive.
    func discardReadAhead() {
        sentAhead = nil
        stopSweep()
    }

    /// Waits until the batch read ahead, if any, has come, and forgets it: what a statement that
    /// Esc may cancel does first, so that the cancel request cannot reach the read ahead instead.
    /// (A sweep's stream is on a connection of its own, out of a cancel's reach; it stops too.)
    func settleReadAhead() {
        // (The keys a sweep read ahead are a statement on this session too: stopSweep waits for them.)
        stopSweep()
        guard let ahead = sentAhead else { return }
        sentAhead = nil
        _ = try? session.rows(of: ahead.rows)
    }

    /// The batch sent ahead in a sweep (see ``fault(_:)``), and when.
    private var sentAhead: (positions: Range<Int>, sql: String, rows: PendingRows, sentAt: UInt64)?
    /// Where the last fault ended: the next one starting there is a sweep.
    private var lastFaultEnd: Int?

    // MARK: Sweeps read by one statement

    /// Batches an iteration reads in a row before the rest of it is streamed (the fault of the
    /// next one starts the stream): a loop that stops early (`first(where:)`, a `break`) does not
    /// make the server sort the table again.
    static let sweepStreamAfter = 4
    /// The fewest rows left for a stream to be worth its statement (a sort of the whole result).
    static let sweepStreamMinimumRows = 20_000

    /// The stream of the sweep under way, if any.
    private var sweep: PostgresSweepStream?
    /// Batches the current iteration has faulted in a row.
    private var iterationRun = 0
    /// The ID table a stream was started for: one stream per fetch (a stream that was stopped,
    /// by a pause, an edit, a row that differs, is not started again until a refresh).
    private var sweepStartedFor: String?
    /// Streams started, and batches read from them (``BatchStatistics``).
    package private(set) var streamsStarted = 0
    package private(set) var batchesStreamed = 0
    /// The store's count of edits made through its contexts when the stream started.
    private var writesAtSweep = 0

    /// Starts streaming the result from `position`, when it is worth it and can be checked: a plain
    /// table with a primary key among its columns (each row's key is compared with the ID
    /// table's), no inheritance children (whose rows can share a key with the parent's), sweeps
    /// streamed by the store (``PostgresStore/streamsSweeps``), and rows enough left. A stream that
    /// cannot start leaves the sweep to faults.
    private func startSweep(at position: Int) {
        guard store.streamsSweeps, sweep == nil, sweepStartedFor != idTable.name, locatesRows, keyIndexes != nil,
              let request = fetchedRequest, idTable.count - position >= Self.sweepStreamMinimumRows else { return }
        sweepStartedFor = idTable.name
        do {
            guard try !PostgresContext.hasInheritanceChildren(table, session) else { return }
            var rest = request
            rest.fetchOffset = request.fetchOffset + position
            rest.fetchLimit = idTable.count - position
            let query = try rowQuery(rest)
            writesAtSweep = store.editsMade
            sweep = try PostgresSweepStream(store: store, sql: query.select, arguments: query.arguments, from: position,
                                            capacity: 2 * max(request.fetchBatchSize, 500), idle: store.sweepStreamPause,
                                            serial: session.statementsSent)
            streamsStarted += 1
        } catch {
            sweep = nil
        }
    }

    /// Stops the sweep's stream, if any.
    /// A key statement sent ahead is waited for (a few milliseconds), as the batch read ahead is
    /// before a cancellable statement: one still running could take the cancel request meant for
    /// the statement sent after it.
    func stopSweep() {
        sweep?.stop()
        sweep = nil
        sweepKeys = nil
        if let keys = sweepKeysAhead, !session.connection.eventLoop.inEventLoop { _ = try? session.rows(of: keys.rows) }
        sweepKeysAhead = nil
    }

    /// The batch at `positions` from the sweep's stream, or nil (the caller stops the stream and
    /// faults the batch) unless every row is the one the ID table has there: the stream is at
    /// `positions`, nothing was sent on the result's session since the sweep's last statement (an
    /// edit, a refresh), no context of the store edited, the sweep did not pause more than
    /// ``PostgresStore/sweepStreamPause`` since it, and each row's key
    /// equals the ID table's at its position (a row updated out of its place in the order since
    /// the fetch, deleted, or inserted, differs: the rest is read by faults). The rows are those
    /// of one statement, as the server had them when it began (a write another session commits
    /// during the sweep shows in faults, not in the stream: see the README).
    private func streamed(_ positions: Range<Int>, from sweep: PostgresSweepStream) -> FaultedBatch? {
        guard let keyIndexes, sweep.position == positions.lowerBound, sweep.serial == session.statementsSent, store.editsMade == writesAtSweep,
              Double(DispatchTime.now().uptimeNanoseconds - sweep.lastTaken) / 1e9 < store.sweepStreamPause,
              let keys = sweepKeys(covering: positions) else { return nil }
        sweep.serial = session.statementsSent
        guard let rows = try? sweep.take(positions.count), rows.count == positions.count else { return nil }
        let first = positions.lowerBound - keys.start
        switch keys.values {
        case .integers(let integers):
            let index = keyIndexes[0]
            for (slot, row) in rows.enumerated() {
                guard case .integer(let key) = row[index], key == integers[first + slot] else { return nil }
            }
        case .rows(let expected):
            for (slot, row) in rows.enumerated() {
                guard let key = expected[first + slot], key.count == keyIndexes.count,
                      zip(keyIndexes, key).allSatisfy({ row[$0] == $1 }) else { return nil }
            }
        }
        batchesStreamed += 1
        let context = self.context
        return FaultedBatch(objects: rows.map { row in
            object(ObjectID(entity: entity, key: .primaryKey(keyIndexes.map { row[$0] })), values: row, in: context)
        })
    }

    /// The ID table's keys at a run of positions, what a sweep's streamed rows are checked against.
    private struct SweepKeys {
        enum Values {
            /// One integer key: the keys in position order.
            case integers([Int64])
            /// Any other key: each position's key values (nil where the ID table had none).
            case rows([[SQLValue]?])
        }
        /// The 0-based position of the first.
        let start: Int
        let count: Int
        let values: Values
    }

    /// The keys read for the sweep's checks, and the next run's statement, sent ahead (its keys
    /// come while the sweep checks and makes objects of the run before).
    private var sweepKeys: SweepKeys?
    private var sweepKeysAhead: (start: Int, count: Int, rows: PendingRows)?

    /// Keys checked per statement: a statement a batch cost the server (parse, plan, a sort) and
    /// the client more than its keys did. About 16,000, in whole batches.
    private static let sweepKeysPerStatement = 16_384

    /// The ID table's keys at `positions` (nil when they could not be read: the batch is then
    /// faulted): from the run read before, from the one sent ahead, or read now; the next run is
    /// then sent ahead.
    private func sweepKeys(covering positions: Range<Int>) -> SweepKeys? {
        if let keys = sweepKeys, keys.start <= positions.lowerBound, positions.upperBound <= keys.start + keys.count { return keys }
        sweepKeys = nil
        let run = max(1, Self.sweepKeysPerStatement / max(1, positions.count)) * positions.count
        let pending: PendingRows
        let count: Int
        if let ahead = sweepKeysAhead, ahead.start == positions.lowerBound, ahead.count >= positions.count {
            (pending, count) = (ahead.rows, ahead.count)
        } else {
            count = min(run, idTable.count - positions.lowerBound)
            guard count >= positions.count else { return nil }
            pending = sendSweepKeys(positions.lowerBound, count)
        }
        sweepKeysAhead = nil
        let next = positions.lowerBound + count
        if next < idTable.count {
            let nextCount = min(run, idTable.count - next)
            sweepKeysAhead = (next, nextCount, sendSweepKeys(next, nextCount))
        }
        guard let rows = try? session.rows(of: pending), let keys = decodeSweepKeys(rows, start: positions.lowerBound, count: count) else { return nil }
        sweepKeys = keys
        return keys
    }

    /// Sends the statement reading the ID table's keys at `count` positions from `start`.
    private func sendSweepKeys(_ start: Int, _ count: Int) -> PendingRows {
        let (condition, arguments) = idTable.rangeSQL("ids", start, start + count)
        // One integer key: the run's keys as one text cell, `{7,3,…}` in position order (a row a
        // key cost the client as much to decode as the stream's whole rows); else a row a key.
        let sql = hasIntegerKey
            ? "SELECT array_agg(ids.\(idTable.columns[0].name) ORDER BY \(idTable.orderSQL("ids")))::text FROM \(idTable.qualifiedName) AS ids WHERE \(condition)"
            : "SELECT \(idTable.positionSQL("ids")), \(idTable.columns.map { $0.read("ids") }.joined(separator: ", ")) FROM \(idTable.qualifiedName) AS ids WHERE \(condition)"
        return session.sendCollecting(sql, arguments)
    }

    private var hasIntegerKey: Bool { idTable.columns.count == 1 && idTable.columns[0].kind == .integer }

    /// The keys of `count` positions from `start` out of the rows ``sendSweepKeys(_:_:)`` read;
    /// nil when they are not that many or not in that form.
    private func decodeSweepKeys(_ rows: [[SQLValue]], start: Int, count: Int) -> SweepKeys? {
        if hasIntegerKey {
            guard let text = rows.first?.first?.textValue, let integers = PostgresArrayText.integers(text), integers.count == count else { return nil }
            return SweepKeys(start: start, count: count, values: .integers(integers))
        }
        guard rows.count == count else { return nil }
        var expected = [[SQLValue]?](repeating: nil, count: count)
        for row in rows {
            guard let pos = row.first?.integerValue else { return nil }
            let slot = Int(pos) - 1 - start
            guard slot >= 0 && slot < count else { return nil }
            expected[slot] = Array(row.dropFirst())
        }
        return SweepKeys(start: start, count: count, values: .rows(expected))
    }

    /// The indexes of the primary key's columns among the table's, when it has one (a fault or a
    /// first batch then reads the key from the row's own values).
    private lazy var keyIndexes: [Int]? = {
        guard case .primaryKey(let names) = table.rowKey else { return nil }
        let found = names.compactMap { name in table.columns.firstIndex { $0.name == name } }
        return found.count == names.count ? found : nil
    }()

    /// The fault query's rows as objects in the slots of `positions` (nil where none came): each
    /// row the position, the key's values (unless `keysInline`: then read from the row's own
    /// columns, ``keyIndexes``) and the columns.
    private func objects(from rows: [[SQLValue]], positions: Range<Int>, keysInline: Bool = false) -> [ManagedObject?] {
        var objects = [ManagedObject?](repeating: nil, count: positions.count)
        // Only rows named by a primary key join the identity map: a `ctid` names a place, which
        // another row may take after a delete and a vacuum (the registered object would then
        // stand for the wrong row).
        let context = table.hasPrimaryKey ? self.context : nil
        let keyCount = isAddressable && !keysInline ? idTable.columns.count : 0
        let inline = keysInline ? keyIndexes ?? [] : []
        for row in rows {
            guard let pos = row.first?.integerValue else { continue }
            let slot = Int(pos) - 1 - positions.lowerBound
            guard slot >= 0 && slot < objects.count else { continue }
            let key: ObjectKey
            if !isAddressable {
                key = .position(Int(pos) - 1)
            } else if keysInline {
                key = .primaryKey(inline.map { row[1 + $0] })
            } else {
                key = .primaryKey(Array(row[1..<(1 + keyCount)]))
            }
            objects[slot] = object(ObjectID(entity: entity, key: key), values: Array(row[(1 + keyCount)...]), in: context)
        }
        return objects
    }

    /// The object for the row `id` names, holding `values`: the context's (a fault takes these
    /// values; one that holds values keeps them until refreshed or merged; nil when merged as
    /// deleted), or without a context, a new one.
    @inline(__always)
    private func object(_ id: ObjectID, values: [SQLValue], in context: PostgresContext?) -> ManagedObject? {
        guard let context else { return ManagedObject(objectID: id, link: link, values: values) }
        return context.identity.adopt(id, link: context.link) { .decoded(values) }
    }

    func objectID(idRow: [SQLValue], position: Int) -> ObjectID? {
        guard isAddressable else { return ObjectID(entity: entity, key: .position(position)) }
        return ObjectID(entity: entity, key: .primaryKey(idRow))
    }

    func idRow(of id: ObjectID) -> [SQLValue]? {
        guard isAddressable, id.entity === entity, id.isAddressable else { return nil }
        return id.keyValues
    }

    func storeName(idRow: [SQLValue]) -> String? { store.name }

    /// The search for the next row after (or before) `position` that `predicate` matches, in
    /// result order over the ID table, stopping at the first match: first the positions near
    /// `position` (about 20,000, a key lookup per ID row: a near match costs little), then one
    /// query over the rest that reads the table's matches once, hashed, and walks the ID table in
    /// order to the first one in it (``PostgresIDTable/farSearchMarker``; when nothing matches,
    /// the empty hash ends it without walking the ID table): a far match, or none, costs about one
    /// scan of the table, not a key lookup per position between (20 s for a missing value over
    /// 10M rows, where the scan takes 4.6 s). Near windows over a numbered table are one `pos`
    /// range; over a packed one, TID ranges growing fourfold from 4,096 rows.
    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery] {
        guard isAddressable else { throw BatchStoreError(.invalidQuery, "\(table.name) has no row key, so it cannot be searched in place") }
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let condition = try builder.compile(predicate.node)
        let on = idTable.columns.map { "\($0.source) = ids.\($0.name)" }.joined(separator: " AND ")
        let from = (["\(idTable.qualifiedName) AS ids JOIN \(table.qualifiedSQL) AS t ON \(on)"] + builder.joins).joined(separator: " ")
        let select = "SELECT \(idTable.positionSQL("ids")) FROM \(from) WHERE "
        let tail = " AND (\(condition)) ORDER BY \(idTable.orderSQL("ids", backwards: backwards)) LIMIT 1"
        let bound = builder.arguments
        // Positions as ranges of 0-based positions still to search, in the search's direction.
        var near: [Range<Int>] = []
        var width = 4_096, covered = 0
        let reach = Self.nearSearchPositions
        if backwards {
            var end = min(position, idTable.count)
            while end > 0, covered < reach {
                near.append(max(0, end - width)..<end)
                covered += min(width, end)
                end = max(0, end - width)
                width *= 4
            }
        } else {
            var start = max(0, position + 1)
            while start < idTable.count, covered < reach {
                near.append(start..<min(idTable.count, start + width))
                covered += width
                start += width
                width *= 4
            }
        }
        if case .numbered = idTable.layout, let first = near.first, let last = near.last {
            // One pos range: the index walks it in order and stops at the first match.
            near = [min(first.lowerBound, last.lowerBound)..<max(first.upperBound, last.upperBound)]
        }
        var queries: [IDQuery] = []
        for window in near {
            let (range, arguments) = idTable.rangeSQL("ids", window.lowerBound, window.upperBound, from: bound.count + 1)
            let sql = select + range + tail
            try prepare(sql)
            queries.append(IDQuery(select: sql, arguments: bound + arguments))
        }
        // The rest, if any: the matches hashed once, the ID table walked in order.
        // (Bounds checked before the range is made: an empty result, or a search from its end.)
        let restLower = backwards ? 0 : (near.map(\.upperBound).max() ?? max(0, position + 1))
        let restUpper = backwards ? (near.map(\.lowerBound).min() ?? max(0, min(position, idTable.count))) : idTable.count
        if restLower < restUpper {
            let rest = restLower..<restUpper
            let keys = idTable.columns
            let matches = "SELECT \(keys.map(\.source).joined(separator: ", ")) FROM \(([table.qualifiedSQL + " AS t"] + builder.joins).joined(separator: " ")) WHERE \(condition)"
            let (range, arguments) = idTable.rangeSQL("ids", rest.lowerBound, rest.upperBound, from: bound.count + 1)
            let sql = "\(PostgresIDTable.farSearchMarker) SELECT \(idTable.positionSQL("ids")) FROM \(idTable.qualifiedName) AS ids WHERE \(range) AND (\(keys.map { "ids.\($0.name)" }.joined(separator: ", "))) IN (\(matches)) ORDER BY \(idTable.orderSQL("ids", backwards: backwards)) LIMIT 1"
            try prepare(sql)
            queries.append(IDQuery(select: sql, arguments: bound + arguments))
        }
        return queries
    }

    /// Positions a search looks at one by one before it reads the table's matches instead.
    static let nearSearchPositions = 20_000

    /// A new name for a frequency table in this session (`bs_freq_1`, `bs_freq_2`, …).
    func makeFrequencyTableName() -> String {
        frequencyTables += 1
        return "bs_freq_\(frequencyTables)"
    }
}

/// Edits of the result's own rows, in its session: each statement adds the membership test
/// `(t."id") IN (SELECT ids.key FROM pg_temp.bs_ids_N AS ids)`, so a row outside the ID table
/// (inserted since, or outside the filter the result was fetched with) is never counted or changed.
extension PostgresResultSource: ResultEditing {
    /// The context the edit runs through: the result's, else one made for the edit (which keeps
    /// no undo: an undoable edit is refused before anything runs).
    private func editingContext(undoable: Bool) throws -> PostgresContext {
        if let context { return context }
        guard !undoable else {
            let why = openedThroughContext ? "the PostgresContext that opened this result is gone, and its undo stack with it"
                : "this result was opened from a PostgresStore, not through a PostgresContext, so nothing keeps an undo journal for it"
            throw BatchStoreError(.undoRefused, "\(why); nothing was changed")
        }
        return PostgresContext(store: store)
    }

    /// The edit's site: this session, and membership in the ID table (and, for an edit of a
    /// frequency sheet's values, the rows holding them, as its GROUP BY grouped them).
    private func site(for entityName: String, values: ValueSelection?, context: PostgresContext) throws -> PostgresContext.EditSite {
        let named = try store.table(named: entityName)
        guard named.name == table.name else {
            throw BatchStoreError(.invalidArgument, "this result holds rows of \(table.name), not \(named.name); nothing was changed")
        }
        guard isAddressable, !idTable.columns.isEmpty else {
            throw BatchStoreError(.readOnly, "\(table.name) is a view or has no row key; nothing was changed")
        }
        // A result's membership names rows by key: ambiguous under inheritance.
        try PostgresContext.refuseKeyAddressing(table, session)
        try idTable.analyzeOnce()
        let keys = idTable.columns
        var within = "(\(keys.sourceList)) IN (SELECT \(keys.map { "ids.\($0.name)" }.joined(separator: ", ")) FROM \(idTable.qualifiedName) AS ids)"
        if let values { within += " AND " + (try condition(for: values)) }
        return PostgresContext.EditSite(lease: lease, prepare: { [unowned self] sql in try self.prepare(sql) }, within: within)
    }

    /// The entity name a delete names, and its object IDs checked against the result's table.
    private func entityName(of request: BatchDeleteRequest) throws -> String {
        if let ids = request.objectIDs {
            if let stranger = ids.first(where: { $0.entity.name != table.name }) {
                throw BatchStoreError(.invalidArgument, "row \(stranger) is not a row of \(table.name), the table of this result; nothing was changed")
            }
            return table.name
        }
        guard let fetch = request.fetchRequest else { throw BatchStoreError(.invalidArgument, "a batch delete needs a fetch request or object IDs") }
        return fetch.entityName
    }

    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let context = try editingContext(undoable: undoable)
        return try context.execute(request, objectIDs: objectIDs, undoable: undoable, at: try site(for: request.entityName, values: values, context: context))
    }

    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?) throws -> Int {
        let context = try editingContext(undoable: false)
        let site = try site(for: request.entityName, values: values, context: context)
        return try context.count(try context.compileUpdate(request, objectIDs: objectIDs, at: site), at: site)
    }

    func preview(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?, values: ValueSelection?, sample: Int) throws -> UpdatePreview {
        let context = try editingContext(undoable: false)
        let site = try site(for: request.entityName, values: values, context: context)
        return try context.preview(try context.compileUpdate(request, objectIDs: objectIDs, at: site), at: site, sample: sample)
    }

    func execute(_ request: BatchDeleteRequest, values: ValueSelection?, undoable: Bool) throws -> BatchResult {
        let context = try editingContext(undoable: undoable)
        return try context.execute(request, undoable: undoable, at: try site(for: try entityName(of: request), values: values, context: context))
    }

    func count(forDelete request: BatchDeleteRequest, values: ValueSelection?) throws -> Int {
        let context = try editingContext(undoable: false)
        let site = try site(for: try entityName(of: request), values: values, context: context)
        return try context.count(try context.compileDelete(request, at: site), at: site)
    }
}

extension PostgresTable {
    /// The table as an ``Entity``: its columns as attributes (types as PostgreSQL writes them),
    /// keyed by its primary key, by `ctid` (read-only), or not at all (a view).
    func makeEntity() -> Entity {
        let attributes = columns.map {
            Attribute(engineColumn: $0.name, declaredType: $0.declaredType, isNotNull: $0.isNotNull, defaultValueSQL: $0.defaultValueSQL,
                      primaryKeyPosition: $0.primaryKeyPosition, isGenerated: $0.isGenerated)
        }
        let keys: [String]
        switch rowKey {
        case .primaryKey(let names): keys = names
        case .ctid: keys = ["tableoid", "ctid"]
        case .none: keys = []
        }
        return Entity(name: name, kind: keys.isEmpty ? .view : .withoutRowidTable, storeName: storeName, attributes: attributes,
                      uniquenessConstraints: uniquenessConstraints, relationships: relationships, indexedColumns: indexedColumns,
                      keyColumns: keys, readOnlyReason: readOnlyReason)
    }
}

extension BatchFaultingCollection {
    /// ``PostgresResultSource/faultPlans()`` of a PostgreSQL result; nil for any other.
    package func postgresFaultPlans() throws -> (generic: Int, custom: Int)? {
        try (storage.source as? PostgresResultSource)?.faultPlans()
    }

    /// True while a PostgreSQL result's faults read their rows as one `record[]` cell; nil for any
    /// other result. For the tests.
    package var postgresFaultsAsRecords: Bool? { (storage.source as? PostgresResultSource)?.faultsAsRecords }
}


/// The owner of objects no context holds (see `PostgresResultSource.link`): they keep the values
/// their batch read, and say why they cannot do more.
private final class UncontainedRows: ObjectOwner {
    let table: PostgresTable
    init(table: PostgresTable) { self.table = table }

    private var why: String {
        table.readOnlyReason.map { "cannot change rows of \(table.name): \($0)" }
            ?? "it was read without a context (PostgresStore.fetchBatched); open the result through a PostgresContext to change its rows"
    }

    func fulfillFault(_ object: ManagedObject) throws {
        throw BatchStoreError(.objectNotFound, "\(object.objectID): no context holds it, so its row cannot be read again")
    }

    func objectDidDeallocate(_ object: ManagedObject) {}

    func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws {
        throw BatchStoreError(table.readOnlyReason == nil ? .invalidArgument : .readOnly, "\(object.objectID.entity.name): \(why)")
    }

    func isPendingDelete(_ object: ManagedObject) -> Bool { false }
}
