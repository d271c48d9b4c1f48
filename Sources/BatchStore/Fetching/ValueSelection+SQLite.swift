import Foundation

/// A selection's rows in SQLite's SQL.
extension ValueSelection {
    /// The values as SQLite literals: read from the file (``exactLiterals``), else ``SQLValue/sqlLiteral``.
    var literals: [String] {
        if let exactLiterals, literalDialect == .sqlite { return exactLiterals }
        return values.map(\.sqlLiteral)
    }

    /// The condition over alias `t` of `entity` (SQL without arguments: the values are written
    /// as exact literals, ``literals``):
    /// `(+t."genre" IN ('Drama', 1) OR t."genre" IS NULL)`; binned,
    /// `(CASE WHEN t."year" < '' THEN … END IN (1990, 2000))`. `0` for no values.
    /// - Throws: `.noSuchAttribute` for a name that is not a column of `entity`.
    func condition(for entity: Entity) throws -> String {
        condition(column: "t." + quoteIdentifier(entity.attributes[try entity.requireAttributeIndex(attribute)].name))
    }

    /// The selection's rows as a SQL condition over alias `t` (what edits from the sheet use), for a SQL
    /// filter (``FetchPredicate/init(sql:)``) to narrow to exactly the rows a frequency sheet
    /// counted: text byte for byte whatever the column's collation, numbers without affinity,
    /// bins by the very expression that grouped them. Nil when its literals are PostgreSQL's.
    public var sqliteCondition: String? {
        literalDialect == .postgres ? nil : condition(column: "t." + quoteIdentifier(attribute))
    }

    private func condition(column: String) -> String {
        let expression = binWidth.map { ValueSelection.binned(column, width: $0) } ?? "+" + column
        var parts: [String] = []
        let present = zip(values, literals).filter { !$0.0.isNull }.map(\.1)
        // Byte for byte, as the frequency sheet grouped them (a NOCASE column's 'a' and 'A' are two values).
        if !present.isEmpty { parts.append("(\(expression)) COLLATE BINARY IN (\(present.joined(separator: ", ")))") }
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
