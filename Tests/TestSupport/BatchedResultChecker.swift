import BatchStore
import Foundation

/// A conformance checker for batched results, in the manner of swift-collections' checkers: it
/// drives `result` through every collection and batched-result entry point and compares each
/// answer with `expected` (the object IDs the result must hold, in order, from a plain Swift model).
///
/// Returns one line per disagreement (empty when the result conforms), so a caller can report
/// them with the sizes that produced them.
public func batchedResultFailures<R: BatchedResult>(_ result: R, expected: [ObjectID], stores: [String: String] = [:]) -> [String] {
    var failures: [String] = []
    func check(_ ok: Bool, _ what: @autoclosure () -> String) { if !ok { failures.append(what()) } }
    func id(_ object: ManagedObject??) -> ObjectID? { object.flatMap { $0?.objectID } }
    do {
        // Indices.
        check(result.count == expected.count, "count \(result.count), expected \(expected.count)")
        check(result.startIndex == 0 && result.endIndex == expected.count, "indices \(result.startIndex)..<\(result.endIndex)")
        check(result.isEmpty == expected.isEmpty, "isEmpty \(result.isEmpty)")
        guard failures.isEmpty else { return failures }
        let n = expected.count
        check(result.distance(from: 0, to: n) == n, "distance")
        if n > 0 {
            check(result.index(0, offsetBy: n - 1) == n - 1, "index(offsetBy:)")
            check(result.index(after: 0) == 1 && result.index(before: n) == n - 1, "index(after:) / index(before:)")
        }
        // Every position, forwards: the subscript, the throwing read and the ID table agree with the model.
        var forward: [ObjectID?] = []
        for object in result { forward.append(object?.objectID) }
        check(forward == expected.map { $0 }, "iteration gave \(forward.prefix(5))…, expected \(expected.prefix(5))…")
        for i in 0..<n {
            let thrown = try result.object(at: i)?.objectID
            check(thrown == expected[i], "object(at: \(i)) is \(String(describing: thrown)), expected \(expected[i])")
            let fromTable = try result.objectID(at: i)
            check(fromTable == expected[i], "objectID(at: \(i)) is \(String(describing: fromTable)), expected \(expected[i])")
            if let store = stores[expected[i].uriRepresentation] {
                check(try result.storeName(at: i) == store, "storeName(at: \(i)) is not \(store)")
            }
        }
        // Backwards, and jumping about (each jump may fault another batch and evict one).
        var backward: [ObjectID?] = []
        for i in stride(from: n - 1, through: 0, by: -1) { backward.append(result[i]?.objectID) }
        check(backward == expected.reversed().map { $0 }, "backwards iteration differs")
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 &* UInt64(n + 1)
        for _ in 0..<min(200, 4 * n) {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let i = Int((state >> 33) % UInt64(n))
            check(result[i]?.objectID == expected[i], "random access at \(i)")
        }
        // Slices keep their parent's indices and contents.
        if n > 0 {
            let cuts = [0, n / 3, n / 2, n - 1, n].sorted()
            for a in cuts { for b in cuts where b >= a {
                let slice = result[a..<b]
                check(slice.startIndex == a && slice.endIndex == b, "slice \(a)..<\(b) has indices \(slice.startIndex)..<\(slice.endIndex)")
                check(slice.map { $0?.objectID } == expected[a..<b].map { $0 }, "slice \(a)..<\(b) differs")
            } }
            check(result.prefix(3).map { $0?.objectID } == expected.prefix(3).map { $0 }, "prefix(3)")
            check(result.suffix(3).map { $0?.objectID } == expected.suffix(3).map { $0 }, "suffix(3)")
            check(id(result.first) == expected.first && id(result.last) == expected.last, "first / last")
        }
        // Memory follows what was looked at: batches stay bounded, no ID is held in Swift.
        let stats = result.statistics
        check(stats.batchesResident <= stats.residentBatchLimit, "\(stats.batchesResident) batches resident, limit \(stats.residentBatchLimit)")
        check(stats.idsInSwiftMemory == 0 && stats.idsHeld == n, "IDs held \(stats.idsHeld) (\(stats.idsInSwiftMemory) in Swift)")
        let batches = n == 0 ? 0 : (n + result.batchSize - 1) / result.batchSize
        check(stats.batchesFaulted >= batches, "\(stats.batchesFaulted) batches faulted for \(n) rows of \(result.batchSize)")
        check(result.lastError == nil, "lastError \(String(describing: result.lastError))")
        // Membership: every row is a member, in the order asked; a made-up row is not.
        let asked = Array(expected.reversed())
        check(try result.members(of: asked) == asked, "members(of:) of the result's own rows")
        if let some = expected.first {
            let stranger = ObjectID(entity: some.entity, key: .rowid(Int64.max - 7))
            check(try result.members(of: [stranger]).isEmpty, "members(of:) took a row that is not in the result")
        }
        // A refresh with nothing changed keeps every row where it was.
        if n > 0 {
            let anchor = n / 2
            check(try result.refresh(keeping: [anchor]) == anchor, "refresh(keeping:) moved an unchanged row")
            check(result.count == n, "refresh changed the count of an unchanged result")
            check(result[anchor]?.objectID == expected[anchor], "after refresh, row \(anchor) differs")
        }
    } catch {
        failures.append("threw \(error)")
    }
    return failures
}
