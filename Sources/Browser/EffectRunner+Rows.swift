import BatchStore
import Foundation

extension EffectRunner {
    /// The row as the grid shows it: values cut to display length, the store first with several.
    func snapshot(_ object: ManagedObject?) -> RowSnapshot {
        guard let object, !object.isDeleted else { return RowSnapshot(id: nil, values: [], exists: false) }
        let n = object.entity.attributes.count
        var values: [DisplayValue] = []
        values.reserveCapacity(n + 1)
        if data.showsStores { values.append(.text(object.objectID.entity.storeName)) }
        for i in 0..<n { values.append(DisplayValue((try? object.value(at: i)) ?? .null)) }
        return RowSnapshot(id: object.objectID.isAddressable ? object.objectID : nil, values: values, exists: true)
    }

    /// The rows of `range`, faulted in batches (or read from the eager array).
    /// - Complexity: O(`range.count`) plus one fault per batch not resident.
    func snapshots(_ range: Range<Int>) throws -> [RowSnapshot] {
        guard let collection else { return [] }
        let eager = eagerArray.count
        return try timingFaults(of: collection) {
            try range.map { row in
                if row < eager { return snapshot(eagerArray[row]) }
                return snapshot(try collection.object(at: row))
            }
        }
    }

    /// Runs `body`, and when it faulted batches of `collection` in, keeps the time per batch on
    /// the injected clock for the memory panel's "last fault".
    func timingFaults<R>(of collection: BrowserResult, _ body: () throws -> R) rethrows -> R {
        let faulted = collection.statistics.batchesFaulted
        let started = environment.now()
        let result = try body()
        let faults = collection.statistics.batchesFaulted - faulted
        if faults > 0 { lastFaultSeconds = (environment.now() - started) / Double(faults) }
        return result
    }

    /// Every column of `row`, in full (long text and blobs say their size first).
    func recordFields(_ row: Int) throws -> [(name: String, value: String)] {
        guard let collection, let object = try timingFaults(of: collection, { try collection.object(at: row) }) else {
            throw BatchStoreError(.objectNotFound, "row \(row + 1) was deleted since the result was fetched; r reloads")
        }
        var fields: [(name: String, value: String)] = [("object ID", object.objectID.uriRepresentation)]
        for (i, attribute) in object.entity.attributes.enumerated() {
            let value = try object.value(at: i)
            let shown: String
            switch value {
            case .null: shown = "NULL"
            case .text(let s):
                let limit = 2_000
                let head = s.prefix(limit + 1)
                // The size first: a long value runs off the screen's edge.
                shown = head.count > limit ? "(\(group(s.utf8.count)) bytes in all; the first \(group(limit)) characters) " + String(head.dropLast()) + "…" : s
            case .blob(let b):
                shown = "blob, \(group(b.count)) bytes: " + b.prefix(32).map { String(format: "%02x", $0) }.joined() + (b.count > 32 ? "…" : "")
            default: shown = DisplayValue(value).shown
            }
            fields.append((attribute.name + (attribute.declaredType.isEmpty ? "" : " " + attribute.declaredType), shown))
        }
        return fields
    }
}
