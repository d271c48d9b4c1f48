import Foundation

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

    public var description: String { "<\(count) \(kind.rawValue) \(entity.name) rows in \(keys.location)>" }

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
