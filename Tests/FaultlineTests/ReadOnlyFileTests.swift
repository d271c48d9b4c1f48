import Foundation
import GRDB
import Testing
import TestSupport

/// Files the user may not write: as root (CI), the binary runs as `nobody` on root's files; as
/// anyone else, the file and its folder are made read-only.
@Suite("Read-only files and folders", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct ReadOnlyFileTests {
    /// The command prefix that makes `db` read-only for the program.
    func readOnlyRunner(_ scratch: TempDir, _ db: String) throws -> [String] {
        if getuid() == 0 {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scratch.url.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db)
            // A copy nobody can reach: the build folder may sit under root's home (mode 700).
            let binary = scratch.path("faultline")
            try FileManager.default.copyItem(atPath: CLI.binary, toPath: binary)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary)
            let probe = try runProcess(["runuser", "-u", "nobody", "--", binary, "--help"])
            try #require(probe.status == 0, "nobody cannot run the binary: \(probe.stderr)")
            return ["runuser", "-u", "nobody", "--", binary]
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: db)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: scratch.url.path)
        return [CLI.binary]
    }

    @Test("edits of a read-only file fail in one line and write nothing; export still works; the browser says why")
    func readOnlyFile() throws {
        let scratch = TempDir()
        let db = scratch.path("ro.sqlite")
        try DatabaseQueue(path: db).write { db in
            try db.execute(sql: "CREATE TABLE n(id INTEGER PRIMARY KEY, x TEXT); INSERT INTO n VALUES (1, 'a'), (2, 'b')")
        }
        let rows = scratch.path("rows.ndjson")
        try Data("{\"id\": 3, \"x\": \"c\"}\n".utf8).write(to: URL(fileURLWithPath: rows))
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let runner = try readOnlyRunner(scratch, db)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scratch.url.path) }
        for args in [["update", db, "--table", "n", "--all", "--set", "x = 'z'"],
                     ["delete", db, "--table", "n", "--all"],
                     ["import", db, "--table", "n", rows]] {
            let r = try runProcess(runner + args)
            #expect(r.status == 1, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("read-only") && r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        let export = try runProcess(runner + ["export", db, "--table", "n"])
        #expect(export.status == 0 && export.stdout == "id\tx\n1\ta\n2\tb\n", "\(export.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
        #expect(!FileManager.default.fileExists(atPath: db + "-wal") && !FileManager.default.fileExists(atPath: db + "-journal"))

        let t = try Tmux(command: runner.map(shellQuote).joined(separator: " ") + " " + shellQuote(db))
        try t.waitFor("read-only")
        try t.type("D")
        try t.waitFor("D does nothing: the file is read-only")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
    }
}
