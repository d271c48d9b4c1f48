import Foundation

/// A value as SQLite stores it: one of its five storage classes, never coerced.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// True for `.null`.
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// The SQLite storage class name: `null`, `integer`, `real`, `text` or `blob`.
    public var storageClass: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        }
    }

    /// The integer value, or nil when the value is not an integer.
    public var integerValue: Int64? { if case .integer(let v) = self { return v } else { return nil } }
    /// The value as a Double when it is an integer or a real.
    public var doubleValue: Double? {
        switch self {
        case .integer(let v): return Double(v)
        case .real(let v): return v
        default: return nil
        }
    }
    /// The text value, or nil when the value is not text.
    public var textValue: String? { if case .text(let v) = self { return v } else { return nil } }
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral, ExpressibleByBooleanLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLValue: CustomStringConvertible {
    /// A plain rendering: NULL as `NULL`, reals in their shortest round-tripping form, blobs as
    /// `x'…'` hex (first 32 bytes, then the size). Not escaped for terminals; that is the viewer's job.
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let v): return String(v)
        case .real(let v): return SQLValue.format(v)
        case .text(let s): return s
        case .blob(let d):
            let hex = d.prefix(32).map { String(format: "%02x", $0) }.joined()
            return d.count > 32 ? "x'\(hex)…' (\(d.count) bytes)" : "x'\(hex)'"
        }
    }

    static func format(_ v: Double) -> String {
        if v.isFinite, v == v.rounded(), abs(v) < 1e15 { return String(format: "%.1f", v) }
        return "\(v)"
    }
}

extension Array {
    /// The elements in consecutive slices of at most `size` (the last may be shorter), for
    /// lists bound into one statement each.
    package func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// `s` as a standard SQL string literal: `'text'` with embedded quotes doubled (no backslash
/// escapes: SQLite's, and PostgreSQL's with standard_conforming_strings, on since 9.1).
package func quoteLiteral(_ s: String) -> String {
    "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
}

/// Quotes an SQL identifier: `"name"` with embedded quotes doubled. Any spelling is safe.
@inline(__always)
package func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// `t."a"`, `t."b"`, … for column names under a table alias.
func qualified(_ columns: [String], alias: String = "t") -> [String] {
    columns.map { "\(alias).\(quoteIdentifier($0))" }
}
