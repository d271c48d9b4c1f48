import Foundation
import GRDB

/// A source over SQLite: frequencies, summaries and ranges are SQL over one SELECT of the values.
package protocol SQLiteValuesSource: ResultSource {
    /// The values of `attribute` for the result's rows (`rows` says which: those of the ID table,
    /// or those `request` matches now), as a SELECT on the ID table's connection (what frequencies
    /// and summaries group and aggregate).
    func columnValues(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ColumnValues
}

extension SQLiteValuesSource {
    package func frequencies(of attribute: String, binWidth: Int64?, rows: ResultRows, request: FetchRequest, estimate: Int,
                             progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> any FrequencyTable {
        try SQLiteFrequencyTable(try columnValues(of: attribute, rows: rows, request: request), binWidth: binWidth, estimate: estimate, progress: progress)
    }

    package func summary(of attribute: String, rows: ResultRows, request: FetchRequest, estimate: Int,
                         progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> ColumnSummary {
        try ColumnSummary(sqlite: try columnValues(of: attribute, rows: rows, request: request), estimate: estimate, progress: progress)
    }

    /// `SELECT min(value), max(value) FROM (<values>) WHERE value < ''` (numbers alone sort before text).
    package func numericRange(of attribute: String, rows: ResultRows, request: FetchRequest) throws -> ClosedRange<Double>? {
        let values = try columnValues(of: attribute, rows: rows, request: request)
        let sql = "SELECT min(value), max(value) FROM (\(values.select)) WHERE value < ''"
        return try values.connection.withDatabase { db in
            guard let row = try Row.fetchOne(db, sql: sql, arguments: values.arguments.statementArguments),
                  let low = row[0] as Double?, let high = row[1] as Double? else { return nil }
            return low...high
        }
    }
}

/// The values of one attribute over a result's rows: `select` has one column, `value`, one row
/// per row of the result that still exists, and runs on `connection` (the ID table's) with
/// `arguments`.
package struct ColumnValues {
    /// The attribute's name as the schema spells it.
    let attribute: String
    /// Its declared type (the first store's, with several).
    let declaredType: String
    let select: String
    var arguments: [SQLValue] = []
    let connection: Connection
}
