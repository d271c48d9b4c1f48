import ArgumentParser
import BatchStore
import Browser
import Foundation
import TerminalCore

/// `faultline snapshot DB … --keys "…" --out screen.svg`: the browser, run headless on an
/// in-memory screen, then drawn as an SVG.
struct Snapshot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw what the browser shows after some keys as an SVG picture (no terminal needed).",
        discussion: """
            Runs the real browser session on an in-memory screen of --size cells: it opens DB as \
            `faultline browse` would, presses each key of --keys in turn, waits after each until \
            everything the key started (loading, counting, searching) has finished, and writes \
            the screen, colours included, to --out.

            Keys: each character is its key; special keys go in angle brackets: \(KeyNotation.names) \
            (Ctrl with a letter, e.g. <C-d>; Alt with a letter, e.g. <M-b>). Names are case-insensitive; <lt> is a literal '<', as is \
            a '<' that opens no name. Example: --keys 'jjj<Enter><Esc>F'
            """)

    @Argument(help: "The SQLite file (it must exist); several files show as one result, as in browse. Or a PostgreSQL URL.", completion: .file())
    var databases: [String]

    @OptionGroup var view: ViewOptions

    @Option(help: "The keys to press (see above).")
    var keys: String = ""

    @Option(help: "Where to write the SVG.")
    var out: String

    @Option(help: "The screen's size in cells, COLSxROWS.")
    var size: String = "100x30"

    @Flag(help: "Let the keys change the file (D, U, u with their confirmations). Without it the file is opened read-only: a picture never writes the database (`:w FILE` in the keys still writes FILE).")
    var allowEdits = false

    func validate() throws {
        guard !databases.isEmpty else { throw ValidationError("give the SQLite file to draw") }
        _ = try screenSize()
        do { _ = try KeyNotation.parse(keys) } catch let error as KeyNotation.UnknownKey { throw ValidationError("--keys: \(error)") }
    }

    /// `--size` as columns and rows.
    func screenSize() throws -> (width: Int, height: Int) {
        let parts = size.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (20...1000).contains(w), (5...500).contains(h) else {
            throw ValidationError("--size must be COLSxROWS, 20–1000 columns and 5–500 rows (e.g. 100x30), not \(size)")
        }
        return (w, h)
    }

    func run() throws {
        let (width, height) = try screenSize()
        let keys = try KeyNotation.parse(self.keys)
        var view = self.view
        if !allowEdits { view.readOnly = true }
        let opened = try view.open(databases)
        let terminal = MemoryTerminal(width: width, height: height)
        terminal.colorsEnabled = true
        let browser = try opened.browser(backend: terminal, environment: .live)
        // Each step ends only when its effects have come back (send settles) and the idle work
        // (table counts, the eager copy) is done: the picture does not depend on timing.
        browser.start()
        while browser.idle() {}
        for key in keys where !browser.state.quit {
            browser.send(key)
            while browser.idle() {}
        }
        let svg = terminal.screen.svg(title: "faultline " + opened.title)
        do {
            try Data(svg.utf8).write(to: URL(fileURLWithPath: out), options: .atomic)
        } catch {
            throw BatchStoreError(.readOnly, "cannot write \(out): \((error as NSError).localizedDescription)")
        }
        print("wrote \(out) (\(width)x\(height))")
    }
}
