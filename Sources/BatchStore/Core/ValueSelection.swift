/// The rows of a result whose attribute holds one of some values, as a frequency sheet groups
/// them (``ValueFrequencies``): what an edit from a frequency sheet acts on.
///
/// The values compare as SQLite's `GROUP BY` compares them: NULL is a value of its own (`IS NULL`,
/// not `= NULL`); the integer 1 and the real 1.0 are one value; the text '1' is another (no
/// affinity applies: the column is written `+t."c"`, which keeps its collation); the column's
/// collation applies to text. With ``binWidth``, a number stands for its bin: the rows are those
/// whose number falls in `[lo, lo + width)`, computed with the very expression the binned GROUP BY
/// used, so the rows are exactly the ones it counted.
public struct ValueSelection: Sendable, Equatable {
    /// The attribute the values are of.
    public var attribute: String
    /// The values (a bin's lower bound, with ``binWidth``).
    public var values: [SQLValue]
    /// The width of the bins the values stand for; nil: each value itself.
    public var binWidth: Int64?
    /// The values as SQL literals read from the database itself (``ValueFrequencies/selection(at:)``):
    /// on SQLite text as its very bytes, which a `String` may not hold (invalid UTF-8 is repaired
    /// when read). Nil: the literals of ``values``.
    package private(set) var exactLiterals: [String]?
    /// The engine whose SQL ``exactLiterals`` are written in.
    package private(set) var literalDialect: LiteralDialect?

    /// The SQL dialects exact literals are written in.
    package enum LiteralDialect: Sendable, Equatable { case sqlite, postgres }

    public init(attribute: String, values: [SQLValue], binWidth: Int64? = nil) {
        self.attribute = attribute
        self.values = values
        self.binWidth = binWidth
    }

    package init(attribute: String, values: [SQLValue], literals: [String], dialect: LiteralDialect, binWidth: Int64?) {
        self.init(attribute: attribute, values: values, binWidth: binWidth)
        exactLiterals = literals
        literalDialect = dialect
    }
}

extension SQLValue {
    /// The value as an SQL literal that SQLite reads back as the same value and storage class:
    /// `NULL`, `42`, `(-9223372036854775807 - 1)`, `1.0`, a real as exact arithmetic
    /// (`exactRealLiteral(_:)`), `9e999`, `'it''s'`, `CAST(X'6100' AS TEXT)` (text holding NUL),
    /// `X'00FF'`.
    public var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .integer(let i): return i == .min ? "(-9223372036854775807 - 1)" : String(i)
        case .real(let d):
            if d.isNaN { return "NULL" }
            if d.isInfinite { return d < 0 ? "-9e999" : "9e999" }
            return Self.exactRealLiteral(d)
        case .text(let s):
            if s.utf8.contains(0) { return "CAST(X'" + s.utf8.map { hexByte($0) }.joined() + "' AS TEXT)" }
            return quoteLiteral(s)
        case .blob(let b): return "X'" + b.map { hexByte($0) }.joined() + "'"
        }
    }
}

extension SQLValue {
    /// `d` as SQL that SQLite reads back as exactly `d`, a real: an integral value below 2^53 as
    /// `42.0`; any other as its integer significand times or divided by powers of two, each an
    /// integer cast to a real (`(CAST(7205759403792794 AS REAL) / CAST(72057594037927936 AS REAL))`
    /// for 0.1): every step is exact in IEEE arithmetic, where a decimal text (`0.1`,
    /// `-477093.3209532162`) is not always parsed back to the same double by SQLite.
    static func exactRealLiteral(_ d: Double) -> String {
        if d == 0 { return d.sign == .minus ? "-0.0" : "0.0" }
        if d == d.rounded(), abs(d) < 9_007_199_254_740_992 { return "\(Int64(d)).0" }
        // d = m * 2^k, m an integer of at most 53 bits.
        let m = Int64(d.significand * 4_503_599_627_370_496)   // 2^52
        var k = Int(d.exponent) - 52
        var text = "CAST(\(d.sign == .minus ? -m : m) AS REAL)"
        while k != 0 {
            let step = min(abs(k), 62)
            text = "(\(text) \(k > 0 ? "*" : "/") CAST(\(Int64(1) << step) AS REAL))"
            k += k > 0 ? -step : step
        }
        return text
    }
}

private func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}
