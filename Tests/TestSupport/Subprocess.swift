import Foundation

#if canImport(Glibc)
import Glibc
#endif

// glibc 2.34+: closes every descriptor from `from` up in the child. Declared here because the
// Glibc module does not export the `_np` spawn extensions.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// A child process started with `posix_spawnp` that inherits standard input, output and error
/// only: every other descriptor of the test process (SwiftPM's build lock, sockets, open
/// databases) is closed in the child, so nothing the child starts in turn (a tmux server) can
/// hold them.
///
/// Foundation's `Process` is not used: it does not reap a child whose own children live on
/// (a tmux client that starts a server), and what it passes down differs between versions.
/// A child still running when its `Subprocess` goes away is killed and reaped.
public final class Subprocess {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// The file at the path: read for standard input, created or truncated for output.
        case file(String)
    }

    /// The child's pid.
    public let pid: pid_t
    private var exitStatus: Int32?

    /// Starts `argv` (the first element looked up in `PATH`); `environment`, when given, is the
    /// child's whole environment.
    public init(_ argv: [String], environment: [String: String]? = nil,
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws {
        precondition(!argv.isEmpty, "Subprocess needs a program")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            }
        }
        guard posix_spawn_file_actions_addclosefrom_np(&actions, 3) == 0 else { throw POSIXError(.EINVAL) }
        // The child starts with default signal handling and nothing blocked, whatever the test
        // runner set up for itself.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for a in cArgs { free(a) } }
        var cEnv = (environment ?? [:]).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in cEnv { free(e) } }
        var child: pid_t = 0
        let rc = environment == nil
            ? posix_spawnp(&child, argv[0], &actions, &attributes, &cArgs, environ)
            : posix_spawnp(&child, argv[0], &actions, &attributes, &cArgs, &cEnv)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .ENOENT) }
        pid = child
    }

    deinit {
        if exitStatus == nil && status() == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
    }

    /// The exit status once the child has ended (128 + N when signal N ended it, as a shell
    /// reports it), nil while it runs. Never blocks.
    public func status() -> Int32? {
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        let r = waitpid(pid, &raw, WNOHANG)
        if r == pid { exitStatus = Self.decode(raw) }
        return exitStatus
    }

    /// True while the child runs.
    public var isRunning: Bool { status() == nil }

    /// Waits for the child to end; returns its exit status (128 + N for signal N).
    @discardableResult
    public func wait() -> Int32 {
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 {
            if errno != EINTR { exitStatus = -1; return -1 }
        }
        let status = Self.decode(raw)
        exitStatus = status
        return status
    }

    /// Sends `signal` to the child.
    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// `waitpid`'s status as a shell reports it.
    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}

/// What a finished program wrote and how it ended.
public struct ProcessResult: Sendable {
    /// The exit status: 128 + N when signal N ended it.
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `argv` to the end (the program looked up in `PATH`) with `input` on standard input and
/// returns what it wrote. Output goes through files, so neither stream can fill up and block.
/// `environment`, when given, is the whole environment.
public func runProcess(_ argv: [String], environment: [String: String]? = nil, input: Data? = nil) throws -> ProcessResult {
    let dir = TempDir(prefix: "faultline-run")
    let out = dir.path("stdout"), err = dir.path("stderr")
    var stdin = Subprocess.Stream.null
    if let input {
        try input.write(to: URL(fileURLWithPath: dir.path("stdin")))
        stdin = .file(dir.path("stdin"))
    }
    let process = try Subprocess(argv, environment: environment, stdin: stdin, stdout: .file(out), stderr: .file(err))
    let status = process.wait()
    func text(_ path: String) -> String { (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) } ?? "" }
    return ProcessResult(status: status, stdout: text(out), stderr: text(err))
}

/// `s` as one word for `sh`: in single quotes, each `'` written as `'\''`.
public func shellQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
