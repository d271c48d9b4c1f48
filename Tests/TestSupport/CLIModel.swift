import BatchStore
import Foundation

/// One definition of the command-line model test, run against a SQLite file
/// (`ModelCLITests`, which also asks the sqlite3 shell) and a PostgreSQL database
/// (`PostgresModelCLITests`): a deterministic random run of the verbs (update, delete, import
/// with each conflict policy and format, export) on a table with NULLs and non-ASCII text. After
/// every step the table is compared with a plain Swift model, and each export with the model. A
/// failure prints the shortest failing step sequence.
///
/// Predicates are ones whose meaning is the same in SQL and NSPredicate: integer comparisons,
/// `==` on text that is not NULL, `== nil`.
public enum CLIModel {
    /// Steps in `make test`; `make fuzz` sets FAULTLINE_FUZZ_STEPS for a longer run.
    public static let steps = Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_STEPS"] ?? "") ?? 60

    /// Where a run happens: a fresh table `t(id, n, s, r)` for each run.
    public struct Engine {
        public let name: String
        /// What the verbs are given: a file's path or a URL.
        public let target: String
        /// Texts the rows hold (PostgreSQL's text holds no NUL).
        public let texts: [String]
        /// Words a conflict's one-line error must contain.
        public let conflictWords: String
        /// Creates the table holding `rows`.
        public let create: ([Int64: Row]) throws -> Void
        /// Compares the table with `expected` (lines `id|n|text:HEX|r.3f` by id, NULL as `NULL`);
        /// nil when they agree, else what differs.
        public let compare: ([String]) throws -> String?
        /// The environment the verbs run in (nil: this process's).
        public let environment: [String: String]?

        public init(name: String, target: String, texts: [String], conflictWords: String, environment: [String: String]? = nil,
                    create: @escaping ([Int64: Row]) throws -> Void, compare: @escaping ([String]) throws -> String?) {
            self.name = name
            self.target = target
            self.texts = texts
            self.conflictWords = conflictWords
            self.environment = environment
            self.create = create
            self.compare = compare
        }
    }

    /// Runs `steps` random steps from `seed` on fresh engines from `make`; nil when every step
    /// agreed with the model, else the shortest failing sequence and what went wrong.
    public static func check(seed: UInt64, steps count: Int = steps, make: () throws -> Engine) throws -> String? {
        var random = SplitMix64(seed: seed)
        let texts = try make().texts
        let steps = (0..<count).map { _ in Step.random(&random, texts: texts) }
        guard let failure = try run(steps, make: make) else { return nil }
        // Shrink: drop steps one at a time while the run still fails.
        var shortest = steps
        var message = failure
        var i = 0
        while i < shortest.count {
            var candidate = shortest
            candidate.remove(at: i)
            if let m = try run(candidate, make: make) { shortest = candidate; message = m } else { i += 1 }
        }
        return "shortest failing sequence (\(shortest.count) of \(steps.count) steps):\n\(shortest.map { "  \($0)" }.joined(separator: "\n"))\n\(message)"
    }

    /// Texts that go into predicate and assignment literals: no backslash, NUL or control
    /// character, whose meaning inside a literal is the predicate language's business.
    public static let literalTexts = ["", "a", "b", "日本語", "😀 emoji", "naïve", "a,b", "\"q\""]

    // MARK: - Model

    public struct Row: Equatable {
        public var n: Int64?
        public var s: String?
        public var r: Double?
        public init(n: Int64? = nil, s: String? = nil, r: Double? = nil) {
            self.n = n
            self.s = s
            self.r = r
        }
    }

    enum Predicate: CustomStringConvertible {
        case nGreater(Int64), nAtMost(Int64), idIs(Int64), sIs(String), sIsNil, nIsNil
        var text: String {
            switch self {
            case .nGreater(let k): return "n > \(k)"
            case .nAtMost(let k): return "n <= \(k)"
            case .idIs(let k): return "id == \(k)"
            case .sIs(let s): return "s == '\(s)'"
            case .sIsNil: return "s == nil"
            case .nIsNil: return "n == nil"
            }
        }
        var description: String { text }
        func matches(_ id: Int64, _ row: Row) -> Bool {
            switch self {
            case .nGreater(let k): return row.n.map { $0 > k } ?? false
            case .nAtMost(let k): return row.n.map { $0 <= k } ?? false
            case .idIs(let k): return id == k
            case .sIs(let s): return row.s.map { Array($0.utf8) == Array(s.utf8) } ?? false
            case .sIsNil: return row.s == nil
            case .nIsNil: return row.n == nil
            }
        }
        static func random(_ g: inout SplitMix64) -> Predicate {
            switch g.below(6) {
            case 0: return .nGreater(Int64(g.below(60)) - 10)
            case 1: return .nAtMost(Int64(g.below(60)) - 10)
            case 2: return .idIs(Int64(1 + g.below(40)))
            case 3: return .sIs(g.pick(["a", "日本語", "naïve", "b"]))
            case 4: return .sIsNil
            default: return .nIsNil
            }
        }
    }

