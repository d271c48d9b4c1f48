import Foundation
import Testing

/// Rules every file under Sources/ keeps (STYLE.md): no force unwraps, `try!`, `as!` or implicitly
/// unwrapped optionals outside tests.
@Suite("Source rules")
struct SourceRulesTests {
    /// The package's Sources/ folder, found from this file's path.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    @Test("no force unwrap, try!, as! or implicitly unwrapped optional in Sources/")
    func noForceUnwraps() throws {
        let files = (FileManager.default.enumerator(atPath: Self.sources.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count > 40, "Sources/ not found at \(Self.sources.path)")
        var findings: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            let lines = text.components(separatedBy: "\n")
            for finding in SwiftSource(text).forceUnwraps() {
                let line = finding.line <= lines.count ? lines[finding.line - 1].trimmingCharacters(in: .whitespaces) : ""
                findings.append("Sources/\(file):\(finding): \(line)")
            }
        }
        #expect(findings.isEmpty, "\(findings.count) found:\n\(findings.joined(separator: "\n"))")
    }

    @Test("the scanner finds every kind and ignores negation, !=, comments and string text")
    func scanner() {
        let clean = #"""
            if !done && a != b && !(x == y) { return [!flag] }
            let s = "wow! \"x!\" \\" + "tab\t!" // not done!
            /* a block! /* nested! */ still comment! */
            let raw = #"raw! \(notCode!) "quoted!" "# + """
                multi-line!
                "quoted!" \\(x!)
                """
            #if !os(macOS)
            let ok = a !== b && c ?? !d
            #endif
            let closure = { !$0.isEmpty }
            """#
        #expect(SwiftSource(clean).forceUnwraps() == [], "\(SwiftSource(clean).forceUnwraps())")
        let dirty = #"""
            let a = dict[key]!
            let b = try! f()
            let c = x as! Int
            var d: String!
            let e = f()!.count
            let g = "value \(optional!) here"
            let h: Array<Int>! = nil
            let i = y!
            """#
        let found = SwiftSource(dirty).forceUnwraps()
        #expect(found.map(\.line) == [1, 2, 3, 4, 5, 6, 7, 8], "\(found)")
        let other = "force unwrap or implicitly unwrapped optional"
        #expect(found.map(\.what) == [other, "try!", "as!", other, other, other, other, other])
    }
}
