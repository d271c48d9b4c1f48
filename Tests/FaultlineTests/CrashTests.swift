import Foundation
import GRDB
import Testing
import TestSupport

/// SIGKILL in the middle of a batch, for real: the file must pass `integrity_check` and hold the
/// operation either fully applied or not at all.
@Suite("Crashes mid-batch", .serialized, .tags(.slow), .timeLimit(slowTestLimit))
struct CrashTests {
    static let rows = 400_000

    /// Starts `faultline args…`, waits until the file's WAL has grown past `walBytes` (the batch is
    /// writing), then kills it with SIGKILL. Returns false if it finished first.
    func killMidway(_ args: [String], db: String, walBytes: Int = 2_000_000) throws -> Bool {
        let walBefore = walSize(db)
        let p = try Subprocess([CLI.binary] + args)
        let deadline = Date().addingTimeInterval(60)
        while p.isRunning && Date() < deadline {
            if walSize(db) > walBefore + walBytes {
                p.signal(SIGKILL)
                return p.wait() == 128 + SIGKILL
            }
            usleep(2_000)
        }
        p.wait()
        return false
    }

    func walSize(_ db: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: db + "-wal"))?[.size] as? Int) ?? 0
    }

    func check(_ db: String) throws -> (integrity: String, votes: Int, count: Int) {
        let q = try DatabaseQueue(path: db)
        return try q.read { db in
            (try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "",
             try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") ?? 0)
        }
    }

    func makeDemo(_ scratch: TempDir) throws -> String {
        try CLI.demo(rows: Self.rows, at: scratch.path("crash.sqlite"))
    }

    @Test("update killed mid-write: all rows or none, file sound")
    func update() throws {
        let scratch = TempDir()
        let db = try makeDemo(scratch)
        let before = try check(db)
        // A wide update, so it writes every page for a while.
        let killed = try killMidway(["update", db, "--table", "movie", "--all", "--set", "votes = votes + 1, title = title || ' (restored)'"], db: db)
        let after = try check(db)
        #expect(after.integrity == "ok")
        #expect(after.votes == before.votes || after.votes == before.votes + Self.rows, "partial update: \(after.votes - before.votes) rows")
        #expect(killed, "the update finished before it could be killed; the test proved nothing")
        if killed { #expect(after.votes == before.votes) }
    }

    @Test("delete killed mid-write: all rows or none, file sound")
    func delete() throws {
        let scratch = TempDir()
        let db = try makeDemo(scratch)
        let killed = try killMidway(["delete", db, "--table", "movie", "--where", "year >= 1930"], db: db, walBytes: 1_000_000)
        let after = try check(db)
        #expect(after.integrity == "ok")
        let matching = try DatabaseQueue(path: db).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM movie WHERE year >= 1930") } ?? 0
        #expect(matching == 0 || after.count == Self.rows, "partial delete")
        #expect(killed)
        if killed { #expect(after.count == Self.rows) }
    }

    @Test("import killed mid-write: all rows or none, file sound")
    func importRows() throws {
        let scratch = TempDir()
        let db = try makeDemo(scratch)
        // Every movie again under new ids, as NDJSON.
        let file = scratch.path("rows.ndjson")
        FileManager.default.createFile(atPath: file, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        var chunk = ""
        for i in 1...Self.rows {
            chunk += "{\"id\": \(Self.rows + i), \"title\": \"copy \(i) with a long enough title to fill pages quickly\", \"year\": 2000, \"genre\": \"Drama\", \"votes\": 1}\n"
            if i % 10_000 == 0 { h.write(Data(chunk.utf8)); chunk = "" }
        }
        h.write(Data(chunk.utf8))
        try h.close()
        let killed = try killMidway(["import", db, "--table", "movie", file], db: db)
        let after = try check(db)
        #expect(after.integrity == "ok")
        #expect(after.count == Self.rows || after.count == 2 * Self.rows, "partial import: \(after.count)")
        #expect(killed)
        if killed { #expect(after.count == Self.rows) }
    }
}
