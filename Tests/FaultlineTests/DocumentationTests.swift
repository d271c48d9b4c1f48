import Foundation
import Testing
import TestSupport

/// The README is a user's document and stays one: short, no issue numbers, every link resolving,
/// and naming the same verbs as `faultline --help` (as the command-line reference does).
@Suite("Documentation")
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// README.md, CHANGELOG.md and every Markdown file under Documentation/.
    static func markdownFiles() throws -> [String] {
        let documentation = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Documentation").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "Documentation/" + $0 }
        return ["README.md", "CHANGELOG.md"] + documentation
    }

    @Test("the README is at most 300 lines and names no issue and no round")
    func readmeIsShort() throws {
        let readme = try Self.read("README.md")
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 300, "README.md has \(lines.count) lines")
        let numbered = lines.enumerated().filter { _, line in
            line.range(of: #"\b(issue|round|PR)s? #?\d+|(?<![\w&/])#\d+\b"#, options: [.regularExpression, .caseInsensitive]) != nil
        }
        #expect(numbered.isEmpty, "\(numbered.map { "README.md:\($0.offset + 1): \($0.element)" })")
    }

    @Test("every relative link in the README, the CHANGELOG and Documentation/ resolves, anchors included")
    func linksResolve() throws {
        let files = try Self.markdownFiles()
        #expect(files.count >= 8, "\(files)")
        var broken: [String] = []
        for file in files {
            let text = try Self.read(file)
            let folder = (file as NSString).deletingLastPathComponent
            for link in Self.links(in: text) where !link.contains("://") && !link.hasPrefix("mailto:") {
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target = parts[0].isEmpty ? file : ((folder as NSString).appendingPathComponent(parts[0]) as NSString).standardizingPath
                guard FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(target).path) else {
                    broken.append("\(file): \(link) (no such file)")
                    continue
                }
                if parts.count == 2, target.hasSuffix(".md") {
                    let anchors = Self.anchors(in: try Self.read(target))
                    if !anchors.contains(parts[1]) { broken.append("\(file): \(link) (no such heading)") }
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    @Test("the README's verb table and the command-line reference name every verb of faultline --help, and only those")
    func verbsAgreeWithHelp() throws {
        let help = try CLI.run(["--help"])
        #expect(help.status == 0)
        // The SUBCOMMANDS section: one verb at the start of each entry.
        let subcommands = help.stdout.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let verbs = subcommands.split(separator: "\n").compactMap { line -> String? in
            line.firstMatch(of: /^  ([a-z][a-z-]*)( |$)/).map { String($0.1) }
        }
        #expect(verbs.count >= 9, "\(verbs)")
        let readme = try Self.read("README.md")
        let reference = try Self.read("Documentation/CommandLine.md")
        // The README's verb table: the rows of the section "The command line", `verb` first.
        let section = readme.components(separatedBy: "\n## The command line").dropFirst().first?
            .components(separatedBy: "\n## ").first ?? ""
        let tableVerbs = section.split(separator: "\n").compactMap { line -> String? in
            guard let match = line.firstMatch(of: /^\| `([a-z-]+)`/) else { return nil }
            return String(match.1)
        }
        #expect(Set(tableVerbs) == Set(verbs), "README: \(tableVerbs), faultline --help: \(verbs)")
        // The reference: a section for each verb (`## export`, `## update and delete`).
        let headings = reference.split(separator: "\n").filter { $0.hasPrefix("## ") }
        for verb in verbs {
            #expect(headings.contains { $0.split(separator: " ").contains(Substring(verb)) },
                    "Documentation/CommandLine.md has no section for \(verb)")
        }
        #expect(reference.contains("--generate-completion-script"), "the reference says how to get completion scripts")
    }

    @Test("the README's Swift example is, line for line, the one the BatchStore tests compile")
    func exampleCompiles() throws {
        let readme = try Self.read("README.md")
        let block = try #require(readme.firstMatch(of: /```swift\n((?:.|\n)*?)```/)).1
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "import BatchStore")
        let body = lines.dropFirst().joined(separator: "\n").trimmingCharacters(in: .newlines)
        let compiled = try Self.read("Tests/BatchStoreTests/ReadmeExampleTests.swift")
        #expect(compiled.contains("func readmeExample() throws {\n" + body + "\n}"),
                "README.md's example differs from Tests/BatchStoreTests/ReadmeExampleTests.swift: copy it there")
    }

    /// The targets of Markdown links `[text](target)` and `[text](target "title")`, and of
    /// reference definitions `[label]: target`, code spans and fenced code left out.
    static func links(in text: String) -> [String] {
        var links: [String] = []
        var fenced = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced else { continue }
            let plain = line.replacing(/`[^`]*`/, with: "")
            for match in plain.matches(of: /\]\(([^)\s]+)(?: +"[^"]*")?\)/) { links.append(String(match.1)) }
            if let definition = plain.firstMatch(of: /^ {0,3}\[[^\]]+\]: +(\S+)/) { links.append(String(definition.1)) }
        }
        return links
    }

    /// GitHub's anchors for the headings of a Markdown file (lower case, spaces to hyphens,
    /// punctuation dropped), outside fenced code.
    static func anchors(in text: String) -> Set<String> {
        var anchors: Set<String> = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, let match = line.firstMatch(of: /^#{1,6} +(.+)$/) else { continue }
            let slug = String(match.1).lowercased().unicodeScalars.compactMap { scalar -> String? in
                if scalar == " " { return "-" }
                if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) { return String(scalar) }
                return nil
            }.joined()
            var unique = slug
            var n = 1
            while anchors.contains(unique) { unique = "\(slug)-\(n)"; n += 1 }
            anchors.insert(unique)
        }
        return anchors
    }
}
