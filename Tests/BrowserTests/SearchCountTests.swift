import BatchStore
import Browser
import Foundation
import Testing
import TestSupport

/// `/` finds the first match at once and then says how many rows match, counted on the second
/// connection: the count a model of the rows gives, within the filter, kept for `n` and `N`, and
/// counted again for a new text, a new column or a new result.
@Suite struct SearchCountTests {
    @Test("a search's status line gains the number of matching rows: the model's count, within the filter, not recounted by n")
    func searchSaysHowManyRowsMatch() throws {
        let dir = TempDir()
        // Every 7th name holds "Forest" in some case; numbers searched as text; non-ASCII text.
        var names: [String] = []
        for i in 1...3_000 {
            names.append(i % 7 == 0 ? ["The Forest \(i)", "forest", "FORESTRY é \(i)"][i % 3] : (i % 11 == 0 ? "Förest \(i)" : "row \(i)"))
        }
        let values = names.enumerated().map { "(\($0.offset + 1), \($0.offset % 5), '\($0.element)')" }.joined(separator: ", ")
        let path = try makeDatabase(dir, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, name TEXT); INSERT INTO t VALUES \(values);")
        let (b, _) = try makeBrowser(path, width: 120, height: 20, options: BrowserOptions(table: "t"))
        func model(_ text: String, k: Int? = nil) -> Int {
            names.enumerated().filter { i, name in
                (k == nil || i % 5 == k) && name.folding(options: .caseInsensitive, locale: nil).contains(text.folding(options: .caseInsensitive, locale: nil))
            }.count
        }
        b.send(keys("l") + [.char("l"), .char("/")] + keys("forest") + [.enter])
        // The row comes at once; the count when the second connection has it.
        b.settleReads()
        #expect(b.state.message == "/forest: \(group(model("forest"))) rows match", "\(b.state.message ?? "")")
        let first = b.state.cursorRow
        b.send(.char("n"))
        b.settleReads()
        #expect(b.state.cursorRow > first)
        #expect(b.state.message == "/forest: \(group(model("forest"))) rows match", "n keeps the count: \(b.state.message ?? "")")
        // Another text, counted again; one row.
        b.send([.char("/")] + keys("forest 2982") + [.enter])
        b.settleReads()
        #expect(b.state.message == "/forest 2982: 1 row matches", "\(b.state.message ?? "")")
        // Within a filter.
        b.send([.char("f")] + keys("k == 2") + [.enter, .char("/")] + keys("FOREST") + [.enter])
        b.settleReads()
        #expect(b.state.count == 600)
        #expect(b.state.message == "/FOREST: \(group(model("forest", k: 2))) rows match", "\(b.state.message ?? "")")
        // A column searched as text: numbers.
        b.send([.char("h"), .char("/")] + keys("2") + [.enter])
        b.settleReads()
        #expect(b.state.message == "/2: 600 rows match", "every k is 2 here: \(b.state.message ?? "")")
        // Not found: no count asked.
        b.send([.char("/")] + keys("zzz") + [.enter])
        #expect(b.state.message == "not found: zzz")
    }
}
