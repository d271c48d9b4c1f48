import Foundation
import GRDB
import GRDBSQLite

/// SQL functions every BatchStore connection registers, for what SQLite lacks or does differently
/// from NSPredicate. They are registered with SQLite's C API, which passes text with its byte
/// length (GRDB's function values stop at a NUL), and marked direct-only, so a view or trigger in
/// a file cannot call them.
///
/// - `bs_fold(x, flags)`: case (flags & 1) and diacritic (flags & 2) folding of text, for `[c]`,
///   `[d]`, `[cd]`; other values unchanged.
/// - `bs_search(op, flags, text, needle)`: 1 when `text` folded by `flags` contains (op 0), begins
///   with (1) or ends with (2) `needle` (folded by the caller); one call per row with no copy for
///   ASCII text; NULL when either is not text. `op | 8` reads any value but NULL as text first
///   (NSPredicate's `string(x)`, what `CAST(x AS TEXT)` gives).
/// - `bs_case(x, upper)`: Unicode lower (0) or upper (1) case of text; SQLite's own is ASCII only.
/// - `bs_matches(text, pattern, flags)`: 1 when the whole text matches the regular expression
///   (NSPredicate's MATCHES), NULL when either is not text.
/// - `bs_cmp(a, b)`: -1, 0 or 1 for two numbers, two texts (by code point) or two blobs; NULL for
///   nil or two different kinds, so an ordering between kinds is false, never a guess.
/// - `bs_has(op, text, needle)`: 1 when `text` contains (op 0), begins with (1), ends with (2)
///   `needle`, or matches it as an NSPredicate LIKE pattern (3); an empty needle is found in
///   nothing; NULL when either is not text.
/// - `bs_pow(a, b)`: `a ** b` as a real; NULL unless both are numbers.
extension SQLFunctions {
    typealias Body = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void

    static func register(in db: Database) {
        let functions: [(String, Int32, Body)] = [
            ("bs_fold", 2, { ctx, _, argv in
                guard let argv, let bytes = SQLFunctions.bytes(argv[0]) else { sqlite3_result_value(ctx, argv?[0]); return }
                let flags = Int(sqlite3_value_int64(argv[1]))
                // ASCII text (most of it, in most files) folds byte by byte: case folding is A-Z to
                // a-z and there are no diacritics, exactly what Foundation's folding gives it, at
                // the cost of a scan instead of a String and a fold per row.
                if SQLFunctions.foldASCII(ctx, bytes, flags: flags, value: argv[0]) { return }
                SQLFunctions.result(ctx, SQLFunctions.fold(String(decoding: bytes, as: UTF8.self), flags: flags))
            }),
            ("bs_search", 4, { ctx, _, argv in
                guard let argv else { sqlite3_result_null(ctx); return }
                let code = Int(sqlite3_value_int64(argv[0])), flags = Int(sqlite3_value_int64(argv[1]))
                let op = code & 7
                guard let hay = code & 8 != 0 ? SQLFunctions.textOf(argv[2]) : SQLFunctions.bytes(argv[2]),
                      let needle = SQLFunctions.bytes(argv[3]) else { sqlite3_result_null(ctx); return }
                if let found = SQLFunctions.searchASCII(op, flags: flags, hay, needle) {
                    sqlite3_result_int64(ctx, found ? 1 : 0)
                    return
                }
                let folds = Unmanaged<PieceFolds>.fromOpaque(sqlite3_user_data(ctx)).takeUnretainedValue()
                sqlite3_result_int64(ctx, folds.search(op, flags: flags, hay, needle) ? 1 : 0)
            }),
            ("bs_case", 2, { ctx, _, argv in
                guard let argv, let s = SQLFunctions.text(argv[0]) else { sqlite3_result_value(ctx, argv?[0]); return }
                SQLFunctions.result(ctx, sqlite3_value_int64(argv[1]) == 1 ? s.uppercased() : s.lowercased())
            }),
            ("bs_matches", 3, { ctx, _, argv in
                guard let argv, let s = SQLFunctions.text(argv[0]), let pattern = SQLFunctions.text(argv[1]) else { sqlite3_result_null(ctx); return }
                sqlite3_result_int64(ctx, SQLFunctions.matches(s, pattern, flags: Int(sqlite3_value_int64(argv[2]))) ? 1 : 0)
            }),
            ("bs_cmp", 2, { ctx, _, argv in
                guard let argv, let order = SQLFunctions.compare(argv[0], argv[1]) else { sqlite3_result_null(ctx); return }
                sqlite3_result_int64(ctx, Int64(order))
            }),
            ("bs_has", 3, { ctx, _, argv in
                guard let argv, let hay = SQLFunctions.bytes(argv[1]), let needle = SQLFunctions.bytes(argv[2]) else { sqlite3_result_null(ctx); return }
                sqlite3_result_int64(ctx, SQLFunctions.has(Int(sqlite3_value_int64(argv[0])), hay, needle) ? 1 : 0)
            }),
            ("bs_pow", 2, { ctx, _, argv in
                guard let argv, let a = SQLFunctions.number(argv[0]), let b = SQLFunctions.number(argv[1]) else { sqlite3_result_null(ctx); return }
                let p = Foundation.pow(a, b)
                if p.isFinite { sqlite3_result_double(ctx, p) } else { sqlite3_result_null(ctx) }
            }),
        ]
        for (name, arity, body) in functions {
            // bs_search keeps its folded pieces per connection (a connection runs on one thread
            // at a time, so no lock), released with the connection.
            let data: UnsafeMutableRawPointer? = name == "bs_search" ? Unmanaged.passRetained(PieceFolds()).toOpaque() : nil
            sqlite3_create_function_v2(db.sqliteConnection, name, arity, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
                                       data, body, nil, nil, data == nil ? nil : { pointer in
                                           if let pointer { Unmanaged<PieceFolds>.fromOpaque(pointer).release() }
                                       })
        }
    }

