import Foundation
import Testing
import TestSupport

/// The harness the end-to-end tests stand on: no tmux server outlives its harness, and no child
/// holds a descriptor of the test process.
@Suite("The process and tmux harness", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct HarnessTests {
    /// Where each open descriptor of `pid` points (`/proc/<pid>/fd`), by number.
    func descriptors(_ pid: pid_t) -> [Int: String] {
        let folder = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var out: [Int: String] = [:]
        for name in names {
            guard let fd = Int(name) else { continue }
            out[fd] = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(name)")) ?? "?"
        }
        return out
    }

    func waitUntil(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test("close() ends the server and the pane's processes and removes the socket; deinit does the same")
    func closeEndsTheServer() throws {
        let t = try Tmux(command: "cat")
        let server = t.serverPID, pane = t.panePID, socket = t.socketPath
        #expect(Tmux.isAlive(server) && Tmux.isAlive(pane))
        #expect(FileManager.default.fileExists(atPath: socket))
        #expect(socket.hasSuffix("/" + t.socket) && t.socket.hasPrefix("faultline-test-\(getpid())-"))
        t.close()
        #expect(!Tmux.isAlive(server), "the server outlived close()")
        #expect(!Tmux.isAlive(pane), "the pane's shell outlived close()")
        #expect(!FileManager.default.fileExists(atPath: socket))
        t.close()   // a second close does nothing

        var pids: (server: pid_t, pane: pid_t) = (0, 0)
        do {
            let scoped = try Tmux(command: "cat")
            pids = (scoped.serverPID, scoped.panePID)
        }
        #expect(pids.server > 0 && !Tmux.isAlive(pids.server), "the server outlived its harness")
        #expect(!Tmux.isAlive(pids.pane))
    }

    @Test("a harness whose test process dies (its lifeline closes) takes its server with it")
    func lifelineEndsAnAbandonedServer() throws {
        let t = try Tmux(command: "cat")
        let server = t.serverPID
        t._releaseLifeline()
        #expect(waitUntil(10) { !Tmux.isAlive(server) }, "the server lived on after its lifeline closed")
        t.close()
    }

    @Test("the server, the pane and the program hold no descriptor of the test process")
    func noDescriptorLeaks() throws {
        let dir = TempDir()
        let marker = dir.path("marker")
        FileManager.default.createFile(atPath: marker, contents: nil)
        // Opened without O_CLOEXEC, as SwiftPM's build lock or a test's database may be.
        let fd = open(marker, O_RDONLY)
        #expect(fd > 2)
        defer { close(fd) }
        let t = try Tmux(command: "cat")
        defer { t.close() }
        try t.type("ready")
        try t.waitFor("ready")
        let program = try #require(try t.programPID())
        for (what, pid) in [("server", t.serverPID), ("pane", t.panePID), ("program", program)] {
            let open = descriptors(pid)
            #expect(!open.isEmpty, "\(what): /proc/\(pid)/fd unreadable")
            #expect(!open.values.contains(marker), "\(what) holds the test's file: \(open)")
        }
        // The program's descriptors are exactly the terminal's standard three.
        let programFDs = descriptors(program)
        #expect(programFDs.keys.sorted() == [0, 1, 2] && programFDs.values.allSatisfy { $0.hasPrefix("/dev/pts/") }, "\(programFDs)")
        // A process run to the end inherits nothing either.
        let listed = try runProcess(["sh", "-c", "ls -l /proc/$$/fd"])
        #expect(listed.status == 0 && !listed.stdout.contains(marker), "\(listed.stdout)")
    }

    @Test("runProcess: exit status, 128 + N for signal N, both streams, input, environment, PATH lookup")
    func processes() throws {
        let r = try runProcess(["sh", "-c", "printf out; printf err >&2; exit 3"])
        #expect(r.status == 3 && r.stdout == "out" && r.stderr == "err")
        #expect(try runProcess(["sh", "-c", "kill -9 $$"]).status == 128 + SIGKILL)
        #expect(try runProcess(["cat"], input: Data("a\0b".utf8)).stdout == "a\0b")
        #expect(try runProcess(["/usr/bin/env"], environment: ["ONLY": "this"]).stdout == "ONLY=this\n")
        #expect(throws: (any Error).self) { try runProcess(["faultline-no-such-program"]) }
        let child = try Subprocess(["cat"], stdin: .file("/dev/zero"))
        #expect(child.isRunning)
        child.signal(SIGTERM)
        #expect(child.wait() == 128 + SIGTERM && !child.isRunning)
        #expect(shellQuote("it's") == "'it'\\''s'")
        #expect(try runProcess(["sh", "-c", "printf %s " + shellQuote("a 'b' $c")]).stdout == "a 'b' $c")
    }
}
