import Foundation
import GRDB

/// A SQLite temp table of changed keys (`k0`, `k1`, …) on the connection `queue` serialises.
final class SQLiteChangedKeys: ChangedKeyTable {
    let queue: DatabaseQueue
    let table: String
    let keyCount: Int

    init(queue: DatabaseQueue, table: String, keyCount: Int) {
        self.queue = queue
        self.table = table
        self.keyCount = keyCount
    }

    deinit {
        // Asynchronously on the connection's own queue: a deinit may run anywhere, even inside an
        // access to that connection, where a synchronous call would deadlock.
        let sql = "DROP TABLE IF EXISTS temp.\(quoteIdentifier(table))"
        queue.asyncWriteWithoutTransaction { db in try? db.execute(sql: sql) }
    }

    var location: String { "temp.\(table)" }

    private var keyColumns: [String] { (0..<keyCount).map { "k\($0)" } }

    func matching(_ candidates: [ObjectID], of entity: Entity) throws -> Set<ObjectID> {
        let cols = keyColumns
        let table = quoteIdentifier(self.table)
        return try queue.inDatabase { db in
            var found = Set<ObjectID>()
            for chunk in candidates.chunks(of: 500) {
                let sql: String
                if cols.count == 1 {
                    sql = "SELECT k0 FROM temp.\(table) WHERE k0 IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))"
                } else {
                    let tuple = "(" + cols.map { _ in "?" }.joined(separator: ", ") + ")"
                    sql = "SELECT \(cols.joined(separator: ", ")) FROM temp.\(table) WHERE (\(cols.joined(separator: ", "))) IN (VALUES \(chunk.map { _ in tuple }.joined(separator: ", ")))"
                }
                let statement = try db.cachedStatement(sql: sql)
                let rows = try Row.fetchCursor(try statement.bound(chunk.flatMap(\.keyValues)))
                while let row = try rows.next() { found.insert(ObjectID(entity: entity, keyRow: row)) }
            }
            return found
        }
    }

    func forEachObjectID(of entity: Entity, _ body: (ObjectID) throws -> Void) throws {
        let cols = keyColumns
        let list = cols.joined(separator: ", ")
        let table = quoteIdentifier(self.table)
        let after = cols.count == 1 ? "k0 > ?" : "(\(list)) > (\(cols.map { _ in "?" }.joined(separator: ", ")))"
        var last: [SQLValue]?
        while true {
            let page: [ObjectID] = try queue.inDatabase { db in
                let sql = "SELECT \(list) FROM temp.\(table)\(last == nil ? "" : " WHERE \(after)") ORDER BY \(list) LIMIT 10000"
                let rows = try Row.fetchCursor(try db.cachedStatement(sql: sql).bound(last ?? []))
                var ids: [ObjectID] = []
                while let row = try rows.next() { ids.append(ObjectID(entity: entity, keyRow: row)) }
                return ids
            }
            for id in page { try body(id) }
            guard page.count == 10_000, let final = page.last else { return }
            last = final.keyValues
        }
    }

}

extension StoredChanges {
    convenience init(entity: Entity, kind: Kind, count: Int, queue: DatabaseQueue, table: String) {
        self.init(entity: entity, kind: kind, count: count, keys: SQLiteChangedKeys(queue: queue, table: table, keyCount: entity.keyColumns.count))
    }

    /// The temp table definition for the keys of `entity` (see ``Connection/createTempTable(_:named:_:arguments:)``):
    /// an INTEGER PRIMARY KEY for rowids, a WITHOUT ROWID primary key otherwise, so every
    /// membership test is one index probe.
    static func keyTableDefinition(_ entity: Entity) -> String {
        let n = entity.keyColumns.count
        if entity.isKeyedByRowid { return "(k0 INTEGER PRIMARY KEY)" }
        let cols = (0..<n).map { "k\($0)" }.joined(separator: ", ")
        return "(\(cols), PRIMARY KEY (\(cols))) WITHOUT ROWID"
    }
}