    enum Assignment: CustomStringConvertible {
        case addToN(Int64), nNil, setS(String), setR(Double), rNil
        var text: String {
            switch self {
            case .addToN(let k): return "n = n + \(k)"
            case .nNil: return "n = nil"
            case .setS(let s): return "s = '\(s)'"
            case .setR(let r): return "r = \(r)"
            case .rNil: return "r = nil"
            }
        }
        var description: String { text }
        func apply(_ row: inout Row) {
            switch self {
            case .addToN(let k): row.n = row.n.map { $0 + k }
            case .nNil: row.n = nil
            case .setS(let s): row.s = s
            case .setR(let r): row.r = r
            case .rNil: row.r = nil
            }
        }
    }

    /// One imported row: the id and the columns it gives (nil inside: NULL).
    struct ImportRow: CustomStringConvertible {
        var id: Int64
        var n: Int64??
        var s: String??
        var r: Double??
        var description: String {
            func show<T>(_ v: T??) -> String { v.map { $0.map { "\($0)".debugDescription } ?? "NULL" } ?? "-" }
            return "{id \(id), n \(show(n)), s \(show(s)), r \(show(r))}"
        }
    }

    enum Step: CustomStringConvertible {
        case update(Predicate, Assignment)
        case delete(Predicate)
        case importRows([ImportRow], policy: String, csv: Bool)
        case export(Predicate)

        public var description: String {
            switch self {
            case .update(let p, let a): return "update --where \"\(p)\" --set \"\(a)\""
            case .delete(let p): return "delete --where \"\(p)\""
            case .importRows(let rows, let policy, let csv): return "import --on-conflict \(policy) (\(csv ? "csv" : "ndjson")) \(rows)"
            case .export(let p): return "export --where \"\(p)\" --sort id --format ndjson"
            }
        }

        static func random(_ g: inout SplitMix64, texts: [String]) -> Step {
            switch g.below(7) {
            case 0, 1: return .update(.random(&g), g.pick([.addToN(Int64(g.below(9)) - 4), .nNil, .setS(g.pick(literalTexts)), .setR(Double(g.below(40)) / 4), .rNil]))
            case 2: return .delete(.random(&g))
            case 3, 4, 5:
                let csv = g.below(3) == 0
                let rows = (0..<(1 + g.below(4))).map { _ -> ImportRow in
                    // CSV gives every column (NULL as an empty field); NDJSON may leave some out.
                    func maybe<T>(_ value: T?) -> T?? { csv || g.below(3) != 0 ? .some(value) : .none }
                    return ImportRow(id: Int64(1 + g.below(45)),
                                     n: maybe(g.below(5) == 0 ? nil : Int64(g.below(50)) - 5),
                                     s: maybe(g.below(5) == 0 ? nil : g.pick(texts)),
                                     r: maybe(g.below(5) == 0 ? nil : Double(g.below(40)) / 4))
                }
                return .importRows(rows, policy: g.pick(["fail", "ignore", "upsert"]), csv: csv)
            default: return .export(.random(&g))
            }
        }
    }

    // MARK: - One run

