import Foundation
import Testing

// What a suite costs, so that a run can be read (and chosen) by it. `make test` runs them all.
extension Tag {
    /// Starts its own PostgreSQL 15 server (initdb in a temporary folder, Unix socket only);
    /// skipped, saying why, when PostgreSQL is not installed.
    @Tag public static var postgres: Self
    /// Drives the real `faultline` binary in a real terminal (tmux).
    @Tag public static var tmux: Self
    /// Runs for more than a few seconds on its own: model-based random runs, million-row files,
    /// crashes and interruptions, processes.
    @Tag public static var slow: Self
}

/// The longest a test of a tagged suite may take before it fails, on a shared two-core machine
/// running the other suites at the same time (a hang fails the run instead of holding CI).
public let slowTestLimit = TimeLimitTrait.Duration.minutes(10)

/// Waits for `condition` instead of for a fixed time: checks it every 20 ms until it holds or
/// `timeout` seconds pass, and answers whether it held (the caller's `#expect` says what failed).
@discardableResult
public func waitUntil(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() > deadline { return false }
        usleep(20_000)
    }
}
