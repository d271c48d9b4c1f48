import Foundation
import GRDB
import Testing

@Suite(.serialized) struct EditCLITests {
    func makeDemo(_ scratch: Scratch) throws -> String {
        let path = scratch.path("d.sqlite")
        let r = try CLI.run(["demo", "--rows", "5000", "--output", path])
        #expect(r.status == 0)
        return path
    }

    @Test func updateAndDeleteChangeExactlyTheRowsSQLiteSelects() throws {
        let scratch = Scratch()
        let path = try makeDemo(scratch)
        let q = try DatabaseQueue(path: path)
        let noirBefore = try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } ?? 0
        let noirCount = try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE genre = 'Noir' AND year < 1950") } ?? 0
        let dry = try CLI.run(["update", path, "--table", "movie", "--where", "genre == 'Noir' AND year < 1950", "--set", "votes = votes + 3", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == "\(noirCount)\n" && dry.stderr.contains("dry run"))
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } == noirBefore)
        let run = try CLI.run(["update", path, "--table", "movie", "--where", "genre == 'Noir' AND year < 1950", "--set", "votes = votes + 3, title = lowercase(title)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "\(noirCount)\n")
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT sum(votes) FROM movie WHERE genre = 'Noir' AND year < 1950") } == noirBefore + 3 * noirCount)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie WHERE genre = 'Noir' AND year < 1950 AND title != lower(title)") } == 0)

        let doomed = try q.read { db in try Int64.fetchAll(db, sql: "SELECT m.id FROM movie m JOIN director d ON d.id = m.director_id WHERE d.name LIKE 'Agnès%' AND m.rating > 9 ORDER BY m.id") }
        let del = try CLI.run(["delete", path, "--table", "movie", "--where", "director.name BEGINSWITH 'Agnès' AND rating > 9", "--result", "ids"])
        #expect(del.status == 0, "\(del.stderr)")
        let uris = del.stdout.split(separator: "\n").map(String.init)
        #expect(Set(uris) == Set(doomed.map { "x-batchstore://d/movie/r\($0)" }))
        #expect(!doomed.isEmpty)
        #expect(try q.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM movie") } == 5000 - doomed.count)
    }

    @Test func badEditsExitTwoAndLeaveTheFileUntouched() throws {
        let scratch = Scratch()
        let path = try makeDemo(scratch)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let cases: [[String]] = [
            ["update", path, "--table", "movie", "--all", "--set", "votes = votes +"],
            ["update", path, "--table", "movie", "--all", "--set", "votez = 1"],
            ["update", path, "--table", "movie", "--where", "year >", "--set", "votes = 1"],
            ["update", path, "--table", "movie", "--set", "votes = 1"],
            ["delete", path, "--table", "movie"],
            ["delete", path, "--table", "movie", "--where", "colour == 'red'"],
            ["update", path, "--table", "movie", "--all", "--set", "votes = 1", "--where", "year > 1"],
        ]
        for args in cases {
            let r = try CLI.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        let missing = scratch.path("nope.sqlite")
        let r = try CLI.run(["delete", missing, "--table", "movie", "--all"])
        #expect(r.status == 1 && r.stderr.contains("no such file"))
        #expect(!FileManager.default.fileExists(atPath: missing))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
