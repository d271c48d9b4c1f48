import BatchStore
import Browser
import Foundation
import TerminalCore
import Testing

/// The help (`?`) is where a newcomer copies a first filter and a first update from: its examples
/// must be ones that do something on the demo database the browser opens with no arguments.
@Suite("The help's examples match rows in the demo")
struct HelpExamplesTests {
    @Test("the filter example from ? selects some of the demo's movies, and the update example offers to change them")
    func examplesMatchTheDemo() throws {
        let dir = TempDir()
        let db = try CLI.demo(rows: 20_000, at: dir.path("demo.sqlite"))
        let (b, terminal) = try makeBrowser(db, width: 100, height: 90, options: BrowserOptions(table: "movie"))
        let total = b.state.count
        #expect(total == 20_000)
        b.send(.char("?"))
        let help = terminal.screen.lines
        func example(after marker: String) throws -> String {
            let line = try #require(help.first { $0.contains(marker) }, "\(marker) in \(help)")
            let range = try #require(line.range(of: marker))
            return line[range.upperBound...].trimmingCharacters(in: .whitespaces)
        }
        let filter = try example(after: "filter with a predicate: ")
        let update = try example(after: "batch-update: ")
        b.send(.escape)
        b.send([.char("f")] + Array(repeating: Key.backspace, count: 40) + filter.map { Key.char($0) } + [.enter])
        #expect(b.state.filter == filter && !b.state.messageIsError, "\(filter): \(b.state.message ?? "")")
        #expect(b.state.count > 0 && b.state.count < total, "\(filter) matched \(b.state.count) of \(total)")
        let matched = b.state.count
        b.send([.char("U")] + update.map { Key.char($0) } + [.enter])
        guard case .confirm(.update(let n, let assignments, _, _, _)) = b.state.mode else {
            Issue.record("U \(update) asked nothing: \(b.state.message ?? "")")
            return
        }
        #expect(n == matched && assignments == update)
        b.send(.char("n"))
    }
}