    /// Runs `steps` on a fresh engine from `make`; returns what went wrong first, or nil.
    static func run(_ steps: [Step], make: () throws -> Engine) throws -> String? {
        let engine = try make()
        let scratch = TempDir()
        let target = engine.target
        var model: [Int64: Row] = [:]
        var g = SplitMix64(seed: 5)
        for id in Int64(1)...30 {
            model[id] = Row(n: g.below(6) == 0 ? nil : Int64(g.below(50)), s: g.below(6) == 0 ? nil : g.pick(engine.texts), r: g.below(6) == 0 ? nil : Double(g.below(40)) / 4)
        }
        try engine.create(model)
        func cli(_ args: [String]) throws -> CLI.Result { try CLI.run(args, environment: engine.environment) }
        for (index, step) in steps.enumerated() {
            let where_ = "step \(index + 1) (\(step))"
            switch step {
            case .update(let p, let a):
                let r = try cli(["update", target, "--table", "t", "--where", p.text, "--set", a.text])
                guard r.status == 0 else { return "\(where_): exit \(r.status): \(r.stderr)" }
                let changed = model.filter { p.matches($0.key, $0.value) }.count
                for (id, row) in model where p.matches(id, row) { var new = row; a.apply(&new); model[id] = new }
                guard r.stdout == "\(changed)\n" else { return "\(where_): printed \(r.stdout.debugDescription), the model changed \(changed)" }
            case .delete(let p):
                let r = try cli(["delete", target, "--table", "t", "--where", p.text])
                guard r.status == 0 else { return "\(where_): exit \(r.status): \(r.stderr)" }
                let doomed = model.filter { p.matches($0.key, $0.value) }.map(\.key)
                for id in doomed { model[id] = nil }
                guard r.stdout == "\(doomed.count)\n" else { return "\(where_): printed \(r.stdout.debugDescription), the model deleted \(doomed.count)" }
            case .importRows(let rows, let policy, let csv):
                let file = scratch.path("rows.\(csv ? "csv" : "ndjson")")
                try (csv ? csvFile(rows) : ndjsonFile(rows)).write(to: URL(fileURLWithPath: file))
                let r = try cli(["import", target, "--table", "t", file, "--on-conflict", policy])
                var next = model
                var conflict = false
                for row in rows {
                    if var existing = next[row.id] {
                        switch policy {
                        case "fail": conflict = true
                        case "upsert":
                            if let n = row.n { existing.n = n }
                            if let s = row.s { existing.s = s }
                            if let v = row.r { existing.r = v }
                            next[row.id] = existing
                        default: break
                        }
                    } else {
                        next[row.id] = Row(n: row.n ?? nil, s: row.s ?? nil, r: row.r ?? nil)
                    }
                }
                if conflict {
                    guard r.status == 1, r.stderr.contains(engine.conflictWords), r.stderr.split(separator: "\n").count == 1 else {
                        return "\(where_): a conflict under fail should exit 1 with one line; got \(r.status): \(r.stderr)"
                    }
                } else {
                    guard r.status == 0 else { return "\(where_): exit \(r.status): \(r.stderr)" }
                    model = next
                }
            case .export(let p):
                let r = try cli(["export", target, "--table", "t", "--where", p.text, "--sort", "id", "--format", "ndjson"])
                guard r.status == 0 else { return "\(where_): exit \(r.status): \(r.stderr)" }
                let expected = model.keys.sorted().filter { p.matches($0, model[$0] ?? Row()) }.map { id -> String in
                    let row = model[id] ?? Row()
                    return "{\"id\":\(id),\"n\":\(row.n.map(String.init) ?? "null"),\"s\":\(row.s.map(jsonString) ?? "null"),\"r\":\(row.r.map { "\($0)" } ?? "null")}"
                }
                let lines = r.stdout.split(separator: "\n").map(String.init)
                guard lines == expected else { return "\(where_): export differs from the model:\n\(lines)\nexpected\n\(expected)" }
            }
            if let problem = try engine.compare(expectedLines(model)) { return "\(where_): \(engine.name): \(problem)" }
        }
        return nil
    }

    /// The model as the engines' compare reads the table: `id|n|text:HEX|r` by id, the text's
    /// UTF-8 in upper-case hex, the real with three decimals.
    public static func expectedLines(_ model: [Int64: Row]) -> [String] {
        func hex(_ s: String) -> String { s.utf8.map { String(format: "%02X", $0) }.joined() }
        return model.keys.sorted().map { id -> String in
            let row = model[id] ?? Row()
            return "\(id)|\(row.n.map(String.init) ?? "NULL")|\(row.s.map { "text:" + hex($0) } ?? "NULL")|\(row.r.map { String(format: "%.3f", $0) } ?? "NULL")"
        }
    }

    static func jsonString(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if c.value < 0x20 || (c.value >= 0x7F && c.value < 0xA0) || c.value == 0x2028 || c.value == 0x2029 { out += String(format: "\\u%04x", c.value) } else { out.unicodeScalars.append(c) }
            }
        }
        return out + "\""
    }

    static func ndjsonFile(_ rows: [ImportRow]) -> Data {
        Data(rows.map { row -> String in
            var parts = ["\"id\":\(row.id)"]
            if let n = row.n { parts.append("\"n\":\(n.map(String.init) ?? "null")") }
            if let s = row.s { parts.append("\"s\":\(s.map(jsonString) ?? "null")") }
            if let r = row.r { parts.append("\"r\":\(r.map { "\($0)" } ?? "null")") }
            return "{" + parts.joined(separator: ",") + "}\n"
        }.joined().utf8)
    }

    /// CSV as RFC 4180 has it, written here independently of the exporter: every field quoted
    /// except NULL (an empty unquoted field).
    static func csvFile(_ rows: [ImportRow]) -> Data {
        func field(_ s: String?) -> String { s.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" } ?? "" }
        var text = "id,n,s,r\r\n"
        for row in rows {
            let n: Int64? = row.n ?? nil
            let r: Double? = row.r ?? nil
            let fields: [String] = [String(row.id), n.map { String($0) } ?? "", field(row.s ?? nil), r.map { "\($0)" } ?? ""]
            text += fields.joined(separator: ",") + "\r\n"
        }
        return Data(text.utf8)
    }
}
