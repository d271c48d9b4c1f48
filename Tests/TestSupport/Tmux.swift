import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A program in a real terminal: a tmux server of its own (`-L`, a socket no other harness
/// uses) with one session of a fixed size running `command` under `sh`.
///
/// The server goes away with the harness, three ways:
/// - ``close()`` (and `deinit`, which calls it) runs `kill-server` and waits until the server
///   process is gone, then removes the socket file;
/// - a second session, `lifeline`, blocks reading a FIFO that only this process holds open; when
///   the test process ends for any reason (a crash, SIGKILL, a test run stopped by hand) the
///   kernel closes it, the read ends, and that session kills its own server;
/// - every tmux client is started by ``Subprocess``, so the server inherits standard input,
///   output and error only (`/dev/null`), never a descriptor of the test process.
///
/// After the program ends the pane stays with `[exit N]` printed under what the program left on
/// the normal screen (N is 128 + S for signal S); the shell then waits in `cat` on the terminal,
/// which ends with the server (no `sleep` that could outlive a test). `remain-on-exit` keeps the
/// pane readable should its shell die anyway.
public final class Tmux {
    /// The `-L` name: `faultline-test-<pid>-<random>`.
    public let socket: String
    /// The session that runs the program.
    public let session = "t"
    /// The tmux server's pid.
    public private(set) var serverPID: pid_t = 0
    /// The pid of the pane's shell (the program is its child).
    public private(set) var panePID: pid_t = 0
    /// The server's socket file.
    public private(set) var socketPath = ""
    private let folder = TempDir(prefix: "faultline-tmux")
    private var lifeline: Int32 = -1
    private var closed = false

    /// Starts the server and runs `command` (shell syntax: quote words with ``shellQuote(_:)``)
    /// in a `width` x `height` terminal with `LANG=C.UTF-8`, `TERM=xterm-256color` and
    /// `environment`. `NO_COLOR` is removed unless `environment` sets it; `XDG_STATE_HOME` is a
    /// folder of the harness unless `environment` sets it or `HOME`.
    public init(command: String, width: Int = 100, height: Int = 30, environment: [String: String] = [:]) throws {
        socket = "faultline-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        // The prompt history (and `y`'s files) go to a state folder of the harness's own, never the
        // real user's, unless the test names one (or a HOME of its own).
        var defaults = ["LANG": "C.UTF-8", "TERM": "xterm-256color"]
        if environment["XDG_STATE_HOME"] == nil && environment["HOME"] == nil { defaults["XDG_STATE_HOME"] = folder.path("state") }
        let env = (defaults.merging(environment) { $1 })
            .map { "\($0.key)=\(shellQuote($0.value))" }.sorted().joined(separator: " ")
        // The test runner may set NO_COLOR (its output is not a terminal); the program gets it only
        // when a test asks.
        let unset = environment["NO_COLOR"] == nil ? " -u NO_COLOR" : ""
        let fifo = folder.path("lifeline")
        guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Read and write, so the open neither blocks nor fails for want of a reader; close-on-exec,
        // so no child of this process keeps the lifeline alive.
        lifeline = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard lifeline >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let watchdog = "cat \(shellQuote(fifo)) >/dev/null; exec tmux -L \(shellQuote(socket)) kill-server"
        // The shell prints the exit status, then waits on the terminal with `cat` (no timer of its
        // own: it ends with the server), so the pane and what the program left stay readable.
        let program = "env\(unset) \(env) \(command); echo \"[exit $?]\"; exec cat >/dev/null"
        try run(["new-session", "-d", "-s", "lifeline", "-x", "20", "-y", "2", watchdog, ";",
                 "set-option", "-g", "remain-on-exit", "on", ";",
                 "new-session", "-d", "-s", session, "-x", String(width), "-y", String(height), program])
        let facts = try value("#{pid} #{pane_pid} #{socket_path}").split(separator: " ", maxSplits: 2)
        guard facts.count == 3, let server = pid_t(facts[0]), let pane = pid_t(facts[1]) else {
            close()
            throw POSIXError(.ESRCH)
        }
        serverPID = server
        panePID = pane
        socketPath = String(facts[2])
    }

    deinit { close() }

    /// Kills the server and waits (up to five seconds) until it is gone; then removes the socket.
    /// Safe to call more than once.
    public func close() {
        guard !closed else { return }
        closed = true
        _ = try? run(["kill-server"])
        if serverPID > 0 { Self.waitUntilGone(serverPID) }
        // A program that ignores SIGHUP would outlive the pane: end the pane's process group.
        if panePID > 0 && Self.isAlive(panePID) {
            kill(-panePID, SIGKILL)
            Self.waitUntilGone(panePID)
        }
        if !socketPath.isEmpty { unlink(socketPath) }
        if lifeline >= 0 { Glibc.close(lifeline) }
        lifeline = -1
    }

    /// Lets go of the lifeline without killing the server, as a test process that dies does;
    /// for the test that checks the lifeline.
    public func _releaseLifeline() {
        if lifeline >= 0 { Glibc.close(lifeline) }
        lifeline = -1
    }

    /// Waits until `pid` has ended, SIGKILLing it after `timeout` seconds.
    static func waitUntilGone(_ pid: pid_t, timeout: Double = 5) {
        let deadline = Date().addingTimeInterval(timeout)
        while isAlive(pid) {
            if Date() > deadline { kill(pid, SIGKILL); usleep(50_000); return }
            usleep(10_000)
        }
    }

    /// True while `pid` runs: it exists and is not a zombie waiting to be reaped (a daemon's
    /// parent is whatever reaps orphans, which may take its time).
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return true }
        // "pid (comm) S …": the state follows the command name's closing parenthesis.
        return stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }

    /// Runs tmux on this harness's socket with `args` and returns its stdout.
    @discardableResult
    public func run(_ args: [String]) throws -> String {
        try runProcess(["tmux", "-L", socket, "-f", "/dev/null"] + args).stdout
    }

    /// The visible lines of the session's pane.
    public func screen() throws -> [String] { try run(["capture-pane", "-p", "-t", session]).components(separatedBy: "\n") }

    /// Sends keys by tmux's names (`Enter`, `C-c`, `NPage`).
    public func send(_ keys: String...) throws { try run(["send-keys", "-t", session] + keys) }

    /// Types `text` literally.
    public func type(_ text: String) throws { try run(["send-keys", "-t", session, "-l", text]) }

    /// A tmux format (`#{alternate_on}`) expanded for the session's pane.
    public func value(_ format: String) throws -> String {
        try run(["display-message", "-p", "-t", session, format]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (up to `timeout` seconds) until some line satisfies `predicate`; returns the screen.
    /// Records an issue at the caller when it times out.
    @discardableResult
    public func waitFor(_ what: String, timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation,
                        _ predicate: (String) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String] = []
        while Date() < deadline {
            last = try screen()
            if last.contains(where: predicate) { return last }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Issue.record("timed out waiting for \(what); screen:\n\(last.joined(separator: "\n"))", sourceLocation: sourceLocation)
        return last
    }

    /// Waits until the screen's lines, each trimmed and joined by one space, contain `text`: a
    /// question that wraps over several lines (the words break where the screen does).
    @discardableResult
    public func waitForWrapped(_ text: String, timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String] = []
        while Date() < deadline {
            last = try screen()
            let joined = last.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
            if joined.contains(text) { return last }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Issue.record("timed out waiting for \(text); screen:\n\(last.joined(separator: "\n"))", sourceLocation: sourceLocation)
        return last
    }

    /// Waits until some line contains `text`.
    @discardableResult
    public func waitFor(_ text: String, timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        try waitFor(text, timeout: timeout, sourceLocation: sourceLocation) { $0.contains(text) }
    }

    /// Waits until the program exits; returns its exit status (128 + N for signal N) and whether
    /// the terminal is still on the alternate screen.
    public func waitForExit(timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws -> (status: Int?, alternate: String) {
        let screen = try waitFor("[exit", timeout: timeout, sourceLocation: sourceLocation)
        let line = screen.first { $0.contains("[exit ") } ?? ""
        let status = line.split(separator: " ").last.flatMap { Int($0.dropLast()) }
        return (status, try value("#{alternate_on}"))
    }

    /// The pid of the program (the child of the pane's shell).
    public func programPID() throws -> pid_t? {
        let shell = try value("#{pane_pid}")
        let children = (try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").first.flatMap { pid_t($0) }
    }
}
