import Foundation

/// The built `faultline` binary, run the way a user runs it.
public enum CLI {
    public typealias Result = ProcessResult

    /// The binary next to the test bundle (.build/<config>/faultline).
    public static let binary: String = {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("faultline").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return ".build/debug/faultline"
    }()

    /// Runs the binary with `args` to the end; `environment`, when given, replaces the whole
    /// environment.
    public static func run(_ args: [String], environment: [String: String]? = nil) throws -> ProcessResult {
        try runProcess([binary] + args, environment: environment)
    }

    /// Creates the deterministic demo database with `rows` movies at `path` (`faultline demo`);
    /// returns `path`. Throws when the command fails, with its message.
    @discardableResult
    public static func demo(rows: Int, at path: String) throws -> String {
        let made = try run(["demo", "--rows", String(rows), "--output", path])
        guard made.status == 0 else { throw CommandFailure(command: "faultline demo", result: made) }
        return path
    }
}

/// A helper program ended with a non-zero status.
public struct CommandFailure: Error, CustomStringConvertible {
    public let command: String
    public let result: ProcessResult
    public var description: String { "\(command) exited with \(result.status): \(result.stderr)" }
}

/// What the `sqlite3` shell prints for `sql` on `path` (the file checked by another tool), without
/// the surrounding white space; `readOnly` opens it with `-readonly`. Throws when it fails.
public func sqlite3(_ path: String, _ sql: String, readOnly: Bool = false) throws -> String {
    let result = try runProcess(["sqlite3"] + (readOnly ? ["-readonly"] : []) + [path, sql])
    guard result.status == 0 else { throw CommandFailure(command: "sqlite3", result: result) }
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}
