import Foundation
import GRDB

/// The keys of the rows one batch request changed, kept in a temp table of the connection that ran
/// it, not in Swift memory (result type ``BatchResultType/changes``).
///
/// The table is filled by SQL inside the request's transaction
/// (`INSERT INTO temp.… SELECT <key> FROM main."T" WHERE …`), so ten million changed rows cost no
/// Swift memory at all. A merge asks it only about the objects a context holds:
/// `SELECT k0 FROM temp.… WHERE k0 IN (?, …)`, 500 keys per statement, each key one index probe. So
/// merging a million changed IDs into a context that holds a thousand objects costs two statements.
///
/// The table is dropped when the last reference to this object goes away.
public final class StoredChanges: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case inserted, updated, deleted }

    /// The entity whose rows changed.
    public let entity: Entity
    public let kind: Kind
    /// How many rows the table holds.
    public let count: Int
    let queue: DatabaseQueue
    let table: String

    init(entity: Entity, kind: Kind, count: Int, queue: DatabaseQueue, table: String) {
        self.entity = entity
        self.kind = kind
        self.count = count
        self.queue = queue
        self.table = table
    }

    deinit {
        // Asynchronously on the connection's own queue: a deinit may run anywhere, even inside an
        // access to that connection, where a synchronous call would deadlock.
        let sql = "DROP TABLE IF EXISTS temp.\(quoteIdentifier(table))"
        queue.asyncWriteWithoutTransaction { db in try? db.execute(sql: sql) }
    }

    public var description: String { "<\(count) \(kind.rawValue) \(entity.name) rows in temp.\(table)>" }

    private var keyColumns: [String] { (0..<entity.keyColumns.count).map { "k\($0)" } }

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

    /// Calls `body` with every ID, in key order, reading 10,000 at a time from the table (memory
    /// O(1) in ``count``): how `faultline update --result ids` prints millions of IDs. `body` runs
    /// outside any database access, so it may use any context.
    public func forEachObjectID(_ body: (ObjectID) throws -> Void) throws {
        let cols = keyColumns
        let list = cols.joined(separator: ", ")
        let entity = self.entity
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

    /// Every ID, read into an array (memory O(count)).
    public func objectIDs() throws -> [ObjectID] {
        var ids: [ObjectID] = []
        ids.reserveCapacity(count)
        try forEachObjectID { ids.append($0) }
        return ids
    }
}
