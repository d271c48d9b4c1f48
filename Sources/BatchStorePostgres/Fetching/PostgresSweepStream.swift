import BatchStore
import Foundation
import PostgresNIO
import Synchronization

/// The rest of a result read in its order by one statement, for a sweep: what an iteration over a
/// `BatchFaultingCollection` reads instead of faulting batch after batch once it has gone on for
/// a while (see ``PostgresResultSource/fault(_:iterating:)``, which checks every row it takes
/// against the ID table and falls back on faults at the first that differs).
///
/// The statement is the result's own query (`SELECT <columns> FROM … WHERE … ORDER BY …, <key>
/// OFFSET …`): the server reads the table in order and sorts it once, with parallel workers, where
/// faults look each row up where it lies (10M lookups at random places took three times as long
/// as the whole query). It runs on a connection of its own, whose event loop is a thread of its
/// own: rows are decoded there as they come, into a buffer of at most `capacity` rows; when the
/// buffer is full the thread waits, so the socket is not read, and the server waits in turn.
/// Client memory stays at `capacity` rows whatever the result's size, and no other session's I/O
/// waits with it. ``stop()`` (or the last reference going) ends the statement by closing that
/// connection: nothing else was ever sent on it, so there is no cancel request to race.
final class PostgresSweepStream: @unchecked Sendable {
    /// The 0-based position, in the result, of the next row ``take(_:)`` gives.
    private(set) var position: Int
    /// The result session's statement count after the last statement the sweep sent there (a
    /// statement sent since is an edit or a read the stream's rows may not show).
    var serial: Int
    /// When the last rows were taken (a sweep that pauses reads rows as they are, by faults).
    private(set) var lastTaken: UInt64
    /// Rows taken so far.
    private(set) var rowsTaken = 0

    private let buffer: Buffer
    private let closer: Closer

    /// Opens the connection and sends `sql`, whose first row is the result's row at `position`.
    /// Returns at once: the rows come while the caller goes on.
    /// `idle`: seconds the full buffer may wait for the sweep before the stream ends itself (a loop
    /// that stopped, an iterator left alone), so that no statement, snapshot or connection stays
    /// behind a result nobody sweeps.
    init(store: PostgresStore, sql: String, arguments: [SQLValue], from position: Int, capacity: Int, idle: Double, serial: Int) throws {
        self.position = position
        self.serial = serial
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let session: PostgresSession
        do {
            session = try store.openSession(on: group.next())
        } catch {
            Self.shutDown(group)
            throw error
        }
        let closer = Closer(session, group)
        do {
            // The `pg_temp` functions the query calls (`[c]`, `[d]`, lowercase(), …) are the
            // session's own: this one needs them too.
            if PostgresTextFunctions.areUsed(in: sql) { try PostgresTextFunctions.install(in: session) }
        } catch {
            closer.close()
            throw error
        }
        self.closer = closer
        let buffer = Buffer(capacity: max(1, capacity), idle: idle)
        self.buffer = buffer
        // Parallel workers read the table for a plain statement (a cursor would get none).
        session.connection.query(PostgresSession.query(sql, arguments), logger: session.logger) { row in
            try buffer.push(try row.map(PostgresSession.value(of:)))
        }.whenComplete { result in
            switch result {
            case .success: buffer.finish(nil)
            case .failure(let error): buffer.finish(PostgresErrors.wrap(error))
            }
            // Every row is in the buffer, or none will come: the connection has done its work.
            closer.close()
        }
        self.lastTaken = DispatchTime.now().uptimeNanoseconds
    }

    deinit { stop() }

    /// The next `n` rows (fewer only where the statement ended), blocking until they have come.
    /// - Throws: the statement's error, once no row is left before it.
    func take(_ n: Int) throws -> [[SQLValue]] {
        let rows = try buffer.take(n)
        position += rows.count
        rowsTaken += rows.count
        lastTaken = DispatchTime.now().uptimeNanoseconds
        return rows
    }

    /// Ends the statement and the connection (the server stops at its next row sent, or when its
    /// sort is done). Safe to call twice; never blocks on the stream's own thread.
    func stop() {
        _ = buffer.stop()
        closer.close()
    }

    /// Closes the stream's connection, then shuts its thread down, once.
    private final class Closer: Sendable {
        let session: PostgresSession
        let group: MultiThreadedEventLoopGroup
        private let done = Atomic<Bool>(false)

        init(_ session: PostgresSession, _ group: MultiThreadedEventLoopGroup) {
            self.session = session
            self.group = group
        }

        /// The session stays referenced until its connection has closed (postgres-nio requires a
        /// connection closed before it goes); the group shuts down off its own thread.
        func close() {
            guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
            let group = self.group
            session.connection.close().whenComplete { _ in
                withExtendedLifetime(self) { shutDown(group) }
            }
        }
    }

    /// Shuts a group down off its own thread (a group cannot wait for itself).
    private static func shutDown(_ group: MultiThreadedEventLoopGroup) {
        DispatchQueue.global().async { try? group.syncShutdownGracefully() }
    }