    // MARK: Reading and returning values

    /// The bytes of a text value (not a copy; valid until the value changes), or nil for another kind.
    fileprivate static func bytes(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
        let count = Int(sqlite3_value_bytes(value))
        guard let p = sqlite3_value_text(value) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: count)
    }

    /// Any value but NULL as text, as `CAST(x AS TEXT)` gives it (numbers formatted, blobs' bytes).
    fileprivate static func textOf(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        let p = sqlite3_value_text(value)
        let count = Int(sqlite3_value_bytes(value))
        return UnsafeBufferPointer(start: count == 0 ? nil : p, count: count)
    }

    fileprivate static func text(_ value: OpaquePointer?) -> String? {
        bytes(value).map { String(decoding: $0, as: UTF8.self) }
    }

    fileprivate static func number(_ value: OpaquePointer?) -> Double? {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER, SQLITE_FLOAT: return sqlite3_value_double(value)
        default: return nil
        }
    }

    /// `bs_fold` of ASCII text: the value itself when nothing changes, else a copy with A-Z
    /// lowered; false (nothing returned) when the text is not all ASCII.
    fileprivate static func foldASCII(_ ctx: OpaquePointer?, _ bytes: UnsafeBufferPointer<UInt8>, flags: Int, value: OpaquePointer?) -> Bool {
        var upper = false
        for b in bytes {
            if b >= 0x80 { return false }
            if b >= 0x41 && b <= 0x5A { upper = true }
        }
        guard flags & 1 != 0, upper else { sqlite3_result_value(ctx, value); return true }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let lowered = [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, count in
            for (i, b) in bytes.enumerated() { buffer[i] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
            count = bytes.count
        }
        lowered.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { sqlite3_result_text(ctx, "", 0, nil); return }
            base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { sqlite3_result_text(ctx, $0, Int32(buffer.count), transient) }
        }
        return true
    }

    /// `bs_search`: whether `hay`, folded by `flags`, contains (op 0), begins with (1) or ends with
    /// (2) `needle` (already folded), when `hay` is all ASCII: Foundation's folding of ASCII is A-Z
    /// to a-z for `[c]` and nothing else, so the bytes are compared as they are read, with no copy.
    /// An empty needle is found in nothing. Nil when `hay` has a byte past ASCII (the caller folds
    /// it with Foundation).
    static func searchASCII(_ op: Int, flags: Int, _ hay: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool? {
        let n = needle.count, h = hay.count
        // All ASCII? Eight bytes at a time.
        if let base = hay.baseAddress {
            let raw = UnsafeRawPointer(base)
            var i = 0
            while i + 8 <= h {
                if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return nil }
                i += 8
            }
            while i < h {
                if hay[i] >= 0x80 { return nil }
                i += 1
            }
        }
        guard n > 0, n <= h else { return false }
        let lower = flags & 1 != 0
        @inline(__always) func equal(at start: Int) -> Bool {
            var j = 0
            while j < n {
                let b = hay[start + j]
                if (lower && b >= 0x41 && b <= 0x5A ? b | 0x20 : b) != needle[j] { return false }
                j += 1
            }
            return true
        }
        switch op {
        case 1: return equal(at: 0)
        case 2: return equal(at: h - n)
        default:
            // The needle is folded, so a letter in it is lower case: `b | 0x20` is that letter
            // exactly for it and its upper case.
            let first = needle[0]
            let either = lower && first >= 0x61 && first <= 0x7A
            var i = 0
            while i + n <= h {
                let b = hay[i]
                if (either ? b | 0x20 : b) == first, equal(at: i) { return true }
                i += 1
            }
            return false
        }
    }

    /// Foundation's folding of UTF-8 text by `flags`, computed piece by piece (see
    /// ``PieceFolds``), as an array: what `bs_search` compares, for tests.
    package static func foldByChunks(_ text: UnsafeBufferPointer<UInt8>, flags: Int, using folds: PieceFolds = PieceFolds()) -> [UInt8] {
        return [UInt8](unsafeUninitializedCapacity: PieceFolds.capacity(text.count)) { buffer, count in
            count = folds.fold(text, flags: flags, into: buffer) ?? 0
        }
    }

    fileprivate static func result(_ ctx: OpaquePointer?, _ s: String) {
        var s = s
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        s.withUTF8 { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { sqlite3_result_text(ctx, "", 0, nil); return }
            base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { sqlite3_result_text(ctx, $0, Int32(buffer.count), transient) }
        }
    }

    // MARK: What the functions compute

    static func matches(_ s: String, _ pattern: String, flags: Int) -> Bool {
        guard let regex = RegexCache.shared.regex(pattern, flags: flags) else { return false }
        let subject = flags & 2 != 0 ? fold(s, flags: 2) : s
        let range = NSRange(subject.startIndex..., in: subject)
        guard let m = regex.firstMatch(in: subject, options: [.anchored], range: range) else { return false }
        return m.range.location == 0 && m.range.length == range.length
    }

    /// NSPredicate's ordering: numbers with numbers, text with text (by code point, as SQLite's
    /// BINARY collation), blobs with blobs; nil for NULL or two kinds.
    fileprivate static func compare(_ a: OpaquePointer?, _ b: OpaquePointer?) -> Int? {
        let ta = sqlite3_value_type(a), tb = sqlite3_value_type(b)
        switch (ta, tb) {
        case (SQLITE_INTEGER, SQLITE_INTEGER):
            let x = sqlite3_value_int64(a), y = sqlite3_value_int64(b)
            return x < y ? -1 : (x == y ? 0 : 1)
        case (SQLITE_INTEGER, SQLITE_FLOAT), (SQLITE_FLOAT, SQLITE_INTEGER), (SQLITE_FLOAT, SQLITE_FLOAT):
            let x = sqlite3_value_double(a), y = sqlite3_value_double(b)
            return x < y ? -1 : (x == y ? 0 : 1)
        case (SQLITE_TEXT, SQLITE_TEXT):
            guard let x = bytes(a), let y = bytes(b) else { return nil }
            return lexicographic(x, y)
        case (SQLITE_BLOB, SQLITE_BLOB):
            let x = UnsafeBufferPointer(start: sqlite3_value_blob(a)?.assumingMemoryBound(to: UInt8.self), count: Int(sqlite3_value_bytes(a)))
            let y = UnsafeBufferPointer(start: sqlite3_value_blob(b)?.assumingMemoryBound(to: UInt8.self), count: Int(sqlite3_value_bytes(b)))
            return lexicographic(x, y)
        default:
            return nil
        }
    }

    private static func lexicographic(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(x.count, y.count)
        if n > 0, let xb = x.baseAddress, let yb = y.baseAddress {
            let c = memcmp(xb, yb, n)
            if c != 0 { return c < 0 ? -1 : 1 }
        }
        return x.count < y.count ? -1 : (x.count == y.count ? 0 : 1)
    }

    /// CONTAINS (0), BEGINSWITH (1), ENDSWITH (2) or LIKE (3), on UTF-8 bytes: a byte match of
    /// valid UTF-8 is a code point match, and nothing is decoded or allocated per row.
    static func has(_ op: Int, _ hay: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        if op == 3 { return like(hay, needle) }
        guard needle.count > 0, needle.count <= hay.count else { return false }
        switch op {
        case 1: return hay.prefix(needle.count).elementsEqual(needle)
        case 2: return hay.suffix(needle.count).elementsEqual(needle)
        default:
            let first = needle[0]
            var i = 0
            while i + needle.count <= hay.count {
                if hay[i] == first, hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
                i += 1
            }
            return false
        }
    }

    /// NSPredicate LIKE over UTF-8: `*` any run, `?` one character (code point), `\` makes the
    /// next character literal (a `\` at the end matches nothing); the whole text must match.
    /// Iterative, backtracking to the last `*`: O(n·m) at worst.
    static func like(_ t: UnsafeBufferPointer<UInt8>, _ p: UnsafeBufferPointer<UInt8>) -> Bool {
        func length(_ b: UInt8) -> Int { b < 0xC0 ? 1 : (b < 0xE0 ? 2 : (b < 0xF0 ? 3 : 4)) }
        let star = UInt8(ascii: "*"), question = UInt8(ascii: "?"), backslash = UInt8(ascii: "\\")
        var ti = 0, pi = 0
        var starAt = -1, resume = 0
        while ti < t.count {
            if pi < p.count {
                let c = p[pi]
                if c == star { starAt = pi; pi += 1; resume = ti; continue }
                let n = min(length(t[ti]), t.count - ti)
                if c == question { ti += n; pi += 1; continue }
                let start = c == backslash ? pi + 1 : pi
                if start < p.count {
                    let m = length(p[start])
                    if m == n, start + m <= p.count, (0..<m).allSatisfy({ p[start + $0] == t[ti + $0] }) {
                        ti += n; pi = start + m; continue
                    }
                }
            }
            guard starAt >= 0 else { return false }
            resume += min(length(t[resume]), t.count - resume)
            ti = resume
            pi = starAt + 1
        }
        while pi < p.count, p[pi] == star { pi += 1 }
        return pi == p.count
    }

    /// Compiles a MATCHES pattern, or returns a message naming what is wrong with it.
    package static func validateRegex(_ pattern: String) -> String? {
        do {
            _ = try NSRegularExpression(pattern: pattern)
            return nil
        } catch {
            return "invalid regular expression \(pattern.debugDescription)"
        }
    }
}

/// A small cache of compiled regular expressions, shared by all connections.
final class RegexCache: @unchecked Sendable {
    static let shared = RegexCache()
    private let lock = NSLock()
    private var cache: [String: NSRegularExpression] = [:]

    func regex(_ pattern: String, flags: Int) -> NSRegularExpression? {
        let key = "\(flags):\(pattern)"
        lock.lock()
        defer { lock.unlock() }
        if let r = cache[key] { return r }
        var options: NSRegularExpression.Options = []
        if flags & 1 != 0 { options.insert(.caseInsensitive) }
        let p = flags & 2 != 0 ? SQLFunctions.fold(pattern, flags: 2) : pattern
        guard let r = try? NSRegularExpression(pattern: p, options: options) else { return nil }
        if cache.count > 64 { cache.removeAll() }
        cache[key] = r
        return r
    }
}
