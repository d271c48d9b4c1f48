import Foundation
import GRDB

/// Where a ``StoredChanges`` keeps its keys: a temp table of the connection (SQLite) or session
/// (PostgreSQL) that ran the request, asked about IDs without bringing the table into memory.
/// The table goes when the last reference to its keeper does.
package protocol ChangedKeyTable: AnyObject, Sendable {
    /// Where the keys are, for descriptions: `temp.bs_changes_3`.
    var location: String { get }
    /// Which of `ids` (addressable IDs of `entity`) are in the table.
    func matching(_ ids: [ObjectID], of entity: Entity) throws -> Set<ObjectID>
    /// Calls `body` with every ID in the table, in key order, memory O(1) in the table's size;
    /// `body` runs outside any database access.
    func forEachObjectID(of entity: Entity, _ body: (ObjectID) throws -> Void) throws
}

/// The keys of the rows one batch request changed, kept in a temp table of the connection that ran
/// it, not in Swift memory (result type ``BatchResultType/changes``).
///
/// The table is filled by SQL inside the request's transaction
/// (`INSERT INTO temp.… SELECT <key> FROM main."T" WHERE …`), so ten million changed rows cost no
/// Swift memory at all. A merge asks it only about the objects a context holds:
/// `SELECT k0 FROM temp.… WHERE k0 IN (?, …)`, 500 keys per statement, each key one index probe. So
/// merging a million changed IDs into a context that holds a thousand objects costs two statements.
/// Over PostgreSQL the table is a temp table of the session that ran the request, asked the same way.
///
/// The table is dropped when the last reference to this object goes away.
public final class StoredChanges: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case inserted, updated, deleted }

    /// The entity whose rows changed.
    public let entity: Entity
    public let kind: Kind
    /// How many rows the table holds.
    public let count: Int
    let keys: any ChangedKeyTable

    package init(entity: Entity, kind: Kind, count: Int, keys: any ChangedKeyTable) {
        self.entity = entity
        self.kind = kind
        self.count = count
        self.keys = keys
    }

    convenience init(entity: Entity, kind: Kind, count: Int, queue: DatabaseQueue, table: String) {
        self.init(entity: entity, kind: kind, count: count, keys: SQLiteChangedKeys(queue: queue, table: table, keyCount: entity.keyColumns.count))
    }

    public var description: String { "<\(count) \(kind.rawValue) \(entity.name) rows in \(keys.location)>" }

    /// The temp table definition for the keys of `entity` (see ``Connection/createTempTable(_:named:_:arguments:)``):
    /// an INTEGER PRIMARY KEY for rowids, a WITHOUT ROWID primary key otherwise, so every
    /// membership test is one index probe.
    static func keyTableDefinition(_ entity: Entity) -> String {
        let n = entity.keyColumns.count
        if entity.isKeyedByRowid { return "(k0 INTEGER PRIMARY KEY)" }
        let cols = (0..<n).map { "k\($0)" }.joined(separator: ", ")
        return "(\(cols), PRIMARY KEY (\(cols))) WITHOUT ROWID"
    }

    /// Which of `ids` are in the table. Cost: one statement per 500 IDs, one index probe per ID;
    /// independent of ``count``.
    public func matching(_ ids: [ObjectID]) throws -> Set<ObjectID> {
        let entity = self.entity
        let candidates = ids.filter { $0.entity === entity && $0.isAddressable }
        guard !candidates.isEmpty else { return [] }
        return try keys.matching(candidates, of: entity)
    }

    /// Calls `body` with every ID, in key order, reading 10,000 at a time from the table (memory
    /// O(1) in ``count``): how `faultline update --result ids` prints millions of IDs. `body` runs
    /// outside any database access, so it may use any context.
    public func forEachObjectID(_ body: (ObjectID) throws -> Void) throws {
        try keys.forEachObjectID(of: entity, body)
    }

    /// Every ID, read into an array (memory O(count)).
    public func objectIDs() throws -> [ObjectID] {
        var ids: [ObjectID] = []
        ids.reserveCapacity(count)
        try forEachObjectID { ids.append($0) }
        return ids
    }
}

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
            var start = 0
            while start < candidates.count {
                let chunk = candidates[start..<min(start + 500, candidates.count)]
                start += chunk.count
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
