import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// `y` (the row, the marked rows, every row after `V`) and `Y` (the cell): encoded as
/// `faultline export` encodes them, to a file named in the message line, or to the clipboard
/// through OSC 52 when enabled.
@Suite("Copying: y and Y")
struct CopyTests {

    func browser(_ path: String, copyDirectory: String, osc52: Bool = false) throws -> (Browser, MemoryTerminal) {
        let term = MemoryTerminal(width: 100, height: 12)
        var options = BrowserOptions(table: "movie", batchSize: 3)
        options.copyDirectory = copyDirectory
        options.osc52 = osc52
        let b = try Browser(store: try PersistentStore(path: path), options: options, backend: term, environment: FakeFacts().environment)
        b.start()
        return (b, term)
    }

    func export(_ path: String, where predicate: String, format: String) throws -> Data {
        let r = try CLI.run(["export", path, "--table", "movie", "--where", predicate, "--sort", "id", "--format", format])
        #expect(r.status == 0, "\(r.stderr)")
        return Data(r.stdout.utf8)
    }

    @Test("reducer: y asks for a format naming what it copies; t c j s pick one; another key copies nothing")
    func reducer() {
        var s = BrowserState(width: 90, height: 10)
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: 50, cursor: 4, readOnly: nil, message: nil, result: 2))
        _ = s.reduce(.key(.char("y")))
        #expect(render(s, colors: false).lines.last?.hasPrefix("copy row 5 as: t TSV, c CSV, j JSON, s SQL INSERT (Esc: nothing)") == true)
        #expect(s.reduce(.key(.char("c"))).contains(.copy(CopyRequest(scope: .row(4), format: .csv, result: 2))))
        _ = s.reduce(.key(.char("y")))
        _ = s.reduce(.key(.char("x")))
        #expect(s.mode == .grid && s.messageIsError && s.message == "not a format: t TSV, c CSV, j JSON, s SQL INSERT; nothing copied")
        _ = s.reduce(.key(.char("l")))
        _ = s.reduce(.key(.char("Y")))
        #expect(render(s, colors: false).lines.last?.hasPrefix("copy the cell b as:") == true)
        #expect(s.reduce(.key(.char("j"))).contains(.copy(CopyRequest(scope: .cell(row: 4, column: "b"), format: .json, result: 2))))
        _ = s.reduce(.key(.char("V")))
        _ = s.reduce(.key(.char("y")))
        #expect(render(s, colors: false).lines.last?.hasPrefix("copy all 50 rows as:") == true)
        #expect(s.reduce(.key(.char("s"))).contains(.copy(CopyRequest(scope: .all, format: .sql, result: 2))))
    }

    @Test("y on marked rows writes, byte for byte, what faultline export writes for the same rows; the message names the file and counts the rows", arguments: ["tsv", "csv"])
    func markedToFile(format: String) throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let copies = dir.path("state")
        let (b, _) = try browser(path, copyDirectory: copies)
        // Mark ids 6, 3 and 4 (v moves down), out of order.
        b.send(keys("jjjjjvkkkkvv"))
        #expect(b.state.marked.count == 3)
        b.send(keys("y" + String(format.first ?? "t")))
        let file = copies + "/faultline-copy.\(format)"
        #expect(b.state.message == "copied 3 rows as \(format.uppercased()) to \(file)")
        let written = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(written == (try export(path, where: "id IN {3, 4, 6}", format: format)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: copies) == ["faultline-copy.\(format)"], "no temporary file left")
    }

    @Test("V then y j streams every row: the same bytes as export's JSON array; Y copies one cell as a one-column table")
    func allAndCell() throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let copies = dir.path("state")
        let (b, _) = try browser(path, copyDirectory: copies)
        b.send(keys("Vyj"))
        #expect(b.state.message == "copied 7 rows as JSON to \(copies)/faultline-copy.json")
        #expect(try Data(contentsOf: URL(fileURLWithPath: copies + "/faultline-copy.json")) == (try export(path, where: "TRUEPREDICATE", format: "json")))
        b.send(keys("Vjl"))
        b.send(keys("Yt"))
        #expect(b.state.message == "copied the cell title as TSV to \(copies)/faultline-copy.tsv")
        #expect(try String(contentsOfFile: copies + "/faultline-copy.tsv", encoding: .utf8) == "title\ntab\\tand\\nline\n")
    }

    @Test("with OSC 52 enabled, the row goes through the terminal as base64 only; decoded, it is the file's bytes; no file is written")
    func osc52() throws {
        let dir = TempDir()
        let path = try awkwardMovies(dir)
        let copies = dir.path("state")
        let (b, term) = try browser(path, copyDirectory: copies, osc52: true)
        b.send(keys("jjjjjys"))
        #expect(term.clipboardSequences.count == 1)
        let sequence = try #require(term.clipboardSequences.first)
        #expect(sequence.hasPrefix("\u{1B}]52;c;") && sequence.hasSuffix("\u{07}"))
        let payload = String(sequence.dropFirst(7).dropLast())
        #expect(payload.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+/=".contains($0)) }, "base64 only: the ESC in the title is not sent raw")
        let decoded = try #require(Data(base64Encoded: payload))
        #expect(String(decoding: decoded, as: UTF8.self) == "INSERT INTO \"movie\" (\"id\", \"title\", \"year\", \"rating\", \"poster\") VALUES (6, '東京\u{1B}[2J', 1953, 8.1, NULL);\n")
        #expect(b.state.message == "copied 1 row as SQL INSERT to the clipboard (OSC 52, \(decoded.count) bytes)")
        #expect(!FileManager.default.fileExists(atPath: copies + "/faultline-copy.sql"))
        #expect(term.text.allSatisfy { !$0.contains("\u{1B}") }, "the screen shows the value's escape, never the byte")
    }
}
