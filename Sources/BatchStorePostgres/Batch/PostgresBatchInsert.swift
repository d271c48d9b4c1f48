import BatchStore
import Foundation
import NIOCore

/// Batch insert over PostgreSQL: the rows of a ``BatchInsertRequest`` as multi-row
/// `INSERT … VALUES (…), (…)` statements (up to 1,000 rows each, consecutive rows with the same
/// columns), all in one transaction: every row or none.
///
/// Each value is cast to its column's type as a batch update's are (text read by the type's input
/// function, a fraction refused for an integer column, a value too long for `varchar(n)` refused).
/// Conflict policies: `.fail` (the server's error, naming the rows' range), `.ignore`
/// (`ON CONFLICT DO NOTHING`: any unique constraint, as on SQLite), `.upsert` (as on SQLite: the
/// existing row found by primary key gets the row's own columns, `UPDATE … FROM (VALUES …)`, and
/// the others are inserted, `INSERT … SELECT … WHERE NOT EXISTS`; PostgreSQL's own
/// `ON CONFLICT DO UPDATE` would check NOT NULL on columns the row leaves out; a row without the
/// whole key is inserted). A key given twice in one request is written in order, as on SQLite: a
/// statement never holds the same key twice.
extension PostgresContext: InsertingContext {
    /// What a batch insert wrote (BatchStore's `InsertCounts`).
    public typealias InsertCounts = BatchStore.InsertCounts

    /// Runs a batch insert in one transaction. `.objectIDs` and `.changes` answer the written rows'
    /// IDs in memory; `.count` and `.statusOnly` keep none (memory O(one statement's rows)).
    /// With `undoable`, the new rows' keys are journaled on the server and ``undo()`` deletes them
    /// (`.fail` and `.ignore` only: an upsert's undo is not built over PostgreSQL).
    /// - Throws: `.noSuchAttribute` (naming the row), `.constraint` naming the server's rule and
    ///   the rows' range; `.undoRefused` for an undoable upsert or a table without a primary key,
    ///   `.tooBigToUndo` over ``undoLimit``; then nothing was written.
    public func execute(_ request: BatchInsertRequest, undoable: Bool) throws -> BatchResult {
        var inserted: [ObjectID] = [], updated: [ObjectID] = []
        let wantsIDs = request.resultType == .objectIDs || request.resultType == .changes
        let counts = try insert(request, keys: wantsIDs, undoable: undoable) { id, isNew in
            if isNew { inserted.append(id) } else { updated.append(id) }
        }
        return BatchResult(request.resultType, count: counts.total, ids: inserted + updated, changes: ChangeSet(inserted: inserted, updated: updated))
    }

    /// Runs a batch insert in one transaction and answers how many rows it inserted and updated,
    /// keeping no IDs (what `faultline import` uses).
    ///
    /// With `.fail`, rows go by `COPY … FROM STDIN` (what psql's `\copy` sends) while they have
    /// the first row's columns and values a literal reads as an INSERT would (text, NULL, bytes
    /// for a bytea column), then by INSERTs; a refused row is named with the server's error.
    public func executeCounting(_ request: BatchInsertRequest) throws -> InsertCounts {
        try insert(request, keys: false, copies: true) { _, _ in }
    }

    /// A key's value as the column compares it, so that one key written two ways is seen as one:
    /// a number for a column of numbers (an integral real or a numeric text as that number),
    /// else its text.
    static func canonicalKey(_ value: SQLValue, _ column: PostgresColumn) -> SQLValue {
        switch (column.kind, value) {
        case (.integer, .real(let d)) where d == d.rounded() && abs(d) < 9.2e18: return .integer(Int64(d))
        case (.integer, .text(let t)): return Int64(t.trimmingCharacters(in: .whitespaces)).map { .integer($0) } ?? value
        case (.real, .integer(let i)), (.numeric, .integer(let i)): return .real(Double(i))
        case (.real, .text(let t)), (.numeric, .text(let t)): return Double(t.trimmingCharacters(in: .whitespaces)).map { .real($0) } ?? value
        case (.text, .integer(let i)), (.uuid, .integer(let i)): return .text(String(i))
        default: return value
        }
    }

