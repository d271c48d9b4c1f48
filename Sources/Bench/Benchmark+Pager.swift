import BatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `psql … | pspg`, the terminal pager people put on PostgreSQL, measured beside Faultline in the
/// same run: it needs a terminal, so it runs in a detached tmux pane.
extension Benchmark {
    struct PagerFigures: Codable, Sendable {
        /// From start to the first row on screen.
        var firstScreenSeconds: Double
        /// pspg's and psql's own peak RSS (`VmHWM`), in bytes.
        var pagerPeakRSS: Int
        var psqlPeakRSS: Int
    }

    /// Runs `psql -X -d URL -c SQL | pspg` in a detached 200×50 tmux pane (a server of its own)
    /// and waits for the pane to show `firstKey` as a cell under a header naming `column`: the
    /// seconds until then, and the peak RSS of pspg and psql, sampled from /proc every 20 ms
    /// (pspg reads every row before it draws, psql holds every row before it prints). Throws the
    /// reason when a program is missing, the pipeline fails or no screen comes within `timeout`.
    static func pagerFirstScreen(url: String, sql: String, column: String, firstKey: String, timeout: Double) throws -> PagerFigures {
        guard let tmux = which("tmux") else { throw BatchStoreError(.invalidArgument, "tmux is not installed here") }
        guard let psql = which("psql") else { throw BatchStoreError(.invalidArgument, "psql is not installed here") }
        guard let pspg = which("pspg") else { throw BatchStoreError(.invalidArgument, "pspg is not installed here") }
        // A socket of our own in the temp folder (not tmux's -L name under /tmp/tmux-UID, which
        // kill-server leaves behind), removed at the end.
        let socket = NSTemporaryDirectory() + "/faultline-bench-pager-\(getpid()).sock"
        let output = socket + ".out"
        defer { unlink(output) }
        /// One tmux command and what it prints (nil when it fails), through posix_spawn and
        /// waitpid: the tmux server that `new-session` forks keeps the descriptors it was given,
        /// and Foundation's Process waits for those to close as well as for the exit.
        func run(_ arguments: [String]) -> String? {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            let quiet = arguments.first == "new-session"
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, quiet ? "/dev/null" : output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let argv: [UnsafeMutablePointer<CChar>?] = ([tmux, "-S", socket, "-f", "/dev/null"] + arguments).map { strdup($0) } + [nil]
            defer { for p in argv { free(p) } }
            var pid: pid_t = 0
            guard posix_spawn(&pid, tmux, &actions, nil, argv, environ) == 0 else { return nil }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            guard status == 0 else { return nil }
            return quiet ? "" : (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        }
        defer {
            _ = run(["kill-server"])
            unlink(socket)
        }
        // The URL and the statement reach the pipeline as environment variables: nothing is quoted.
        let script = #""$FL_PSQL" -X -q -d "$FL_URL" -c "$FL_SQL" | "$FL_PSPG"; echo "pipeline ended: $?"; sleep 60"#
        let started = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        guard run(["new-session", "-d", "-x", "200", "-y", "50", "-s", "pager",
                   "-e", "FL_PSQL=\(psql)", "-e", "FL_PSPG=\(pspg)", "-e", "FL_URL=\(url)", "-e", "FL_SQL=\(sql)", "-e", "TERM=xterm-256color",
                   "/bin/sh", "-c", script]) != nil,
              let shell = run(["display-message", "-p", "-t", "pager", "#{pane_pid}"]).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        else { throw BatchStoreError(.invalidQuery, "tmux could not start the pager") }
        var peaks: [String: Int] = [:]
        var lastCapture = 0.0
        while elapsed() < timeout {
            for (pid, name) in children(of: shell) where name == "pspg" || name == "psql" {
                if let hwm = PeakWatcher.vmHWM(pid) { peaks[name] = max(peaks[name] ?? 0, hwm) }
            }
            if elapsed() - lastCapture >= 0.1 {
                lastCapture = elapsed()
                let pane = run(["capture-pane", "-p", "-t", "pager"]) ?? ""
                if let ended = pane.split(separator: "\n").first(where: { $0.hasPrefix("pipeline ended") }) {
                    throw BatchStoreError(.invalidQuery, "psql | pspg ended before a screen came (\(ended))")
                }
                let cells = pane.split(separator: "\n").map { line in
                    line.split(whereSeparator: { $0 == " " || $0 == "|" || $0 == "│" || $0 == "┃" }).map(String.init)
                }
                if cells.contains(where: { $0.contains(column) }) && cells.contains(where: { $0.first == firstKey }) {
                    // pspg may draw before it has read everything: its peak is taken once it has
                    // stopped growing for a second.
                    let seconds = elapsed()
                    var stableSince = elapsed()
                    while elapsed() - stableSince < 1, elapsed() < timeout {
                        for (pid, name) in children(of: shell) where name == "pspg" || name == "psql" {
                            if let hwm = PeakWatcher.vmHWM(pid), hwm > peaks[name] ?? 0 {
                                peaks[name] = hwm
                                stableSince = elapsed()
                            }
                        }
                        usleep(20_000)
                    }
                    return PagerFigures(firstScreenSeconds: seconds, pagerPeakRSS: peaks["pspg"] ?? 0, psqlPeakRSS: peaks["psql"] ?? 0)
                }
            }
            usleep(20_000)
        }
        throw BatchStoreError(.invalidQuery, "psql | pspg showed no first screen within \(Int(timeout)) s")
    }

    /// The processes whose parent is `parent`, with their command names, from /proc.
    static func children(of parent: Int32) -> [(Int32, String)] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [(Int32, String)] = []
        for entry in entries {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
            let name = String(stat[stat.index(after: open)..<close])
            let rest = stat[stat.index(after: close)...].split(separator: " ")
            if rest.count > 1, Int32(rest[1]) == parent { found.append((pid, name)) }
        }
        return found
    }
}

extension Benchmark {
    /// The program's path on `PATH`, if it is there.
    static func which(_ program: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
