import BatchStore
import Foundation

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
    var openedThroughContext = false
    /// Shared by the objects that no context holds (a result opened without a context, rows of
    /// a table without a primary key): its owner says why they take no unsaved changes.
    let link = ContextLink()
    let uncontained: UncontainedRows
    /// True once the session has the `pg_temp` text functions (``PostgresTextFunctions``).
    var hasTextFunctions = false
    /// Frequency tables made in the session so far (their names are numbered).
    var frequencyTables = 0

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
    var isAddressable: Bool { idTable.keyed && !idTable.columns.isEmpty }
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
    var fetchedRequest: FetchRequest?

    /// The ID query: `select` (by default the ID columns, named as the ID table names them) from
    /// the rows `request` matches, in its order, within its limit and offset.
    ///
    /// `readAfterLimit`: for a sorted request with a limit, the sort and limit run on the table's
    /// own columns in a subquery and `select` reads its rows after them, so the text casts of the
    /// select list are computed for the rows kept, not for every row sorted (a 10M-row top-N
    /// computed them for every row: 5.2 s where the plain `ORDER BY … LIMIT` takes 1.2 s).
    func idQuery(_ request: FetchRequest, select selectList: String?, readAfterLimit: Bool = false) throws -> IDQuery {
        try request.checkBounds(batchSize: true)
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
    var columnList: String { table.columns.map { $0.selectExpression(alias: "t") }.joined(separator: ", ") }

    /// The statement a fault runs (its placeholders bound as ``PostgresIDTable/rangeSQL(_:_:_:from:typed:)`` binds them, typed),
    /// made once per layout of the ID table (a refill may change it).
    var faultSQL: String { faultStatements.rows }

    /// ``faultSQL`` and ``recordsFaultSQL``, made once per layout of the ID table.
    var faultStatements: (rows: String, records: String) {
        if let cached = cachedFaultSQL, cached.layout == idTable.layout { return (cached.rows, cached.records) }
        let sql = rowsSQL(ids: "\(idTable.qualifiedName) AS ids", tail: " WHERE " + idTable.rangeSQL("ids", 0, 0, typed: true).sql)
        let records = "SELECT array_agg(ROW(f.*)) FROM (\(sql)) AS f"
        cachedFaultSQL = (idTable.layout, sql, records)
        return (sql, records)
    }
    var cachedFaultSQL: (layout: PostgresIDLayout, rows: String, records: String)?

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
    func rowsSQL(ids: String, tail: String) -> String {
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
    func faultCall(_ positions: Range<Int>) throws -> (sql: String, arguments: [SQLValue], records: Bool) {
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
    func faultRows(_ pending: PendingRows, _ positions: Range<Int>) throws -> [[SQLValue]] {
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
    var sentAhead: (positions: Range<Int>, sql: String, rows: PendingRows, sentAt: UInt64)?
    /// Where the last fault ended: the next one starting there is a sweep.
    var lastFaultEnd: Int?

    /// The indexes of the primary key's columns among the table's, when it has one (a fault or a
    /// first batch then reads the key from the row's own values).
    lazy var keyIndexes: [Int]? = {
        guard case .primaryKey(let names) = table.rowKey else { return nil }
        let found = names.compactMap { name in table.columns.firstIndex { $0.name == name } }
        return found.count == names.count ? found : nil
    }()

    // Sweeps (PostgresResultSource+Sweeps.swift)

    /// The stream of the sweep under way, if any.
    var sweep: PostgresSweepStream?
    /// Batches the current iteration has faulted in a row.
    var iterationRun = 0
    /// The ID table a stream was started for: one stream per fetch (a stream that was stopped,
    /// by a pause, an edit, a row that differs, is not started again until a refresh).
    var sweepStartedFor: String?
    /// Streams started, and batches read from them (``BatchStatistics``).
    package internal(set) var streamsStarted = 0
    package internal(set) var batchesStreamed = 0
    /// The store's count of edits made through its contexts when the stream started.
    var writesAtSweep = 0
    /// The keys read for the sweep's checks, and the next run's statement, sent ahead (its keys
    /// come while the sweep checks and makes objects of the run before).
    var sweepKeys: SweepKeys?
    var sweepKeysAhead: (start: Int, count: Int, rows: PendingRows)?
    var hasIntegerKey: Bool { idTable.columns.count == 1 && idTable.columns[0].kind == .integer }
}
