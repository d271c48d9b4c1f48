import Foundation
import GRDB
import Testing
import TestSupport

/// Several files as one result from the command line.
@Suite("Several stores from the command line", .tags(.slow), .timeLimit(slowTestLimit))
struct StoresCLITests {
    func make(_ scratch: TempDir) throws -> [String] {
        try ["y2023", "y2024"].enumerated().map { i, name in
            let path = scratch.path("\(name).sqlite")
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "CREATE TABLE sale(id INTEGER PRIMARY KEY, item TEXT, amount INTEGER)")
                for id in 1...4 { try db.execute(sql: "INSERT INTO sale VALUES (?, ?, ?)", arguments: [id, "item \(id)", id * 10 + i]) }
            }
            return path
        }
    }

    @Test("export sorts across files and says which store each row is from")
    func export() throws {
        let scratch = TempDir()
        let paths = try make(scratch)
        let r = try CLI.run(["export"] + paths + ["--table", "sale", "--where", "amount > 20", "--sort", "amount desc"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "store\tid\titem\tamount\ny2024\t4\titem 4\t41\ny2023\t4\titem 4\t40\ny2024\t3\titem 3\t31\ny2023\t3\titem 3\t30\ny2024\t2\titem 2\t21\n")
        let only = try CLI.run(["export"] + paths + ["--table", "sale", "--stores", "y2023", "--format", "csv", "--limit", "1"])
        #expect(only.stdout == "store,id,item,amount\r\ny2023,1,item 1,10\r\n", "\(only.stderr)")
        // --stores chooses stores, not their order: ties still go by the files' order.
        let both = try CLI.run(["export"] + paths + ["--table", "sale", "--stores", "y2024,y2023", "--format", "csv", "--limit", "2"])
        #expect(both.stdout == "store,id,item,amount\r\ny2023,1,item 1,10\r\ny2023,2,item 2,20\r\n", "\(both.stderr)")
        let dry = try CLI.run(["update"] + paths + ["--table", "sale", "--all", "--set", "amount = 0", "--stores", "y2024", "--dry-run"])
        #expect(dry.stderr.contains("would update 4 rows in 1 store (dry run"), "the stores chosen that have the table: \(dry.stderr)")
    }

    @Test("update and delete take --stores; without it they change every store; a schema difference is one line")
    func edits() throws {
        let scratch = TempDir()
        let paths = try make(scratch)
        func amounts(_ p: String) throws -> [Int] { try DatabaseQueue(path: p).read { try Int.fetchAll($0, sql: "SELECT amount FROM sale ORDER BY id") } }
        let u = try CLI.run(["update"] + paths + ["--table", "sale", "--all", "--set", "amount = amount + 100", "--stores", "y2024"])
        #expect(u.status == 0 && u.stdout == "4\n", "\(u.stderr)")
        #expect(try amounts(paths[0]) == [10, 20, 30, 40] && amounts(paths[1]) == [111, 121, 131, 141])
        let d = try CLI.run(["delete"] + paths + ["--table", "sale", "--where", "id == 1"])
        #expect(d.status == 0 && d.stdout == "2\n", "\(d.stderr)")
        #expect(try amounts(paths[0]).count == 3 && amounts(paths[1]).count == 3)
        let dry = try CLI.run(["delete"] + paths + ["--table", "sale", "--all", "--dry-run"])
        #expect(dry.stdout == "6\n")

        let odd = scratch.path("odd.sqlite")
        try DatabaseQueue(path: odd).write { try $0.execute(sql: "CREATE TABLE sale(id INTEGER PRIMARY KEY, item TEXT)") }
        let bad = try CLI.run(["export", paths[0], odd, "--table", "sale"])
        #expect(bad.status != 0 && bad.stderr == "faultline: sale differs between stores y2023 and odd: column \"amount\" is only in y2023\n")
        let wrong = try CLI.run(["export", paths[0], "--table", "sale", "--stores", "y2023"])
        #expect(wrong.status == 2 && wrong.stderr.contains("--stores needs several files"))
    }
}
