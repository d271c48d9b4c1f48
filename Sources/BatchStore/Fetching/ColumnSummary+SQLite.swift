import Foundation
import GRDB

extension ColumnSummary {
    /// The summary of `values` over SQLite (the two statements described at
    /// ``BatchFaultingCollection/summary(of:rows:progress:)``).
    init(sqlite values: ColumnValues, estimate: Int, progress: ((IDFetchProgress) -> IDFetchDecision)?) throws {
        let figures = """
            SELECT count(*), count(*) - count(value), min(value), max(value),
              avg(CASE WHEN typeof(value) IN ('integer', 'real') THEN value END),
              min(CASE WHEN typeof(value) = 'text' THEN length(value) END), max(CASE WHEN typeof(value) = 'text' THEN length(value) END),
              max(typeof(value) = 'integer'), max(typeof(value) = 'real'), max(typeof(value) = 'text'), max(typeof(value) = 'blob')
            FROM (\(values.select))
            """
        // One GROUP BY (SQLite materializes a CTE read more than once): the top count, the
        // distinct values, how many share the top count, and the first three of them by value.
        let grouped = """
            WITH g AS (SELECT value, count(*) AS c FROM (\(values.select)) GROUP BY value COLLATE BINARY),
              top AS (SELECT max(c) AS m, count(value) AS d FROM g)
            SELECT top.m, top.d, (SELECT count(*) FROM g WHERE g.c = top.m), g.value FROM top LEFT JOIN g ON g.c = top.m ORDER BY g.value COLLATE BINARY LIMIT 3
            """
        // Each statement holds the inner SELECT once, so each binds its arguments once.
        self = try values.connection.withDatabase { db in
            func all(_ sql: String) throws -> [[SQLValue]] {
                let statement = try db.makeStatement(sql: sql)
                var found: [[SQLValue]] = []
                try ProgressReporter.run(db: db, statement: statement, estimate: estimate, handler: progress) {
                    // The cursor stays alive while the row is read: a row reads its statement.
                    let cursor = try Row.fetchCursor(statement, arguments: values.arguments.statementArguments)
                    while let row = try cursor.next() { found.append((0..<row.count).map { SQLValue(row: row, at: $0) }) }
                }
                return found
            }
            func one(_ sql: String) throws -> [SQLValue]? { try all(sql).first }
            let f = try one(figures) ?? []
            func int(_ i: Int) -> Int? { if i < f.count, case .integer(let v) = f[i] { return Int(v) } else { return nil } }
            func value(_ i: Int) -> SQLValue? { i < f.count && f[i] != .null ? f[i] : nil }
            var mean: Double?
            if let v = value(4) { if case .real(let d) = v { mean = d } else if case .integer(let n) = v { mean = Double(n) } }
            let classes = ["integer", "real", "text", "blob"].enumerated().filter { int(7 + $0.offset) == 1 }.map(\.element)
            let tops = try all(grouped)
            let g = tops.first ?? []
            var mostFrequent: ValueCount?
            if g.count == 4, case .integer(let n) = g[0] { mostFrequent = ValueCount(value: g[3], count: Int(n)) }
            var distinct = 0
            if g.count == 4, case .integer(let n) = g[1] { distinct = Int(n) }
            var summary = ColumnSummary(attribute: values.attribute, declaredType: values.declaredType, rows: int(0) ?? 0, storageClasses: classes,
                                        nulls: int(1) ?? 0, distinct: distinct, min: value(2), max: value(3), mean: mean,
                                        shortest: int(5), longest: int(6), mostFrequent: mostFrequent)
            if mostFrequent != nil {
                if g.count == 4, case .integer(let ties) = g[2] { summary.mostFrequentTies = Swift.max(1, Int(ties)) }
                summary.tiedForMostFrequent = tops.map { $0[3] }
            }
            return summary
        }
    }
}
