import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore
import TestSupport

/// Keys typed while work runs mean what they mean when typed after it: a model-based random run.
/// The model is the browser itself, fed each key only once the work before it has ended (a slow
/// user); the run types the same keys all at once, so the browser reads them while its loads run
/// (a fast user): the keys that act at once, those that wait, the sorts that replace a load and
/// `G`'s last rows during a load must all leave the same cursor, sort, filter, columns and marks.
/// Whichever moment each key is read at, the outcome is the same, so the run is deterministic in
/// what it checks; a disagreement is shrunk to the fewest keys that still disagree.
@Suite("Keys typed during work", .tags(.slow), .timeLimit(slowTestLimit))
struct TypedDuringWorkTests {
    static let alphabet: [Key] = [
        .char("j"), .char("j"), .char("k"), .char("h"), .char("l"), .pageDown, .pageUp, .ctrl("d"), .char("g"), .char("G"),
        .char("s"), .char("S"), .char("-"), .char("+"), .char(">"), .char("<"), .char("v"), .char("r"),
        // :N (typed into a prompt opened during the load, or after), with its digits and Enter.
        .char(":"), .char("1"), .char("5"), .char("0"), .char("0"), .enter, .backspace,
    ]

    struct Outcome: Equatable, CustomStringConvertible {
        var cursor: Int, column: Int, count: Int, sort: String, filter: String, hidden: [Int], widths: [Int: Int], marked: Int
        var description: String { "cursor \(cursor) column \(column) of \(count), sort \(sort), filter \(filter), hidden \(hidden), widths \(widths), \(marked) marked" }
    }

    static func outcome(_ b: Browser) -> Outcome {
        let s = b.state
        return Outcome(cursor: s.cursorRow, column: s.cursorColumn, count: s.count, sort: s.sort.map { "\($0)" } ?? "none", filter: s.filter,
                       hidden: s.columnView.hidden.sorted(), widths: s.columnView.widths, marked: s.marks.map { $0.all ? -1 : $0.ids.count } ?? 0)
    }

    /// The keys sent one at a time, each after the work before it ended.
    static func slow(_ keys: [Key], path: String) throws -> Outcome {
        let term = MemoryTerminal(width: 80, height: 14)
        let b = try Browser(store: try PersistentStore(path: path, options: .init(readOnly: true)), options: BrowserOptions(table: "n", sort: "name"), backend: term)
        b.start()
        for key in keys { b.send(key) }
        return outcome(b)
    }

    /// The keys typed at once as the sorted open starts: read while it (and what they start) runs.
    static func fast(_ keys: [Key], path: String) throws -> Outcome {
        let term = MemoryTerminal(width: 80, height: 14)
        let b = try Browser(store: try PersistentStore(path: path, options: .init(readOnly: true)), options: BrowserOptions(table: "n", sort: "name"), backend: term)
        term.keys = keys
        b.start()
        while !term.keys.isEmpty { b.send(term.keys.removeFirst()) }
        return outcome(b)
    }

    @Test("random keys typed as a sorted load of 200,000 rows starts leave what the same keys typed one by one after each piece of work leave")
    func typedDuringWorkIsTypedAfter() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER, name TEXT);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
            INSERT INTO n SELECT x, (x * 7919) % 1000, 'row ' || ((x * 104729) % 100003) FROM c;
            """)
        var rng = SplitMix64(seed: 2026)
        let runs = Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_RUNS"] ?? "") ?? 12
        for run in 0..<runs {
            let keys = (0..<(8 + rng.below(16))).map { _ in Self.alphabet[rng.below(Self.alphabet.count)] }
            let expected = try Self.slow(keys, path: path)
            let got = try Self.fast(keys, path: path)
            guard got != expected else { continue }
            // Shrink: drop keys while the two still disagree.
            var shortest = keys
            var i = 0
            while i < shortest.count {
                var fewer = shortest
                fewer.remove(at: i)
                if try Self.slow(fewer, path: path) != Self.fast(fewer, path: path) { shortest = fewer } else { i += 1 }
            }
            Issue.record("run \(run): typed during work \(got), typed after \(expected); shortest disagreeing keys: \(shortest)")
            return
        }
    }
}
