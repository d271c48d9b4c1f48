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

    init(runner: EffectRunner) {
        self.runner = runner
    }

    /// Runs `job` after the jobs before it; `state` is the state it was asked from.
    func submit(_ job: EffectRunner.Job, state: BrowserState) {
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

    func begin() {
        condition.lock(); defer { condition.unlock() }
        running += 1
    }

    func post(_ more: [Action]) {
        condition.lock(); defer { condition.unlock() }
        actions += more
        condition.signal()
    }

    func finish(_ more: [Action], log lines: [String]) {
        condition.lock(); defer { condition.unlock() }
        actions += more
        log += lines
        running -= 1
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
