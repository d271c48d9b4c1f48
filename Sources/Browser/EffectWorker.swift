import BatchStore
import Foundation

/// Runs effects on one serial thread that owns the data (the SQLite connections, which are not
/// re-entrant): their results and progress come back as actions through ``inbox``, which the
/// session drains between keys. Nothing here reduces or draws.
///
/// Invariant: after `init`, ``runner`` is touched only on ``queue``; this is what makes the
/// `@unchecked Sendable` sound.
final class EffectWorker: @unchecked Sendable {
    private let queue = DispatchQueue(label: "faultline.browser.effects")
    private let runner: EffectRunner
    let inbox = Inbox()
    /// Set by the session (the `.cancel` effect); the running open or search checks it at each
    /// progress tick of SQLite's progress handler.
    let cancel = CancelFlag()

    /// A second serial thread for reads that must not wait behind the work on ``queue``: the
    /// last rows of a result whose IDs are being fetched (`G` during a load), on a context of its own.
    private let peekQueue = DispatchQueue(label: "faultline.browser.peek")
    private let peeker: Peeker

    init(runner: EffectRunner) {
        self.runner = runner
        self.peeker = Peeker(makeReader: runner.data.context.readerMaker, showsStores: runner.data.showsStores)
    }

    /// Runs a read on the second thread, beside the work on the first (its answer comes back
    /// through ``inbox`` like any other).
    func peek(_ effect: Effect) {
        inbox.begin(peek: true)
        peekQueue.async { [self] in
            let actions = peeker.run(effect)
            inbox.finish(actions, log: peeker.takeLog(), peek: true)
        }
    }

    /// Runs `job` after the jobs before it; `state` is the state it was asked from.
    func submit(_ job: EffectRunner.Job, state: BrowserState) {
        if case .effect(.open) = job {
            // The reader is readied as a load starts, so that `G` during it pays for its query
            // alone, not for a connection (over PostgreSQL, most of the gap to the query alone).
            peekQueue.async { [peeker] in peeker.warm() }
        }
        inbox.begin()
        queue.async { [self] in
            let inbox = self.inbox
            let actions = runner.run(job, state: state, cancel: cancel) { inbox.post([$0]) }
            inbox.finish(actions, log: runner.takeLog())
        }
    }

    /// Reads something from the data once the jobs before have run.
    func read<R: Sendable>(_ body: (EffectRunner) -> R) -> R {
        queue.sync { body(runner) }
    }
}

/// Where results and progress come back: a thread-safe queue of actions, and the number of jobs
/// still running.
final class Inbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var actions: [Action] = []
    private var log: [String] = []
    private var running = 0
    /// Of ``running``, the reads on the second thread.
    private var peeks = 0

    func begin(peek: Bool = false) {
        condition.lock(); defer { condition.unlock() }
        running += 1
        if peek { peeks += 1 }
    }

    /// True when nothing runs but reads on the second thread, and nothing waits to be taken:
    /// the session does not wait for those (a match count, a read-ahead), keys go on.
    var onlyPeeksRun: Bool {
        condition.lock(); defer { condition.unlock() }
        return running > 0 && running == peeks && actions.isEmpty && log.isEmpty
    }

    func post(_ more: [Action]) {
        condition.lock(); defer { condition.unlock() }
        actions += more
        condition.signal()
    }

    func finish(_ more: [Action], log lines: [String], peek: Bool = false) {
        condition.lock(); defer { condition.unlock() }
        actions += more
        log += lines
        running -= 1
        if peek { peeks -= 1 }
        condition.signal()
    }

    /// True when every job has finished and everything it sent was taken.
    var isEmpty: Bool {
        condition.lock(); defer { condition.unlock() }
        return running == 0 && actions.isEmpty && log.isEmpty
    }

    /// What arrived, waiting up to `seconds` for something while jobs run.
    func take(waitingUpTo seconds: Double) -> (actions: [Action], log: [String]) {
        condition.lock(); defer { condition.unlock() }
        if actions.isEmpty && log.isEmpty && running > 0 {
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
        defer { actions = []; log = [] }
        return (actions, log)
    }
}

/// A flag one thread sets and another reads.
final class CancelFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
    func clear() { lock.withLock { value = false } }
}

