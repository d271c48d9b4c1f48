import Foundation
import Testing
import TestSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `faultline snapshot`: the real browser, headless, drawn to an SVG.
@Suite("faultline snapshot")
struct SnapshotCLITests {
    /// The texts of the SVG's `<text>` elements, or nil when it is not well-formed.
    func texts(_ svg: String) -> [String]? {
        final class Collect: NSObject, XMLParserDelegate {
            var texts: [String] = []
            var current: String?
            func parser(_ p: XMLParser, didStartElement e: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                if e == "text" { current = "" }
            }
            func parser(_ p: XMLParser, foundCharacters s: String) { current? += s }
            func parser(_ p: XMLParser, didEndElement e: String, namespaceURI: String?, qualifiedName: String?) {
                if e == "text", let c = current { texts.append(c); current = nil }
            }
        }
        let collect = Collect()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = collect
        return parser.parse() ? collect.texts : nil
    }

    @Test("keys move the cursor and open the memory panel with real figures; hostile values are escaped")
    func snapshot() throws {
        let scratch = TempDir()
        let db = try makeDatabase(scratch, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);
            INSERT INTO t(name) VALUES ('first'), ('<b>&amp;</b>'), ('esc ' || char(27) || '[31m bell ' || char(7)), (NULL);
            """)
        let out = scratch.path("screen.svg")
        let r = try CLI.run(["snapshot", db, "--table", "t", "--keys", "jj<Down>m", "--out", out, "--size", "90x12"])
        #expect(r.status == 0, "\(r.stderr)")
        let svg = try String(contentsOfFile: out, encoding: .utf8)
        let shown = try #require(texts(svg), "not well-formed")
        let all = shown.joined(separator: "\n")
        #expect(all.contains("first"))
        #expect(all.contains("<b>&amp;</b>"))
        #expect(all.contains("esc \\e[31m bell \\x07"))
        #expect(all.contains("∅"))
        #expect(all.contains("row 4 of 4"), "the cursor went down three rows: \(shown)")
        #expect(all.contains("Memory (m hides)"))
        // A real reading: this process has more than a megabyte resident.
        let rss = try #require(all.firstMatch(of: /RSS +([0-9.]+) MB/), "\(shown)")
        #expect((Double(rss.1) ?? 0) > 1, "\(rss.0)")
        #expect(!svg.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(svg.contains("fill=\"#11a8cd\""), "the header's cyan")
    }

    @Test("a picture never writes the file: edit keys are refused unless --allow-edits")
    func readOnlyUnlessAllowed() throws {
        let scratch = TempDir()
        let db = try makeDatabase(scratch, sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t(name) VALUES ('a'), ('b'), ('c');")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let out = scratch.path("screen.svg")
        let r = try CLI.run(["snapshot", db, "--table", "t", "--keys", "vDy", "--out", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before, "the file is byte for byte the same")
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
        let edited = try CLI.run(["snapshot", db, "--table", "t", "--keys", "vDy", "--out", out, "--allow-edits"])
        #expect(edited.status == 0, "\(edited.stderr)")
        #expect(try sqlite3(db, "SELECT count(*) FROM t") == "2", "with --allow-edits, v, D and y deleted the marked row")
    }

    @Test("a missing file, a bad size, an unknown key, an unwritable output: one line, non-zero, nothing created")
    func errors() throws {
        let scratch = TempDir()
        let db = try makeDatabase(scratch, sql: "CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        let missing = scratch.path("missing.sqlite")
        let out = scratch.path("s.svg")
        let cases: [([String], Int32, String)] = [
            (["snapshot", missing, "--out", out], 1, "no such file"),
            (["snapshot", db, "--out", out, "--size", "100by30"], 2, "--size must be COLSxROWS"),
            (["snapshot", db, "--out", out, "--keys", "j<Entr>"], 2, "unknown key <Entr>"),
            (["snapshot", db, "--out", scratch.path("no/such/folder/s.svg")], 1, "cannot write"),
            (["snapshot", db, "--table", "nope", "--out", out], 1, "no table or view named \"nope\""),
            (["snapshot", db], 2, "--out"),
        ]
        for (args, status, fragment) in cases {
            let r = try CLI.run(args)
            #expect(r.status == status, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(fragment), "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): one line, got \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a missing database is never created")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