    /// Rows between the stream's thread, which pushes them, and the sweep's, which takes them.
    /// Its state is touched under ``condition`` only (``pending``, by the stream's thread only), so
    /// Swift's run-time exclusivity checks are off for it (they cost the stream's thread a few per cent).
    private final class Buffer: @unchecked Sendable {
        private let condition = NSCondition()
        private let capacity: Int
        private let idle: Double
        @exclusivity(unchecked) private var rows: [[SQLValue]] = []
        @exclusivity(unchecked) private var head = 0
        @exclusivity(unchecked) private var finished = false
        @exclusivity(unchecked) private var failure: (any Error)?
        @exclusivity(unchecked) private var stopped = false
        /// Takes so far (what tells a full buffer that the sweep still reads).
        @exclusivity(unchecked) private var takes = 0

        init(capacity: Int, idle: Double) {
            self.capacity = capacity
            self.idle = idle
        }

        /// Rows decoded but not yet in ``rows``: the stream's thread hands them over a chunk at a
        /// time (a lock and a wake-up per row cost more than decoding it). Touched by that thread only.
        @exclusivity(unchecked) private var pending: [[SQLValue]] = []
        private static let chunk = 128
        /// True while the sweep waits in ``take(_:)`` (only then is it woken).
        @exclusivity(unchecked) private var consumerWaiting = false

        /// Adds a row (a chunk at a time); throws once stopped (which ends the statement:
        /// postgres-nio drops the rest).
        func push(_ row: [SQLValue]) throws {
            pending.append(row)
            if pending.count >= Self.chunk { try flush() }
        }

        /// Moves the pending rows into the buffer, waiting while `capacity` rows wait to be taken;
        /// stops when the buffer has stayed full, untaken, for `idle` seconds.
        private func flush() throws {
            condition.lock()
            defer { condition.unlock() }
            var waiting = (takes: -1, deadline: Date.distantPast)
            while !stopped && rows.count - head >= capacity {
                // The pause counts from the last take the full buffer has seen.
                if waiting.takes != takes { waiting = (takes, Date().addingTimeInterval(idle)) }
                if !condition.wait(until: waiting.deadline) && takes == waiting.takes && rows.count - head >= capacity {
                    stopped = true
                    rows = []
                    head = 0
                    condition.broadcast()
                }
            }
            if stopped {
                pending = []
                throw CancellationError()
            }
            if head > 0 && head >= capacity {
                rows.removeFirst(head)
                head = 0
            }
            rows.append(contentsOf: pending)
            pending.removeAll(keepingCapacity: true)
            if consumerWaiting { condition.broadcast() }
        }

        /// The statement ended (`error` nil: every row sent): called on the stream's thread.
        func finish(_ error: (any Error)?) {
            if !pending.isEmpty { _ = try? flush() }
            condition.lock()
            finished = true
            failure = error
            condition.broadcast()
            condition.unlock()
        }

        func take(_ n: Int) throws -> [[SQLValue]] {
            condition.lock()
            defer { condition.unlock() }
            while rows.count - head < n && !finished && !stopped {
                consumerWaiting = true
                condition.wait()
                consumerWaiting = false
            }
            let available = rows.count - head
            if available == 0, let failure { throw failure }
            if stopped && available < n { throw BatchStoreError(.cancelled, "the sweep's stream was stopped") }
            let count = min(n, available)
            let taken = Array(rows[head..<(head + count)])
            head += count
            takes += 1
            if head == rows.count {
                rows.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.broadcast()
            return taken
        }

        /// Marks the buffer stopped, waking both sides; false when it already was.
        func stop() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard !stopped else { return false }
            stopped = true
            rows = []
            head = 0
            condition.broadcast()
            return true
        }
    }
}

/// PostgreSQL's text form of arrays, as far as a sweep's key checks read it.
package enum PostgresArrayText {
    /// The integers of an `int8[]`'s text, `{1,-2,3}` (nil for anything else: no NULL, no
    /// spaces, no quotes), read byte by byte (String's `split` cost the sweep a tenth of its time).
    package static func integers(_ text: String) -> [Int64]? {
        var text = text
        return text.withUTF8 { bytes -> [Int64]? in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else { return nil }
            var result: [Int64] = []
            if bytes.count == 2 { return result }
            result.reserveCapacity(bytes.count / 2)
            var i = 1
            let end = bytes.count - 1
            while i <= end {
                var negative = false
                if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
                var value: Int64 = 0
                var digits = 0
                while i < end, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                    let digit = Int64(bytes[i] - UInt8(ascii: "0"))
                    // Accumulated as a negative number: Int64.min has no positive twin.
                    let (times, o1) = value.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times.subtractingReportingOverflow(digit)
                    guard !o1, !o2 else { return nil }
                    value = next
                    digits += 1
                    i += 1
                }
                guard digits > 0 else { return nil }
                if !negative {
                    guard value != Int64.min else { return nil }
                    value = -value
                }
                result.append(value)
                // A comma before the next, or the closing brace.
                if i == end { break }
                guard bytes[i] == UInt8(ascii: ","), i + 1 < end else { return nil }
                i += 1
            }
            return result
        }
    }
}
