import Foundation
import Testing

/// STYLE.md's layout, checked: BatchStore's folders stack, and code in one folder never names a
/// type declared in a folder that builds on it (extensions of lower types live in the higher
/// folder that adds the feature).
@Suite("BatchStore's folders stack")
struct LayeringTests {
    /// Lowest first. Files directly in Sources/BatchStore (errors, values) are the base.
    static let order = ["", "Diagnostics", "Store", "Objects", "Predicate", "Fetching", "Batch", "Coordinator"]
    /// Names a collection declares for itself, which would match anywhere.
    static let ignored: Set<String> = ["Element", "Index", "Indices", "SubSequence", "Iterator", "Kind", "Key", "Entry", "Storage"]

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/BatchStore")
    }

    /// The text of a Swift file without comments and string literals.
    static func code(_ url: URL) throws -> String {
        let text = try String(contentsOf: url, encoding: .utf8)
        let noComments = text.replacingOccurrences(of: #"//[^\n]*"#, with: "", options: .regularExpression)
        return noComments.replacingOccurrences(of: #""(?:[^"\\\n]|\\.)*""#, with: "\"\"", options: .regularExpression)
    }

    static func files() throws -> [(url: URL, level: Int)] {
        var files: [(URL, Int)] = []
        for (level, folder) in order.enumerated() {
            let dir = folder.isEmpty ? root : root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where name.hasSuffix(".swift") {
                files.append((dir.appendingPathComponent(name), level))
            }
        }
        return files
    }

    @Test("every folder of Sources/BatchStore is in the order, and no type refers upward")
    func noUpwardReferences() throws {
        // The DocC catalog is documentation, not a layer.
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root.path).filter { !$0.hasSuffix(".swift") && !$0.hasSuffix(".docc") }
        #expect(Set(folders) == Set(Self.order.dropFirst()), "a new folder needs its place in the order")
        let files = try Self.files()
        let declaration = try NSRegularExpression(pattern: #"(?m)^\s*(?:(?:public|package|private|fileprivate|internal|final|indirect)\s+)*(?:class|struct|enum|protocol|typealias)\s+([A-Z]\w*)"#)
        var declaredAt: [String: Int] = [:]
        for file in files {
            let code = try Self.code(file.url)
            for match in declaration.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                if let range = Range(match.range(at: 1), in: code), !Self.ignored.contains(String(code[range])) {
                    declaredAt[String(code[range]), default: file.level] = min(declaredAt[String(code[range])] ?? file.level, file.level)
                }
            }
        }
        #expect(declaredAt.count > 50, "the scan found the declarations")
        var upward: [String] = []
        for file in files {
            let code = try Self.code(file.url)
            for (name, level) in declaredAt where level > file.level {
                if code.range(of: "\\b\(name)\\b", options: .regularExpression) != nil {
                    upward.append("\(file.url.lastPathComponent) (\(Self.order[file.level])) names \(name) (\(Self.order[level]))")
                }
            }
        }
        #expect(upward.isEmpty, "\(upward.sorted())")
    }
}