/// Reads on the second thread, with a context of its own (made at its first read, from the
/// browser's context's ``FetchingContext/readerMaker``): nothing here touches the first
/// thread's data.
///
/// Invariant: touched only on ``EffectWorker``'s peek queue after `init`.
final class Peeker: @unchecked Sendable {
    private let makeReader: (@Sendable () throws -> any FetchingContext)?
    private var reader: (any FetchingContext)?
    private let showsStores: Bool
    private var log: [String] = []

    init(makeReader: (@Sendable () throws -> any FetchingContext)?, showsStores: Bool) {
        self.makeReader = makeReader
        self.showsStores = showsStores
    }

    func takeLog() -> [String] {
        defer { log = [] }
        return log
    }

    /// Opens the reader and what its reads need, if not yet done; a failure is left for the read
    /// that needs it to say.
    func warm() {
        if reader == nil, let makeReader { reader = try? makeReader() }
        try? reader?.prepareForReads()
    }

    /// The actions `effect` leads to; a failure is logged and leads to none (the key that asked
    /// waits for the fetch, which puts it right).
    func run(_ effect: Effect) -> [Action] {
        if case .countMatches(let table, let filter, let column, let text, let result) = effect {
            return countMatches(table: table, filter: filter, column: column, text: text, result: result)
        }
        if case .peekRows(let table, let filter, let sorts, let offset, let count) = effect {
            return rows(of: table, filter: filter, sorts: sorts, offset: offset, count: count)
        }
        guard case .peekLast(let table, let filter, let sorts, let count) = effect, let makeReader else { return [] }
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let reader = try self.reader ?? makeReader()
            self.reader = reader
            var request = FetchRequest(entityName: table, predicate: filter.isEmpty ? nil : try FetchPredicate(filter: filter),
                                       sortDescriptors: sorts, fetchLimit: count, fetchBatchSize: max(count, 1))
            request.reversesOrder = true
            // No ID: a row read outside the result's ID table is shown, never marked or edited.
            let rows = try reader.firstRows(request).reversed().map { object in
                RowSnapshot(id: nil, values: RowSnapshot.values(of: object, showingStore: showsStores), exists: true)
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            log.append("peeked the last \(rows.count) rows of \(table) in \(seconds) s")
            return [.tailRows(rows)]
        } catch {
            log.append("peek failed: \(error)")
            return []
        }
    }

    /// `count` rows from `offset` of `table` under `filter` in `sorts`' order, by the engine's
    /// `LIMIT … OFFSET` (a whole sort, as the ID fetch's; it ends sooner when rows come early).
    private func rows(of table: String, filter: String, sorts: [BatchStore.SortDescriptor], offset: Int, count: Int) -> [Action] {
        guard let makeReader else { return [] }
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let reader = try self.reader ?? makeReader()
            self.reader = reader
            let request = FetchRequest(entityName: table, predicate: filter.isEmpty ? nil : try FetchPredicate(filter: filter),
                                       sortDescriptors: sorts, fetchLimit: count, fetchOffset: offset, fetchBatchSize: max(count, 1))
            let read = try reader.fetchBatched(request, residentBatches: 1, firstBatch: nil, progress: nil)
            var rows: [RowSnapshot] = []
            for position in 0..<read.count {
                guard let object = try read.object(at: position) else { continue }
                rows.append(RowSnapshot(id: nil, values: RowSnapshot.values(of: object, showingStore: showsStores), exists: true))
            }
            log.append("peeked \(rows.count) rows from position \(offset) of \(table) in \(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9) s")
            return [.offsetRows(start: offset, rows: rows)]
        } catch {
            log.append("peek failed: \(error)")
            return []
        }
    }

    /// The rows of `table` under `filter` that a search for `text` in `column` finds, counted by
    /// one scan on this thread's connection (the file as committed now).
    private func countMatches(table: String, filter: String, column: String, text: String, result: Int?) -> [Action] {
        guard let makeReader else { return [] }
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let reader = try self.reader ?? makeReader()
            self.reader = reader
            let match = try FetchPredicate(format: "string(%K) CONTAINS[c] %@", arguments: [.key(column), .value(.text(text))])
            let predicate = filter.isEmpty ? match : try FetchPredicate(filter: filter) && match
            let n = try reader.count(for: FetchRequest(entityName: table, predicate: predicate))
            log.append("counted \(n) matches of a search in \(table).\(column) in \(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9) s")
            return [.matchCount(column: column, text: text, result: result, count: n)]
        } catch {
            log.append("match count failed: \(error)")
            return []
        }
    }
}
