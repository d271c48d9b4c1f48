import BatchStore
import Foundation

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

    func replace(with query: IDQuery) throws {
        let fresh = makeName()
        let (newCount, newLayout) = try build(fresh, query)
        try session.execute("DROP TABLE \(qualifiedName)")
        try session.execute("ALTER TABLE pg_temp.\(quoteIdentifier(fresh)) RENAME TO \(quoteIdentifier(name))")
        count = newCount
        layout = newLayout
        analyzed = false
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
        for chunk in rows.chunks(of: 500).map(Array.init) {
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
