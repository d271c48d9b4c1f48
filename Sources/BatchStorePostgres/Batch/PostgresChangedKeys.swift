import BatchStore
import Foundation

/// The keys of changed rows in a temp table of the session that changed them (what a
/// ``StoredChanges`` over PostgreSQL holds): asked about the IDs a merge holds, 500 a statement,
/// or read in key order 10,000 at a time; never brought into memory whole. The table is dropped
/// when the last reference goes (the session is kept open until then).
final class PostgresChangedKeys: ChangedKeyTable, @unchecked Sendable {
    let lease: PostgresSessionLease
    /// The table's name in `pg_temp`.
    let table: String
    /// The key columns as the table names them (``PostgresIDColumn/named(_:)``), in key order.
    let columns: [PostgresIDColumn]

    init(lease: PostgresSessionLease, table: String, columns: [PostgresIDColumn]) {
        self.lease = lease
        self.table = table
        self.columns = columns
    }

    deinit { lease.session.executeDetached("DROP TABLE IF EXISTS \(qualifiedName)") }

    private var qualifiedName: String { "pg_temp.\(quoteIdentifier(table))" }
    var location: String { "PostgreSQL temp table \(table)" }
    private var tuple: String { "(" + columns.map { "c.\($0.name)" }.joined(separator: ", ") + ")" }
    private var select: String { columns.map { $0.read("c") }.joined(separator: ", ") }

    /// `(CAST($first AS …), …)`: one key's placeholders.
    private func placeholders(from first: Int) -> String {
        "(" + columns.enumerated().map { $1.cast("$\(first + $0)") }.joined(separator: ", ") + ")"
    }

    func matching(_ ids: [ObjectID], of entity: Entity) throws -> Set<ObjectID> {
        var found = Set<ObjectID>()
        let candidates = ids.filter { $0.keyValues.count == columns.count }
        for chunk in candidates.chunks(of: 500) {
            let list = chunk.indices.map { placeholders(from: 1 + ($0 - chunk.startIndex) * columns.count) }.joined(separator: ", ")
            let sql = "SELECT \(select) FROM \(qualifiedName) AS c WHERE \(tuple) IN (\(list))"
            for row in try lease.session.query(sql, chunk.flatMap(\.keyValues)) {
                found.insert(ObjectID(entity: entity, key: .primaryKey(row)))
            }
        }
        return found
    }

    func forEachObjectID(of entity: Entity, _ body: (ObjectID) throws -> Void) throws {
        let order = columns.map { "c.\($0.name)" }.joined(separator: ", ")
        var last: [SQLValue]?
        while true {
            let after = last == nil ? "" : " WHERE \(tuple) > \(placeholders(from: 1))"
            let rows = try lease.session.query("SELECT \(select) FROM \(qualifiedName) AS c\(after) ORDER BY \(order) LIMIT 10000", last ?? [])
            for row in rows { try body(ObjectID(entity: entity, key: .primaryKey(row))) }
            guard rows.count == 10_000, let final = rows.last else { return }
            last = final
        }
    }
}
