import Foundation

/// SQL text for one entity, built once per context.
final class EntityStatements {
    let entity: Entity
    /// `t."c1", t."c2", …` in attribute order.
    let columnList: String
    /// `t."rowid" = ?` or `t."a" = ? AND t."b" = ?`.
    let keyMatch: String
    let selectByKey: String
    let deleteByKey: String
    private var updateCache: [[Int]: String] = [:]
    private var insertCache: [[Int]: String] = [:]

    init(entity: Entity) {
        self.entity = entity
        self.columnList = entity.attributes.map { "t.\(quoteIdentifier($0.name))" }.joined(separator: ", ")
        let keys = entity.keyColumns
        self.keyMatch = keys.map { "t.\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
        let table = "main.\(quoteIdentifier(entity.name))"
        self.selectByKey = "SELECT \(columnList.isEmpty ? "NULL" : columnList) FROM \(table) AS t WHERE \(keyMatch.isEmpty ? "0" : keyMatch)"
        self.deleteByKey = "DELETE FROM \(table) AS t WHERE \(keyMatch.isEmpty ? "0" : keyMatch)"
    }

    func updateSQL(columns: [Int]) -> String {
        if let s = updateCache[columns] { return s }
        let sets = columns.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }.joined(separator: ", ")
        let s = "UPDATE OR ABORT main.\(quoteIdentifier(entity.name)) AS t SET \(sets) WHERE \(keyMatch)"
        updateCache[columns] = s
        return s
    }

    func insertSQL(columns: [Int]) -> String {
        if let s = insertCache[columns] { return s }
        let table = "main.\(quoteIdentifier(entity.name))"
        let s: String
        if columns.isEmpty {
            s = "INSERT OR ABORT INTO \(table) DEFAULT VALUES"
        } else {
            let names = columns.map { quoteIdentifier(entity.attributes[$0].name) }.joined(separator: ", ")
            s = "INSERT OR ABORT INTO \(table) (\(names)) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
        }
        insertCache[columns] = s
        return s
    }
}
