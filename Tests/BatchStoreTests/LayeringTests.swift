import Foundation
import Testing

/// STYLE.md's layout, checked for both engines: each module's folders stack, and code in one
/// folder never names a type declared in a folder that builds on it (extensions of lower types
/// live in the higher folder that adds the feature).
@Suite("The engines' folders stack")
struct LayeringTests {
    /// A module and its folders, lowest first; `""` stands for files directly in the module's
    /// folder (a module without it has none there).
    struct Layout: CustomTestStringConvertible, Sendable {
        let module: String
        let order: [String]
        var testDescription: String { module }
    }

    static let layouts = [
        // The engine-neutral core (values, errors, object IDs, objects and the object graph, the
        // predicate language and its dialect walk, fetch requests, the batched result and its
        // seam, the contexts' contracts, batch request types, merging); then SQLite's engine:
        // diagnostics; the store (connection, schema); contexts; the predicate compiler; batched
        // fetching; batch requests; several stores.
        Layout(module: "BatchStore", order: ["Core", "Diagnostics", "Store", "Objects", "Predicate", "Fetching", "Batch", "Coordinator"]),
        // Value kinds; the connection (URL, password file, session, text functions); the schema
        // and store; the predicate compiler; the context's objects; batched fetching (ID table,
        // result source, sweeps, frequencies); batch requests, undo and edits through a result.
        Layout(module: "BatchStorePostgres", order: ["", "Values", "Connection", "Store", "Predicate", "Objects", "Fetching", "Batch"]),
    ]
    /// Names a collection declares for itself, which would match anywhere.
    static let ignored: Set<String> = ["Element", "Index", "Indices", "SubSequence", "Iterator", "Kind", "Key", "Entry", "Storage"]

    static func root(_ layout: Layout) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/\(layout.module)")
    }

    /// The text of a Swift file without comments and string literals.
    static func code(_ url: URL) throws -> String {
        let text = try String(contentsOf: url, encoding: .utf8)
        let noComments = text.replacingOccurrences(of: #"//[^\n]*"#, with: "", options: .regularExpression)
        return noComments.replacingOccurrences(of: #""(?:[^"\\\n]|\\.)*""#, with: "\"\"", options: .regularExpression)
    }

    static func files(_ layout: Layout) throws -> [(url: URL, level: Int)] {
        var files: [(URL, Int)] = []
        let root = root(layout)
        for (level, folder) in layout.order.enumerated() {
            let dir = folder.isEmpty ? root : root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where name.hasSuffix(".swift") {
                files.append((dir.appendingPathComponent(name), level))
            }
        }
        return files
    }

    @Test("every folder of the module is in the order, and no type refers upward", arguments: layouts)
    func noUpwardReferences(_ layout: Layout) throws {
        // The DocC catalog is documentation, not a layer.
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root(layout).path).filter { !$0.hasSuffix(".swift") && !$0.hasSuffix(".docc") }
        #expect(Set(folders) == Set(layout.order.filter { !$0.isEmpty }), "a new folder needs its place in the order")
        if !layout.order.contains("") {
            let loose = try FileManager.default.contentsOfDirectory(atPath: Self.root(layout).path).filter { $0.hasSuffix(".swift") }
            #expect(loose.isEmpty, "files directly in Sources/\(layout.module) need a folder: \(loose)")
        }
        let files = try Self.files(layout)
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
                    upward.append("\(file.url.lastPathComponent) (\(layout.order[file.level])) names \(name) (\(layout.order[level]))")
                }
            }
        }
        #expect(upward.isEmpty, "\(upward.sorted())")
    }

    /// The step toward a core target that does not link GRDB: nothing in BatchStore's `Core`
    /// folder imports GRDB or SQLite's C API, and BatchStorePostgres imports neither at all (it
    /// reaches SQLite's engine only through BatchStore's API).
    @Test("the engine-neutral core and the PostgreSQL engine import neither GRDB nor SQLite")
    func coreImportsNoSQLite() throws {
        var offenders: [String] = []
        for layout in Self.layouts {
            for file in try Self.files(layout) where layout.module == "BatchStorePostgres" || layout.order[file.level] == "Core" {
                let text = try String(contentsOf: file.url, encoding: .utf8)
                let anyImport = #"(?m)^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?(GRDB|GRDBSQLite|CSQLite\w*|SQLite3)\b"#
                if text.range(of: anyImport, options: .regularExpression) != nil {
                    offenders.append("\(layout.module)/\(file.url.lastPathComponent)")
                }
            }
        }
        #expect(try Self.files(Self.layouts[0]).filter { Self.layouts[0].order[$0.level] == "Core" }.count > 30, "the scan found the core")
        #expect(offenders.isEmpty, "\(offenders.sorted())")
    }
}
