import Foundation
import GRDB

extension ManagedObjectContext {
    /// Checks a batch update against the table's constraints without writing anything.
    ///
    /// Runs the update as `UPDATE OR IGNORE … RETURNING <key>` in a transaction that is always rolled
    /// back: SQLite skips exactly the rows that would break NOT NULL, CHECK or UNIQUE constraints.
    /// For one skipped row, the plain UPDATE is run in a savepoint to get SQLite's reason.
    /// - Complexity: one (rolled back) run of the update, and one of its matching query.
    public func validate(_ request: BatchUpdateRequest) throws -> ValidationReport {
        let update = try compileUpdate(request)
        let entity = update.entity, arguments = update.arguments
        let keys = entity.keyColumns
        let ignoring = update.sql(orIgnore: true, returningKeys: true)
        let matchedKeys = try CompiledFetch(request: update.match, store: store)
        let keySelect = matchedKeys.builder.keyColumnsSQL.joined(separator: ", ")
        let keyTuple = sqlTuple(qualified(keys))
        let written = makeTempTableName("bs_valid")
        let cols = (0..<keys.count).map { "k\($0)" }
        return try withDatabase { db -> ValidationReport in
            var report = ValidationReport(rowsMatched: 0, rowsFailing: 0, example: nil)
            report.preview = try previewUpdate(update, sample: 3, db)
            try connection.createTempTable(db, named: written, "(\(cols.joined(separator: ", ")))")
            defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(written))") }
            try db.inTransaction(.immediate) {
                report.rowsMatched = try Int.fetchOne(db, sql: "SELECT count(*)\(matchedKeys.fromWhere)", arguments: matchedKeys.arguments.statementArguments) ?? 0
                let insert = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(written)) VALUES (\(cols.map { _ in "?" }.joined(separator: ", ")))")
                var changed = 0
                let cursor = try Row.fetchCursor(db.makeStatement(sql: ignoring), arguments: arguments.statementArguments)
                var returned: [[SQLValue]] = []
                while let row = try cursor.next() {
                    returned.append((0..<row.count).map { SQLValue(row: row, at: $0) })
                    changed += 1
                    if returned.count >= 10_000 { for r in returned { try insert.bound(r).execute() }; returned.removeAll() }
                }
                for r in returned { try insert.bound(r).execute() }
                report.rowsFailing = report.rowsMatched - changed
                guard report.rowsFailing > 0 else { return .rollback }
                // One skipped row (matched, not written), tried alone on top of what the pass wrote:
                // SQLite's error for it is the reason (a UNIQUE conflict needs the other rows' new values).
                let keyList = cols.joined(separator: ", ")
                let notWritten = "\(keyTuple) NOT IN (SELECT \(keyList) FROM temp.\(quoteIdentifier(written)))"
                let exampleSQL = "SELECT \(keySelect)\(matchedKeys.fromWhere)\(matchedKeys.whereClause.isEmpty ? " WHERE " : " AND ")\(notWritten) LIMIT 1"
                let example = try Row.fetchCursor(db.makeStatement(sql: exampleSQL).bound(matchedKeys.arguments))
                guard let row = try example.next() else { return .rollback }
                let id = ObjectID(entity: entity, keyRow: row)
                let keyValues = id.keyValues
                let onlyThisRow = keys.map { "t.\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
                var reason = "constraint failed"
                do {
                    try db.makeStatement(sql: update.sql(extraCondition: onlyThisRow)).bound(arguments + keyValues).execute()
                } catch let e as DatabaseError {
                    reason = e.message ?? "\(e.resultCode)"
                }
                report.example = (id, reason)
                return .rollback
            }
            return report
        }
    }
}
