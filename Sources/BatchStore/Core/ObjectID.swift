import Foundation

/// What identifies a row within its entity.
public enum ObjectKey: Hashable, Sendable {
    /// A rowid table's rowid.
    case rowid(Int64)
    /// A WITHOUT ROWID table's primary key values, in key order.
    case primaryKey([SQLValue])
    /// An object inserted in a context and not saved yet.
    case temporary(UInt64)
    /// A row of a view or key-less table, by its position in one fetch; not addressable later.
    case position(Int)
}

/// Names one row: store + entity + key. Stable across runs (for a store of the same name) in its
/// ``uriRepresentation``, like Core Data's `NSManagedObjectID.uriRepresentation()`.
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The entity (and through it, the store name).
    public let entity: Entity
    /// The row's key.
    public internal(set) var key: ObjectKey

    public init(entity: Entity, key: ObjectKey) {
        self.entity = entity
        self.key = key
    }

    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.entity === rhs.entity && lhs.key == rhs.key
    }

    /// Hashes the entity's identity and the key; a rowid costs one combine besides the entity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(entity))
        switch key {
        case .rowid(let r): hasher.combine(r)
        case .primaryKey(let values): hasher.combine(1 as UInt8); hasher.combine(values)
        case .temporary(let n): hasher.combine(2 as UInt8); hasher.combine(n)
        case .position(let p): hasher.combine(3 as UInt8); hasher.combine(p)
        }
    }

    /// True until the object's context saves it.
    public var isTemporaryID: Bool { if case .temporary = key { return true } else { return false } }

    /// True when the ID names a row that can be fetched again (not temporary, not a view position).
    public var isAddressable: Bool {
        switch key {
        case .rowid, .primaryKey: return true
        case .temporary, .position: return false
        }
    }

    /// `x-batchstore://STORE/ENTITY/KEY`, with names percent-encoded and key values typed
    /// (`r42` for rowid 42; `k` + comma-separated `i7`, `f…`, `t…`, `b…`, `n` for primary keys).
    public var uriRepresentation: String {
        "x-batchstore://\(Self.encode(entity.storeName))/\(Self.encode(entity.name))/\(keyString)"
    }

    public var description: String { uriRepresentation }

    var keyString: String {
        switch key {
        case .rowid(let r): return "r\(r)"
        case .temporary(let n): return "tmp\(n)"
        case .position(let p): return "pos\(p)"
        case .primaryKey(let values):
            return "k" + values.map { v -> String in
                switch v {
                case .null: return "n"
                case .integer(let i): return "i\(i)"
                case .real(let d): return "f\(String(d.bitPattern, radix: 16))"
                case .text(let s): return "t\(Self.encode(s))"
                case .blob(let d): return "b" + d.map { String(format: "%02x", $0) }.joined()
                }
            }.joined(separator: ",")
        }
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) { out.append(Character(Unicode.Scalar(b))) } else { out += String(format: "%%%02X", b) }
        }
        return out
    }

    static func decode(_ s: Substring) -> String? {
        s.removingPercentEncoding
    }


    /// The key as SQL values, in the order of ``Entity`` key columns.
    package var keyValues: [SQLValue] {
        switch key {
        case .rowid(let r): return [.integer(r)]
        case .primaryKey(let v): return v
        case .temporary, .position: return []
        }
    }
}