    private func insert(_ request: BatchInsertRequest, keys: Bool, undoable: Bool = false, copies: Bool = false, _ written: (ObjectID, Bool) -> Void) throws -> InsertCounts {
        let table = try store.table(named: request.entityName)
        // An insert needs no key: only views refuse (a table without a primary key takes rows, and
        // its IDs, when asked for, are its rows' ctids).
        switch table.kind {
        case .view, .materializedView:
            throw BatchStoreError(.readOnly, "cannot insert rows into \(table.name): it is a \(table.kind == .view ? "view" : "materialized view")")
        case .table, .partitionedTable, .foreignTable: break
        }
        guard table.canInsert else { throw BatchStoreError(.permissionDenied, "the role may not insert rows into \(table.name)") }
        let entity = try store.entity(named: table.name)
        let keyColumns = PostgresIDColumn.of(table)
        let primaryKey: [String]
        if case .primaryKey(let names) = table.rowKey { primaryKey = names } else { primaryKey = [] }
        let upsert: Bool
        let ignore: Bool
        switch request.conflictPolicy {
        case .fail: (upsert, ignore) = (false, false)
        case .ignore: (upsert, ignore) = (false, true)
        case .upsert: (upsert, ignore) = (true, false)
        }
        var journal: UndoPlan?
        if undoable {
            journal = upsert ? try UndoPlan(upserting: table, entity: entity, context: self) : try UndoPlan(inserting: table, entity: entity, context: self)
        }
        let lease = try sessionLease()
        let session = lease.session
        for function in PostgresQueryBuilder.guardFunctions { try session.execute(function) }

        var counts = InsertCounts(inserted: 0, updated: 0)
        // The statement being gathered: its columns, rows (by number) and their keys when upserting.
        var columns: [PostgresColumn] = []
        var pending: [(number: Int, values: [SQLValue])] = []
        var pendingKeys = Set<[SQLValue]>()
        var byName: [String: PostgresColumn] = [:]

        /// A row's values with their columns, in column-name order, checked: every name a
        /// column of the table, none generated, none named twice.
        func paired(_ row: [String: SQLValue], _ number: Int) throws -> [(column: PostgresColumn, value: SQLValue)] {
            var pairs: [(column: PostgresColumn, value: SQLValue)] = []
            for (name, value) in row {
                let column: PostgresColumn
                if let known = byName[name] { column = known } else {
                    guard let found = table.column(named: name) else {
                        throw BatchStoreError(.noSuchAttribute, "row \(number): \(table.name) has no column named \(name.debugDescription); columns: \(table.columns.map(\.name).joined(separator: ", "))")
                    }
                    if found.isGenerated { throw BatchStoreError(.readOnly, "row \(number): \(table.name).\(found.name) is a generated column and cannot be set") }
                    byName[name] = found
                    column = found
                }
                pairs.append((column, value))
            }
            pairs.sort { $0.column.name < $1.column.name }
            if zip(pairs, pairs.dropFirst()).contains(where: { $0.column.name == $1.column.name }) {
                throw BatchStoreError(.invalidArgument, "row \(number): two keys name the same column (names are case-insensitive)")
            }
            return pairs
        }

        func flush() throws {
            guard let first = pending.first else { return }
            defer { pending.removeAll(keepingCapacity: true); pendingKeys.removeAll(keepingCapacity: true) }
            let builder = PostgresQueryBuilder(table: table, schema: store.schema)
            var tuples: [String] = []
            for row in pending {
                let values = try zip(columns, row.values).map { column, value -> String in
                    do {
                        return try builder.assignment(try builder.operand(.value(value)), to: column, in: table)
                    } catch let error as BatchStoreError {
                        throw BatchStoreError(error.code, "row \(row.number): \(error.message)")
                    }
                }
                tuples.append("(" + values.joined(separator: ", ") + ")")
            }
            let names = columns.map { quoteIdentifier($0.name) }
            let upserting = upsert && !primaryKey.isEmpty && primaryKey.allSatisfy { key in columns.contains { $0.name == key } }
            var statements: [String] = []
            // RETURNING whether the row is new, and its key when asked for.
            let reads = keyColumns.map(\.readSource)
            func returning(_ isNew: String) -> String { " RETURNING \(isNew)" + (keys ? ", " + reads.joined(separator: ", ") : "") }
            if columns.isEmpty {
                let insert = "INSERT INTO \(table.qualifiedSQL) AS t DEFAULT VALUES"
                statements = [journal.map { $0.journaling(insert: insert, keys: keys) } ?? insert + returning("true")]
            } else if upserting {
                // As on SQLite, an existing row is found by key first and only the row's columns
                // are set (so NOT NULL is not checked for columns the row leaves alone); the rest
                // are inserted. The statement holds each key once (see the gathering below).
                let v = (0..<columns.count).map { "c\($0)" }
                let values = "(VALUES \(tuples.joined(separator: ", "))) AS v(\(v.joined(separator: ", ")))"
                let keyOf = { (alias: String) in "(" + primaryKey.map { "\(alias).\(quoteIdentifier($0))" }.joined(separator: ", ") + ")" }
                let vKey = "(" + primaryKey.compactMap { k in columns.firstIndex { $0.name == k }.map { v[$0] } }.map { "v.\($0)" }.joined(separator: ", ") + ")"
                let sets = columns.indices.map { "\(quoteIdentifier(columns[$0].name)) = v.\(v[$0])" }.joined(separator: ", ")
                statements = []
                var updated = "", absent = "NOT EXISTS (SELECT 1 FROM \(table.qualifiedSQL) AS e WHERE \(keyOf("e")) = \(vKey))"
                if let plan = journal {
                    // The rows about to be updated, as they are, locked, before the UPDATE changes
                    // them, and which columns it sets in them. The UPDATE then changes only rows
                    // the journal holds, and the INSERT writes only keys it does not: a row another
                    // session inserts in between fails the upsert (a duplicate key) rather than
                    // going unjournaled.
                    let keysSQL = "SELECT \(vKey.dropFirst().dropLast()) FROM \(values)"
                    statements.append(plan.journalingOld(keys: keysSQL))
                    if let mark = plan.markingSet(columns.map(\.name), keys: keysSQL) { statements.append(mark) }
                    journal?.assigning(columns.map(\.name))
                    updated = " AND " + plan.holds(keyOf("t"))
                    absent = "NOT " + plan.holds(vKey)
                }
                let insert = "INSERT INTO \(table.qualifiedSQL) AS t (\(names.joined(separator: ", "))) OVERRIDING SYSTEM VALUE SELECT \(v.map { "v.\($0)" }.joined(separator: ", ")) FROM \(values) "
                    + "WHERE \(absent)"
                statements += [
                    "UPDATE \(table.qualifiedSQL) AS t SET \(sets) FROM \(values) WHERE \(keyOf("t")) = \(vKey)\(updated)" + returning("false"),
                    journal.map { $0.journaling(insert: insert, keys: keys) } ?? insert + returning("true"),
                ]
            } else {
                // A value given for an identity column GENERATED ALWAYS is written, as COPY and
                // undo write it (a no-op for other columns).
                let insert = "INSERT INTO \(table.qualifiedSQL) AS t (\(names.joined(separator: ", "))) OVERRIDING SYSTEM VALUE VALUES \(tuples.joined(separator: ", "))"
                    + (ignore ? " ON CONFLICT DO NOTHING" : "")
                statements = [journal.map { $0.journaling(insert: insert, keys: keys) } ?? insert + returning("true")]
            }
            let range = pending.count == 1 ? "row \(first.number)" : "rows \(first.number)–\(pending[pending.count - 1].number)"
            do {
                for sql in statements {
                    for row in try session.query(sql, builder.arguments) {
                        let flag: Int64? = row.first?.integerValue
                        let isNew = flag.map { $0 != 0 } ?? true
                        if isNew { counts.inserted += 1 } else { counts.updated += 1 }
                        if keys { written(ObjectID(entity: entity, key: .primaryKey(Array(row.dropFirst()))), isNew) }
                    }
                }
            } catch let error as BatchStoreError where error.code != .serverUnavailable && error.code != .cancelled {
                throw BatchStoreError(error.code, "\(error.message) (in \(range); nothing was written)")
            }
        }

        try inTransaction(session) {
            if let journal {
                try journal.check(in: session)
                try session.execute(journal.createSQL)
            }
            var number = 0
            // Parameters per statement stay far below PostgreSQL's 65,535.
            var limit = 1_000
            // A row read by the COPY below that it could not send, for the INSERTs to take.
            var pushedBack: [String: SQLValue]?
            if copies, journal == nil, !keys, !upsert, !ignore, table.kind == .table || table.kind == .partitionedTable,
               let first = try request.next() {
                // COPY while the rows have the first row's columns and values a literal reads as
                // the INSERT would (text, NULL, bytes for bytea); from the first that does not,
                // INSERTs, in the same transaction.
                let firstPairs = try paired(first, 1)
                let copyColumns = firstPairs.map(\.column)
                // The first row's keys as it wrote them, in the COPY's column order. A row with as
                // many keys, each of them among these, names the same columns (checked once, for
                // the first row), so the rows after it are read by these keys without pairing,
                // sorting or checking names again.
                let copyKeys: [String] = copyColumns.compactMap { column in first.first { byName[$0.key] == column }?.key }
                // A row as COPY text at the end of `buffer`; false, and the buffer as it was,
                // for a row COPY cannot take as given.
                func line(_ row: [String: SQLValue], _ buffer: inout ByteBuffer) -> Bool {
                    guard !copyColumns.isEmpty, row.count == copyKeys.count, copyKeys.count == copyColumns.count else { return false }
                    let start = buffer.writerIndex
                    for index in copyKeys.indices {
                        guard let value = row[copyKeys[index]],
                              PostgresSession.appendCopyText(value, for: copyColumns[index], to: &buffer) else {
                            buffer.moveWriterIndex(to: start)
                            return false
                        }
                        buffer.writeInteger(index == copyKeys.count - 1 ? UInt8(0x0A) : UInt8(0x09))
                    }
                    return true
                }
                var firstLine = ByteBuffer()
                if line(first, &firstLine) {
                    var sent = false
                    func nextRow(_ buffer: inout ByteBuffer) throws -> Bool {
                        if !sent {
                            sent = true
                            number += 1
                            buffer.writeImmutableBuffer(firstLine)
                            return true
                        }
                        guard let row = try request.next() else { return false }
                        guard line(row, &buffer) else {
                            pushedBack = row
                            return false
                        }
                        number += 1
                        return true
                    }
                    do {
                        _ = try session.copy(schema: table.schemaName, table: table.relationName, columns: copyColumns.map(\.name), nextRow: nextRow)
                    } catch let failure as PostgresSession.CopyFailure {
                        let at = failure.line.map { "row \($0)" } ?? (number <= 1 ? "row 1" : "rows 1–\(number)")
                        throw BatchStoreError(failure.error.code, "\(failure.error.message) (in \(at); nothing was written)")
                    }
                    counts.inserted += number
                } else {
                    pushedBack = first
                }
            }
            while true {
                let row: [String: SQLValue]?
                if let back = pushedBack {
                    row = back
                    pushedBack = nil
                } else {
                    do {
                        row = try request.next()
                    } catch {
                        // The rows read so far are checked before the handler's error ends the insert
                        // (a dry run's end): then everything is rolled back.
                        try flush()
                        throw error
                    }
                }
                guard let row else { break }
                number += 1
                let pairs = try paired(row, number)
                let rowColumns = pairs.map(\.column)
                // A key given twice, however written (1, 1.0, '1'), splits the statement: each
                // statement holds a key once, so the rows are written in order.
                let key = upsert ? primaryKey.compactMap { k in pairs.first { $0.column.name == k }.map { Self.canonicalKey($0.value, $0.column) } } : []
                if rowColumns != columns || pending.count >= limit || (upsert && !key.isEmpty && pendingKeys.contains(key)) {
                    try flush()
                    columns = rowColumns
                    limit = columns.isEmpty ? 1 : max(1, min(1_000, 30_000 / columns.count))
                }
                if upsert && !key.isEmpty { pendingKeys.insert(key) }
                pending.append((number, pairs.map(\.value)))
            }
            try flush()
            if journal != nil {
                if counts.inserted + counts.updated > undoLimit {
                    throw BatchStoreError(.tooBigToUndo, "this insert writes \(grouped(counts.inserted + counts.updated)) rows, more than the undo limit of \(grouped(undoLimit)); run it without undo, or raise undoLimit")
                }
                try flushStatistics(session)
            }
        }
        if let journal { record(PostgresUndoEntry(lease: lease, plan: journal)) }
        return counts
    }
}
