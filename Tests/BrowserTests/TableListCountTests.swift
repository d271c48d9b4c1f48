import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TestSupport

/// The table list counts each table once and keeps the count: a return to the list counts again
/// only the tables this browser edited since and, when another writer committed, every table.
@Suite struct TableListCountTests {
    @Test("returning to the table list recounts nothing when nothing changed, and every table after an edit here or another writer's commit")
    func countsAreKeptUntilTheDataChanges() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE a(id INTEGER PRIMARY KEY, v); INSERT INTO a VALUES (1, 1), (2, 2), (3, 3);
            CREATE TABLE b(id INTEGER PRIMARY KEY, v); INSERT INTO b VALUES (1, 1);
            """)
        let (b, _) = try makeBrowser(path, width: 80, height: 12)
        var lines: [String] = []
        b.log = { lines.append($0) }
        while b.idle() {}
        #expect(b.state.mode == .picker)
        let screen = render(b.state).lines
        #expect(screen.contains { $0.contains(" a ") && $0.contains("3 rows") }, "\(screen)")
        #expect(screen.contains { $0.contains(" b ") && $0.contains("1 row ") && !$0.contains("1 rows") }, "\(screen)")
        lines = []
        // Open a, come back: nothing is counted again.
        b.send([.enter, .escape])
        while b.idle() {}
        #expect(b.state.mode == .picker && !lines.contains { $0.hasPrefix("counted") }, "\(lines)")
        #expect(b.state.tables.map(\.count) == [3, 1])
        // Delete a row of a here: a alone is counted again.
        b.send([.enter, .char("v"), .char("D")])
        b.send(.char("y"))
        lines = []
        b.send(.escape)
        while b.idle() {}
        // Every table: an edit may cascade, and an undo may change another table than this one.
        #expect(lines.filter { $0.hasPrefix("counted") }.sorted() == ["counted a: 2 rows", "counted b: 1 rows"], "\(lines)")
        // Another writer commits to b: on the next return, both are counted again.
        try direct(path) { try $0.execute(sql: "INSERT INTO b VALUES (2, 2)") }
        b.send(.enter)
        lines = []
        b.send(.escape)
        while b.idle() {}
        #expect(lines.filter { $0.hasPrefix("counted") }.sorted() == ["counted a: 2 rows", "counted b: 2 rows"], "\(lines)")
        #expect(b.state.tables.map(\.count) == [2, 2])
    }
}
