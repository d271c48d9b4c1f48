import BatchStore
import Foundation

/// A one-pass reader for the NDJSON lines `faultline export` writes and most tools write: one
/// flat object whose values are strings, numbers, `null` or a `{"$blob": base64}` object.
///
/// It gives exactly what the general path (Foundation's JSON reader plus the number texts, see
/// ``RowReader``) gives, or nil to hand the line to that path: for anything else (nested arrays
/// and objects, `true` and `false`, `\u` escapes, duplicate keys, invalid UTF-8, a malformed
/// line) it does not decide, so errors and rare forms keep one implementation. A test runs both
/// on the same lines and compares.
enum FlatJSON {
    static func object(_ bytes: [UInt8]) -> [String: SQLValue]? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }

    private static func parse(_ b: UnsafeBufferPointer<UInt8>) -> [String: SQLValue]? {
        var i = 0
        let n = b.count
        @inline(__always) func skipSpace() { while i < n, b[i] == 32 || b[i] == 9 || b[i] == 13 || b[i] == 10 { i += 1 } }
        /// A string at `i` (its opening quote), without `\u` escapes and with no raw controls.
        func string() -> String? {
            guard i < n, b[i] == 34 else { return nil }
            i += 1
            let start = i
            var plain = true
            while i < n, b[i] != 34 {
                let c = b[i]
                // Raw controls are not JSON; a raw U+FEFF is dropped by Foundation's reader.
                if c < 0x20 || (c == 0xEF && i + 2 < n && b[i + 1] == 0xBB && b[i + 2] == 0xBF) { return nil }
                if c == 92 {
                    plain = false
                    guard i + 1 < n else { return nil }
                    switch b[i + 1] {
                    case 34, 92, 47, 98, 102, 110, 114, 116: i += 2
                    default: return nil   // \u and invalid escapes: the general path decides
                    }
                    continue
                }
                i += 1
            }
            guard i < n else { return nil }
            let raw = UnsafeBufferPointer(rebasing: b[start..<i])
            i += 1
            if plain { return String(validating: raw, as: UTF8.self) }
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var j = 0
            while j < raw.count {
                let c = raw[j]
                if c == 92 {
                    switch raw[j + 1] {
                    case 98: out.append(8)
                    case 102: out.append(12)
                    case 110: out.append(10)
                    case 114: out.append(13)
                    case 116: out.append(9)
                    default: out.append(raw[j + 1])   // " \ /
                    }
                    j += 2
                } else {
                    out.append(c)
                    j += 1
                }
            }
            return String(validating: out, as: UTF8.self)
        }
        /// A number in JSON's grammar, classified as ``RowReader`` does from its text.
        func number() -> SQLValue? {
            let start = i
            if i < n, b[i] == 45 { i += 1 }
            guard i < n, b[i] >= 48 && b[i] <= 57 else { return nil }
            if b[i] == 48 { i += 1 } else { while i < n, b[i] >= 48 && b[i] <= 57 { i += 1 } }
            var integral = true
            if i < n, b[i] == 46 {
                integral = false
                i += 1
                guard i < n, b[i] >= 48 && b[i] <= 57 else { return nil }
                while i < n, b[i] >= 48 && b[i] <= 57 { i += 1 }
            }
            if i < n, b[i] == 69 || b[i] == 101 {
                integral = false
                i += 1
                if i < n, b[i] == 43 || b[i] == 45 { i += 1 }
                guard i < n, b[i] >= 48 && b[i] <= 57 else { return nil }
                while i < n, b[i] >= 48 && b[i] <= 57 { i += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
            if integral, let v = Int64(text) { return .integer(v) }
            guard let d = Double(text), d.isFinite else { return nil }
            return .real(d)
        }
        skipSpace()
        guard i < n, b[i] == 123 else { return nil }
        i += 1
        var row: [String: SQLValue] = [:]
        skipSpace()
        if i < n, b[i] == 125 {
            i += 1
        } else {
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard i < n, b[i] == 58 else { return nil }
                i += 1
                skipSpace()
                guard i < n else { return nil }
                let value: SQLValue
                switch b[i] {
                case 34:
                    guard let s = string() else { return nil }
                    value = .text(s)
                case 110:
                    guard i + 4 <= n, b[i + 1] == 117, b[i + 2] == 108, b[i + 3] == 108 else { return nil }
                    i += 4
                    value = .null
                case 123:
                    // Only {"$blob": "<base64>"}.
                    i += 1
                    skipSpace()
                    guard string() == "$blob" else { return nil }
                    skipSpace()
                    guard i < n, b[i] == 58 else { return nil }
                    i += 1
                    skipSpace()
                    guard let base64 = string(), let data = Data(base64Encoded: base64) else { return nil }
                    skipSpace()
                    guard i < n, b[i] == 125 else { return nil }
                    i += 1
                    value = .blob(data)
                default:
                    guard let v = number() else { return nil }
                    value = v
                }
                guard row.updateValue(value, forKey: key) == nil else { return nil }   // a duplicate key
                skipSpace()
                guard i < n else { return nil }
                if b[i] == 44 { i += 1; continue }
                guard b[i] == 125 else { return nil }
                i += 1
                break
            }
        }
        skipSpace()
        return i == n ? row : nil
    }
}
