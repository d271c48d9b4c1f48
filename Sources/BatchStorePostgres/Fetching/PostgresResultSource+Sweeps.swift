import BatchStore
import Foundation

extension PostgresResultSource {
    // MARK: Sweeps read by one statement

    /// Batches an iteration reads in a row before the rest of it is streamed (the fault of the
    /// next one starts the stream): a loop that stops early (`first(where:)`, a `break`) does not
    /// make the server sort the table again.
    static let sweepStreamAfter = 4
    /// The fewest rows left for a stream to be worth its statement (a sort of the whole result).
    static let sweepStreamMinimumRows = 20_000


    /// Starts streaming the result from `position`, when it is worth it and can be checked: a plain
    /// table with a primary key among its columns (each row's key is compared with the ID
    /// table's), no inheritance children (whose rows can share a key with the parent's), sweeps
    /// streamed by the store (``PostgresStore/streamsSweeps``), and rows enough left. A stream that
    /// cannot start leaves the sweep to faults.
    func startSweep(at position: Int) {
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
    func streamed(_ positions: Range<Int>, from sweep: PostgresSweepStream) -> FaultedBatch? {
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
    struct SweepKeys {
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


    /// Keys checked per statement: a statement a batch cost the server (parse, plan, a sort) and
    /// the client more than its keys did. About 16,000, in whole batches.
    static let sweepKeysPerStatement = 16_384

    /// The ID table's keys at `positions` (nil when they could not be read: the batch is then
    /// faulted): from the run read before, from the one sent ahead, or read now; the next run is
    /// then sent ahead.
    func sweepKeys(covering positions: Range<Int>) -> SweepKeys? {
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
    func sendSweepKeys(_ start: Int, _ count: Int) -> PendingRows {
        let (condition, arguments) = idTable.rangeSQL("ids", start, start + count)
        // One integer key: the run's keys as one text cell, `{7,3,…}` in position order (a row a
        // key cost the client as much to decode as the stream's whole rows); else a row a key.
        let sql = hasIntegerKey
            ? "SELECT array_agg(ids.\(idTable.columns[0].name) ORDER BY \(idTable.orderSQL("ids")))::text FROM \(idTable.qualifiedName) AS ids WHERE \(condition)"
            : "SELECT \(idTable.positionSQL("ids")), \(idTable.columns.map { $0.read("ids") }.joined(separator: ", ")) FROM \(idTable.qualifiedName) AS ids WHERE \(condition)"
        return session.sendCollecting(sql, arguments)
    }


    /// The keys of `count` positions from `start` out of the rows ``sendSweepKeys(_:_:)`` read;
    /// nil when they are not that many or not in that form.
    func decodeSweepKeys(_ rows: [[SQLValue]], start: Int, count: Int) -> SweepKeys? {
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
}
