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

    public init(attribute: String, values: [SQLValue], binWidth: Int64? = nil) {
        self.attribute = attribute
        self.values = values
        self.binWidth = binWidth
    }

    /// The condition over alias `t` of `entity` (SQL without arguments: the values are written
    /// as exact literals, ``SQLValue/sqlLiteral``):
    /// `(+t."genre" IN ('Drama', 1) OR t."genre" IS NULL)`; binned,
    /// `(CASE WHEN t."year" < '' THEN … END IN (1990, 2000))`. `0` for no values.
    /// - Throws: `.noSuchAttribute` for a name that is not a column of `entity`.
    func condition(for entity: Entity) throws -> String {
        let column = "t." + quoteIdentifier(entity.attributes[try entity.requireAttributeIndex(attribute)].name)
        let expression = binWidth.map { ValueSelection.binned(column, width: $0) } ?? "+" + column
        var parts: [String] = []
        let present = values.filter { !$0.isNull }
        if !present.isEmpty { parts.append("\(expression) IN (\(present.map(\.sqlLiteral).joined(separator: ", ")))") }
        if values.contains(.null) { parts.append("\(column) IS NULL") }
        return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
    }

    /// `value` counted in its bin of `width`: for a number its bin's lower bound
    /// `floor(value / width) * width` (an integer), for anything else itself. `value < ''` holds for
    /// numbers alone (every number sorts before any text, blobs after text); the correction makes
    /// the truncating CAST a floor for negative numbers. The one expression both the binned GROUP
    /// BY (``ValueFrequencies``) and an edit of its bins (``condition(for:)``) use.
    static func binned(_ value: String, width: Int64) -> String {
        precondition(width > 0, "a bin width is positive")
        let q = "CAST(\(value) / \(width) AS INTEGER)"
        return "CASE WHEN \(value) < '' THEN (\(q) - (\(q) * \(width) > \(value))) * \(width) ELSE \(value) END"
    }
}

extension SQLValue {
    /// The value as an SQL literal that SQLite reads back as the same value and storage class:
    /// `NULL`, `42`, `(-9223372036854775807 - 1)`, `4.5`, `1.0`, `9e999`, `'it''s'`,
    /// `CAST(X'6100' AS TEXT)` (text holding NUL), `X'00FF'`.
    public var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .integer(let i): return i == .min ? "(-9223372036854775807 - 1)" : String(i)
        case .real(let d):
            if d.isNaN { return "NULL" }
            if d.isInfinite { return d < 0 ? "-9e999" : "9e999" }
            let text = "\(d)"
            // A real stays a real when read back (`1.0`, not `1`).
            return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
        case .text(let s):
            if s.utf8.contains(0) { return "CAST(X'" + s.utf8.map { hexByte($0) }.joined() + "' AS TEXT)" }
            return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let b): return "X'" + b.map { hexByte($0) }.joined() + "'"
        }
    }
}

private func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}
