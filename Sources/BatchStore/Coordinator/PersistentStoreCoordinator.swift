import Foundation

/// Several stores (SQLite files) seen as one, like Core Data's coordinator with several
/// persistent stores: an entity present in several stores is fetched as one result, and batch
/// requests name the stores they affect.
///
/// Stores are told apart by name (``PersistentStore/name``, the file name without extension
/// unless given), so the same key in two stores never names the same object.
public final class PersistentStoreCoordinator: Sendable {
    /// The stores, in the order given; the first is the default for inserts.
    public let stores: [PersistentStore]

    /// SQLite attaches at most 10 databases to a connection besides `main`.
    public static let maximumStores = 11

    /// - Throws: `.invalidArgument` for no stores, too many, or two with the same name.
    public init(stores: [PersistentStore]) throws {
        guard !stores.isEmpty else { throw BatchStoreError(.invalidArgument, "a coordinator needs at least one store") }
        guard stores.count <= Self.maximumStores else {
            throw BatchStoreError(.invalidArgument, "at most \(Self.maximumStores) stores can be browsed together (SQLite attaches 10 databases besides the first)")
        }
        var seen = Set<String>()
        for store in stores where !seen.insert(store.name).inserted {
            throw BatchStoreError(.invalidArgument, "two stores are named \(store.name.debugDescription); give each file a different name")
        }
        self.stores = stores
    }

    /// The store named `name`.
    public func store(named name: String) throws -> PersistentStore {
        guard let s = stores.first(where: { $0.name == name }) else {
            throw BatchStoreError(.invalidArgument, "no store named \(name.debugDescription) (stores: \(stores.map(\.name).joined(separator: ", ")))")
        }
        return s
    }

    /// The entity named `name` in each of `storeNames` (default: every store that has it), checked
    /// to have the same columns, types and keys everywhere.
    /// - Throws: `.noSuchEntity` when a named store lacks it or no store has it; `.invalidQuery`
    ///   naming the first difference between two stores.
    public func entities(named name: String, in storeNames: [String]? = nil) throws -> [Entity] {
        let chosen = try storeNames.map { try $0.map { try store(named: $0) } } ?? stores
        var found: [Entity] = []
        for store in chosen {
            if let entity = store.schema.entity(named: name) {
                found.append(entity)
            } else if storeNames != nil {
                throw BatchStoreError(.noSuchEntity, "store \(store.name) has no table or view named \(name.debugDescription)")
            }
        }
        guard let first = found.first else {
            throw BatchStoreError(.noSuchEntity, "no store has a table or view named \(name.debugDescription)")
        }
        for other in found.dropFirst() {
            if let difference = Self.difference(first, other) {
                throw BatchStoreError(.invalidQuery, "\(first.name) differs between stores \(first.storeName) and \(other.storeName): \(difference)")
            }
        }
        return found
    }

    /// The first difference between two stores' versions of an entity, in words; nil when none.
    static func difference(_ a: Entity, _ b: Entity) -> String? {
        if a.kind != b.kind { return "a \(a.kind.rawValue) in \(a.storeName), a \(b.kind.rawValue) in \(b.storeName)" }
        let aNames = a.attributes.map(\.name), bNames = b.attributes.map(\.name)
        if let missing = aNames.first(where: { !bNames.contains($0) }) { return "column \(missing.debugDescription) is only in \(a.storeName)" }
        if let missing = bNames.first(where: { !aNames.contains($0) }) { return "column \(missing.debugDescription) is only in \(b.storeName)" }
        if aNames != bNames { return "the columns are in a different order" }
        for (x, y) in zip(a.attributes, b.attributes) {
            if x.declaredType.uppercased() != y.declaredType.uppercased() {
                return "column \(x.name.debugDescription) is \(x.declaredType.isEmpty ? "untyped" : x.declaredType) in \(a.storeName), \(y.declaredType.isEmpty ? "untyped" : y.declaredType) in \(b.storeName)"
            }
            if x.primaryKeyPosition != y.primaryKeyPosition { return "the primary key differs at column \(x.name.debugDescription)" }
            if x.isGenerated != y.isGenerated { return "column \(x.name.debugDescription) is generated in only one of them" }
        }
        if a.keyColumns != b.keyColumns { return "their row keys differ" }
        return nil
    }
}
