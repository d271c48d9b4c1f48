import BatchStore
import Foundation
import GRDB
import Testing
import TestSupport

/// A model-based random run: random predicates over a table with NULLs, every storage class in an
/// untyped column, a DATE column, non-ASCII text and a to-one relationship (some of it dangling),
/// compiled to SQL by BatchStore and evaluated by a plain Swift model of NSPredicate's documented
/// semantics. Every predicate is also checked negated. A disagreement is shrunk to the smallest
/// predicate that still disagrees and reported with the rows in question.
@Suite(.tags(.slow), .timeLimit(slowTestLimit)) struct PredicateModelTests {
    /// Predicates per run: 1,500 in `make test`, more with FAULTLINE_FUZZ_RUNS (`make fuzz`).
    static let runs = max(1, (Int(ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_RUNS"] ?? "") ?? 4000) * 3 / 8)

    typealias Row = [String: SQLValue]

    /// A predicate as text with its meaning in Swift.
    indirect enum Tree {
        case leaf(String, (Row) -> Bool)
        case not(Tree)
        case and(Tree, Tree)
        case or(Tree, Tree)

        var format: String {
            switch self {
            case .leaf(let f, _): return f
            case .not(let t): return "NOT (\(t.format))"
            case .and(let a, let b): return "(\(a.format)) AND (\(b.format))"
            case .or(let a, let b): return "(\(a.format)) OR (\(b.format))"
            }
        }

        func evaluate(_ row: Row) -> Bool {
            switch self {
            case .leaf(_, let f): return f(row)
            case .not(let t): return !t.evaluate(row)
            case .and(let a, let b): return a.evaluate(row) && b.evaluate(row)
            case .or(let a, let b): return a.evaluate(row) || b.evaluate(row)
            }
        }

        /// Smaller trees to try while shrinking.
        var smaller: [Tree] {
            switch self {
            case .leaf: return []
            case .not(let t): return [t] + t.smaller.map { .not($0) }
            case .and(let a, let b): return [a, b] + a.smaller.map { .and($0, b) } + b.smaller.map { .and(a, $0) }
            case .or(let a, let b): return [a, b] + a.smaller.map { .or($0, b) } + b.smaller.map { .or(a, $0) }
            }
        }
    }

    // MARK: The model: NSPredicate's comparisons on stored values

    static func fold(_ v: SQLValue, _ flags: Int) -> SQLValue {
        guard flags != 0, case .text(let s) = v else { return v }
        var o: String.CompareOptions = []
        if flags & 1 != 0 { o.insert(.caseInsensitive) }
        if flags & 2 != 0 { o.insert(.diacriticInsensitive) }
        return .text(s.folding(options: o, locale: nil))
    }

    /// `==`: nil equals nil; numbers by value; text, blobs by content; never across kinds.
    static func equal(_ a: SQLValue, _ b: SQLValue, _ flags: Int = 0) -> Bool {
        switch (fold(a, flags), fold(b, flags)) {
        case (.null, .null): return true
        case (.text(let x), .text(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.blob(let x), .blob(let y)): return x == y
        case (let x, let y):
            if let p = x.doubleValue, let q = y.doubleValue { return p == q }
            return false
        }
    }

    /// Ordering: nil for nil or for two kinds.
    static func order(_ a: SQLValue, _ b: SQLValue, _ flags: Int = 0) -> Int? {
        switch (fold(a, flags), fold(b, flags)) {
        case (.text(let x), .text(let y)):
            return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) ? -1 : (Array(x.utf8) == Array(y.utf8) ? 0 : 1)
        case (.blob(let x), .blob(let y)):
            return Array(x).lexicographicallyPrecedes(Array(y)) ? -1 : (x == y ? 0 : 1)
        case (let x, let y):
            guard let p = x.doubleValue, let q = y.doubleValue else { return nil }
            return p < q ? -1 : (p == q ? 0 : 1)
        }
    }

    /// NSPredicate LIKE, recursively: `*` any run, `?` one character.
    static func like(_ t: Substring.UnicodeScalarView, _ p: Substring.UnicodeScalarView) -> Bool {
        guard let first = p.first else { return t.isEmpty }
        if first == "*" { return like(t, p.dropFirst()) || (!t.isEmpty && like(t.dropFirst(), p)) }
        guard let c = t.first else { return false }
        return (first == "?" || first == c) && like(t.dropFirst(), p.dropFirst())
    }

    static func stringOp(_ op: String, _ a: SQLValue, _ b: SQLValue, _ flags: Int) -> Bool {
        guard case .text(let x) = fold(a, op == "MATCHES" ? 0 : flags), case .text(let y) = fold(b, op == "MATCHES" ? 0 : flags) else { return false }
        switch op {
        case "BEGINSWITH": return !y.isEmpty && Array(x.utf8).starts(with: Array(y.utf8))
        case "ENDSWITH": return !y.isEmpty && Array(x.utf8).reversed().starts(with: Array(y.utf8).reversed())
        case "CONTAINS": return !y.isEmpty && x.utf8.count >= y.utf8.count && (0...(x.utf8.count - y.utf8.count)).contains { i in
            Array(x.utf8)[i..<(i + y.utf8.count)].elementsEqual(y.utf8) }
        case "LIKE": return like(Substring(x).unicodeScalars, Substring(y).unicodeScalars)
        default:
            var options: NSRegularExpression.Options = []
            if flags & 1 != 0 { options.insert(.caseInsensitive) }
            let subject = flags & 2 != 0 ? (fold(.text(x), 2).textValue ?? x) : x
            let pattern = flags & 2 != 0 ? (fold(.text(y), 2).textValue ?? y) : y
            guard let r = try? NSRegularExpression(pattern: pattern, options: options) else { return false }
            let range = NSRange(subject.startIndex..., in: subject)
            guard let m = r.firstMatch(in: subject, options: [.anchored], range: range) else { return false }
            return m.range.length == range.length
        }
    }

    // MARK: Random data and predicates

    typealias Generator = SeededGenerator

    static let texts = ["", "a", "A", "ab", "Ab", "é", "É", "e", "élan", "Élan", "ELAN", "straße", "日本語", "b*c", "a?b", "10", "x y", "🙂", "Ω", "Dr", "Drama", "50%", "a_b", "a\\b", "\u{212A}elvin", "x\0y"]
    static let numbers: [SQLValue] = [-3, -1.5, 0, 0.5, 1, 2, 2.5, 7, 10, 12]

    static func literal(_ v: SQLValue) -> String {
        switch v {
        case .null: return "nil"
        case .text(let s): return "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        default: return v.description
        }
    }

    static let modifiers = ["", "", "", "[c]", "[d]", "[cd]"]
    static func flags(_ m: String) -> Int { (m.contains("c") ? 1 : 0) | (m.contains("d") ? 2 : 0) }

    static func leaf(_ g: inout Generator) -> Tree {
        let column = g.pick(["n", "x", "s", "u", "d", "p.name"])
        func value(_ row: Row) -> SQLValue { row[column] ?? .null }
        let textual = ["s", "u", "d", "p.name"].contains(column)
        let numeric = ["n", "x"].contains(column)
        let anyConstant: SQLValue = g.next(8) == 0 ? .null : (g.next(2) == 0 ? g.pick(numbers) : .text(g.pick(texts)))
        switch g.next(10) {
        case 0, 1: // == and != with any constant (across kinds too)
            let op = g.pick(["==", "!="]), m = textual ? g.pick(modifiers) : "", f = flags(m)
            let c = anyConstant
            return .leaf("\(column) \(op)\(m) \(literal(c))") { op == "==" ? equal(value($0), c, f) : !equal(value($0), c, f) }
        case 2: // ordering, with a constant of the column's kind
            let op = g.pick(["<", "<=", ">", ">="])
            let c: SQLValue = numeric ? g.pick(numbers) : (column == "s" || column == "p.name" || g.next(2) == 0 ? .text(g.pick(texts)) : g.pick(numbers))
            let m = c.isTextValue ? g.pick(modifiers) : "", f = flags(m)
            return .leaf("\(column) \(op)\(m) \(literal(c))") { row in
                guard let o = order(value(row), c, f) else { return false }
                switch op { case "<": return o < 0; case "<=": return o <= 0; case ">": return o > 0; default: return o >= 0 }
            }
        case 3: // string operators, on columns that may hold text
            guard textual else { fallthrough }
            let op = g.pick(["BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES"]), m = g.pick(modifiers), f = flags(m)
            let needle: String
            switch op {
            case "LIKE": needle = g.pick(["*", "a*", "*a", "?", "É*", "a?b", "*l*", "", "D*a"])
            case "MATCHES": needle = g.pick(["a.*", ".*é.*", "[0-9]+", "A", "D.*", ".*"])
            default: needle = g.pick(texts)
            }
            return .leaf("\(column) \(op)\(m) \(literal(.text(needle)))") { stringOp(op, value($0), .text(needle), f) }
        case 4: // IN a list, with NULLs and other kinds among the items
            let items = (0..<(g.next(4))).map { _ in g.next(6) == 0 ? SQLValue.null : (g.next(2) == 0 ? g.pick(numbers) : .text(g.pick(texts))) }
            let m = textual ? g.pick(modifiers) : "", f = flags(m)
            let list = "{" + items.map(literal).joined(separator: ", ") + "}"
            if g.next(3) == 0 {
                return .leaf("\(list) CONTAINS\(m) \(column)") { row in items.contains { equal(value(row), $0, f) } }
            }
            return .leaf("\(column) IN\(m) \(list)") { row in items.contains { equal(value(row), $0, f) } }
        case 5: // substring both ways: 'x' IN s, s IN 'text', 'text' CONTAINS s
            guard textual else { fallthrough }
            let t = g.pick(texts + ["Élan straße 10", "Drama a?b"]), m = g.pick(modifiers), f = flags(m)
            switch g.next(3) {
            case 0: return .leaf("\(literal(.text(t))) IN\(m) \(column)") { stringOp("CONTAINS", value($0), .text(t), f) }
            case 1: return .leaf("\(column) IN\(m) \(literal(.text(t)))") { stringOp("CONTAINS", .text(t), value($0), f) }
            default: return .leaf("\(literal(.text(t))) CONTAINS\(m) \(column)") { stringOp("CONTAINS", .text(t), value($0), f) }
            }
        case 6: // BETWEEN
            guard numeric else { fallthrough }
            let a = g.pick(numbers), b = g.pick(numbers)
            return .leaf("\(column) BETWEEN {\(literal(a)), \(literal(b))}") { row in
                guard let lo = order(value(row), a), let hi = order(value(row), b) else { return false }
                return lo >= 0 && hi <= 0
            }
        case 7: // arithmetic on a numeric column
            let col = g.pick(["n", "x"])
            let k = g.pick([-2, 0, 1, 2, 2.5, 3, 4, 9])
            func num(_ row: Row) -> Double? { row[col]?.doubleValue }
            switch g.next(4) {
            case 0: return .leaf("\(col) / 4 == \(k)") { r in num(r).map { $0 / 4 == k } ?? false }
            case 1: return .leaf("\(col) ** 2 > \(k)") { r in num(r).map { $0 * $0 > k } ?? false }
            case 2: return .leaf("-\(col) < \(k)") { r in num(r).map { -$0 < k } ?? false }
            default: return .leaf("\(col) * 2 + 1 >= \(k)") { r in num(r).map { $0 * 2 + 1 >= k } ?? false }
            }
        case 8: // a column against an expression or another column
            switch g.next(3) {
            case 0: return .leaf("d >= concat('19', '99')") { order($0["d"] ?? .null, .text("1999")).map { $0 >= 0 } ?? false }
            case 1: return .leaf("u > n + 0") { row in
                guard let n = row["n"], n != .null, let o = order(row["u"] ?? .null, n) else { return false }
                return o > 0
            }
            default: return .leaf("s ==[c] lowercase(s)") { row in
                let v = row["s"] ?? .null
                return equal(v, v.textValue.map { .text($0.lowercased()) } ?? v, 1)
            }
            }
        default: // nil tests
            let op = g.pick(["==", "!="])
            return .leaf("\(column) \(op) nil") { (value($0) == .null) == (op == "==") }
        }
    }

    static func tree(_ g: inout Generator, depth: Int) -> Tree {
        if depth == 0 || g.next(3) == 0 { return leaf(&g) }
        switch g.next(4) {
        case 0: return .not(tree(&g, depth: depth - 1))
        case 1: return .and(tree(&g, depth: depth - 1), tree(&g, depth: depth - 1))
        case 2: return .or(tree(&g, depth: depth - 1), tree(&g, depth: depth - 1))
        default: return leaf(&g)
        }
    }

    @Test("random predicates give the rows a plain Swift model of NSPredicate gives, and NOT gives the rest")
    func randomPredicatesAgreeWithTheModel() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE r(id INTEGER PRIMARY KEY, n INTEGER, x REAL, s TEXT, u, d DATE, p_id INTEGER REFERENCES p(id));
            INSERT INTO p VALUES (1, 'Kurosawa'), (2, NULL), (3, 'élan');
            """)
        var g = Generator(state: 11)
        let untyped: [SQLValue] = [.null, 10, 2.5, -1, .text("10"), .text("2.5"), .text("abc"), .text("A"), .text("é"), .blob(Data([1, 2])), .blob(Data())]
        try direct(path) { db in
            for id in 1...80 {
                func maybe(_ v: SQLValue) -> SQLValue { g.next(6) == 0 ? .null : v }
                let row: [SQLValue] = [
                    .integer(Int64(id)), maybe(.integer(Int64(g.next(16) - 3))), maybe(g.pick(Self.numbers)), maybe(.text(g.pick(Self.texts))),
                    g.pick(untyped), maybe(.text(g.pick(["2019-05-01", "2020", "1999-12-31", "abc", "10"]))), maybe(.integer(Int64(1 + g.next(3)))),
                ]
                try db.execute(sql: "INSERT INTO r VALUES (?, ?, ?, ?, ?, ?, ?)", arguments: statementArguments(row))
            }
        }
        // The model holds what SQLite stored (affinity applied on insert), read back with storage classes.
        let rows: [Row] = try direct(path) { db in
            try GRDB.Row.fetchAll(db, sql: "SELECT r.id, r.n, r.x, r.s, r.u, r.d, p.name FROM r LEFT JOIN p ON p.id = r.p_id ORDER BY r.id").map { row in
                var out: Row = [:]
                for (i, name) in ["id", "n", "x", "s", "u", "d", "p.name"].enumerated() {
                    let dbValue: DatabaseValue = row[i]
                    switch dbValue.storage {
                    case .null: out[name] = .null
                    case .int64(let v): out[name] = .integer(v)
                    case .double(let v): out[name] = .real(v)
                    case .string(let v): out[name] = .text(v)
                    case .blob(let v): out[name] = .blob(v)
                    }
                }
                return out
            }
        }
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        func sqlIDs(_ t: Tree) throws -> [Int64] {
            try context.fetchAll(FetchRequest(entityName: "r", predicate: try FetchPredicate(format: t.format))).map(\.intID)
        }
        func modelIDs(_ t: Tree) -> [Int64] { rows.filter { t.evaluate($0) }.compactMap { $0["id"]?.integerValue } }
        func disagrees(_ t: Tree) -> Bool { ((try? sqlIDs(t)) ?? [-1]) != modelIDs(t) }

        var failures = 0
        for _ in 0..<Self.runs {
            let t = Self.tree(&g, depth: 3)
            for candidate in [t, .not(t)] {
                do {
                    guard try sqlIDs(candidate) != modelIDs(candidate) else { continue }
                } catch {
                    Issue.record("\(candidate.format) failed: \(error)")
                    failures += 1
                    continue
                }
                // Shrink to the smallest predicate that still disagrees.
                var smallest = candidate
                var progress = true
                while progress {
                    progress = false
                    for s in smallest.smaller where disagrees(s) { smallest = s; progress = true; break }
                }
                let sql = (try? sqlIDs(smallest)) ?? []
                let model = modelIDs(smallest)
                let differing = Set(sql).symmetricDifference(model).sorted().prefix(5)
                let shown = differing.map { id in "\(id): " + (rows.first { $0["id"] == .integer(id) }?.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.storageClass):\($0.value)" }.joined(separator: " ") ?? "") }
                Issue.record("SQL and model disagree on \(smallest.format)\n  SQL only: \(Set(sql).subtracting(model).sorted()) model only: \(Set(model).subtracting(sql).sorted())\n  \(shown.joined(separator: "\n  "))")
                failures += 1
            }
            if failures >= 5 { break }
        }
    }
}

private extension SQLValue {
    var isTextValue: Bool { textValue != nil }
}
