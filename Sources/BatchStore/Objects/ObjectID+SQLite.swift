import Foundation
import GRDB

extension ObjectID {
    /// The ID of the row whose key columns are the columns of `row` from `offset` on (a rowid, or
    /// the primary key values in key order).
    init(entity: Entity, keyRow row: Row, from offset: Int = 0) {
        if entity.isKeyedByRowid {
            self.init(entity: entity, key: .rowid(row[offset]))
        } else {
            self.init(entity: entity, key: .primaryKey((offset..<(offset + entity.keyColumns.count)).map { SQLValue(row: row, at: $0) }))
        }
    }

    /// Parses a URI made by ``uriRepresentation`` against the stores given.
    /// - Throws: `.invalidArgument` for a malformed URI, `.noSuchEntity` for an unknown store or entity.
    public static func parse(uriRepresentation uri: String, stores: [PersistentStore]) throws -> ObjectID {
        let prefix = "x-batchstore://"
        guard uri.hasPrefix(prefix) else { throw BatchStoreError(.invalidArgument, "not an object ID URI: \(uri.debugDescription)") }
        let parts = uri.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let storeName = decode(parts[0]), let entityName = decode(parts[1]) else {
            throw BatchStoreError(.invalidArgument, "malformed object ID URI: \(uri.debugDescription)")
        }
        guard let store = stores.first(where: { $0.name == storeName }) else {
            throw BatchStoreError(.noSuchEntity, "object ID names store \(storeName.debugDescription), which is not open")
        }
        let entity = try store.entity(named: entityName)
        let keyPart = parts[2]
        if keyPart.hasPrefix("r"), let r = Int64(keyPart.dropFirst()) {
            return ObjectID(entity: entity, key: .rowid(r))
        }
        if keyPart.hasPrefix("k") {
            var values: [SQLValue] = []
            for item in keyPart.dropFirst().split(separator: ",", omittingEmptySubsequences: false) {
                guard let tag = item.first else { throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)") }
                let body = item.dropFirst()
                switch tag {
                case "n": values.append(.null)
                case "i":
                    guard let i = Int64(body) else { throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)") }
                    values.append(.integer(i))
                case "f":
                    guard let bits = UInt64(body, radix: 16) else { throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)") }
                    values.append(.real(Double(bitPattern: bits)))
                case "t":
                    guard let s = decode(body) else { throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)") }
                    values.append(.text(s))
                case "b":
                    var data = Data()
                    var it = body.makeIterator()
                    while let hi = it.next() {
                        guard let lo = it.next(), let byte = UInt8(String([hi, lo]), radix: 16) else {
                            throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)")
                        }
                        data.append(byte)
                    }
                    values.append(.blob(data))
                default: throw BatchStoreError(.invalidArgument, "malformed key in \(uri.debugDescription)")
                }
            }
            return ObjectID(entity: entity, key: .primaryKey(values))
        }
        throw BatchStoreError(.invalidArgument, "object ID URI \(uri.debugDescription) does not name a stored row")
    }
}
