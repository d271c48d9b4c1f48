import Foundation
import GRDB

extension ManagedObjectContext {
    /// Applies the schema's delete rules to the rows of `entity` selected by `whereSQL` (alias `t`),
    /// inside the caller's transaction: deny fails, nullify clears the reference, cascade deletes the
    /// children after applying their own rules (depth first). Returns the rows changed besides the
    /// requested ones.
    func applyDeleteRules(_ db: Database, entity: Entity, whereSQL: String, arguments: [SQLValue], depth: Int = 0) throws -> Int {
        guard depth < 32 else { throw BatchStoreError(.constraint, "delete rules cascade more than 32 levels deep from \(entity.name); stopping") }
        var changed = 0
        for child in store.schema.entities where child.kind != .view {
            for rel in child.relationships where rel.destinationEntityName.caseInsensitiveCompare(entity.name) == .orderedSame {
                guard [.deny, .nullify, .cascade].contains(rel.deleteRule) else { continue }
                var referenced = rel.destinationColumns
                if referenced.isEmpty { referenced = entity.primaryKey.isEmpty ? entity.keyColumns : entity.primaryKey }
                guard referenced.count == rel.sourceColumns.count else { continue }
                // The referenced values of the rows being deleted, materialised for this level.
                let level = makeTempTableName("bs_rule")
                try connection.createTempTable(db, named: level, "AS SELECT \(qualified(referenced).joined(separator: ", ")) FROM main.\(quoteIdentifier(entity.name)) AS t\(whereSQL)", arguments: arguments.statementArguments)
                defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.\(quoteIdentifier(level))") }
                let source = sqlTuple(qualified(rel.sourceColumns))
                let childWhere = " WHERE \(source) IN (SELECT * FROM temp.\(quoteIdentifier(level)))"
                let childTable = "main.\(quoteIdentifier(child.name))"
                switch rel.deleteRule {
                case .deny:
                    let keys = child.keyColumns.isEmpty ? ["rowid"] : child.keyColumns
                    if let row = try Row.fetchOne(db, sql: "SELECT \(keys.map { "t.\(quoteIdentifier($0))" }.joined(separator: ", ")) FROM \(childTable) AS t\(childWhere) LIMIT 1") {
                        let key = (0..<row.count).map { (row[$0] as DatabaseValue).description }.joined(separator: ", ")
                        throw BatchStoreError(.constraint, "delete rule deny on \(child.name).\(rel.name): \(child.name) row \(key) still refers to a row being deleted; nothing was written")
                    }
                case .nullify:
                    let sets = rel.sourceColumns.map { "\(quoteIdentifier($0)) = NULL" }.joined(separator: ", ")
                    try db.execute(sql: "UPDATE OR ABORT \(childTable) AS t SET \(sets)\(childWhere)")
                    changed += db.changesCount
                case .cascade:
                    changed += try applyDeleteRules(db, entity: child, whereSQL: childWhere, arguments: [], depth: depth + 1)
                    try db.execute(sql: "DELETE FROM \(childTable) AS t\(childWhere)")
                    changed += db.changesCount
                default:
                    break
                }
            }
        }
        return changed
    }
}
