import BatchStore
import Foundation

/// One definition of the identity-map and merging suite, run over a ``ManagedObjectContext``
/// (`ContextModelTests`, SQLite) and a `PostgresContext` (`PostgresContextModelTests`): random
/// sequences of fetches, lookups, held objects, batch updates and deletes merged or not, writes of
/// another session, refreshes, checked after every step against a plain Swift model of
/// what the file holds and of what each object must show.
///
/// What the model says an object shows:
/// - a fault (`isFault`) reads the row as the file holds it now (`.objectNotFound` when gone);
/// - an object the test holds with values keeps them, even when the row changed since, until a
///   merge names its row or a refresh turns it back into a fault (Core Data's stale context);
/// - any other object with values shows the file's row, unless that row changed without a merge
///   since (it may sit in a resident batch read before): then it is not checked;
/// - one object per row: a read of a row the test holds an object for gives that very object;
/// - a merge refaults the held objects of updated rows and marks those of deleted rows deleted
///   (their slots in open results then read nil); a result's count and order are those of the
///   file when it was opened or last refreshed.
public enum ContextModel {
    /// An engine's context over table `m(id, v, name)` holding ``rows(seed:)``.
    public struct Engine {
        public let name: String
        public let context: any ObjectContext
        /// The ID of row `id`.
        public let id: (Int64) -> ObjectID
        /// Runs `sql` in another session (another connection of the file, another server session).
        public let external: (String) throws -> Void
        /// The table's rows as the file holds them, by id.
        public let fileRows: () throws -> [Int64: Int64?]

        public init(name: String, context: any ObjectContext, id: @escaping (Int64) -> ObjectID,
                    external: @escaping (String) throws -> Void, fileRows: @escaping () throws -> [Int64: Int64?]) {
            self.name = name
            self.context = context
            self.id = id
            self.external = external
            self.fileRows = fileRows
        }
    }

    /// The table, in SQL both engines take (an integer primary key: SQLite's rowid).
    public static let tableSQL = "CREATE TABLE m(id integer PRIMARY KEY, v bigint, name text)"

    /// 60 rows: ids 1…60, `v` a small number (ties, and NULL one time in seven), `name` from the id.
    public static func rows(seed: UInt64) -> [(id: Int64, v: Int64?)] {
        var g = SeededGenerator(state: seed)
        return (1...60).map { id in (Int64(id), g.next(7) == 0 ? nil : Int64(g.next(40))) }
    }

    /// `INSERT` statements for ``rows(seed:)``.
    public static func insertSQL(_ rows: [(id: Int64, v: Int64?)]) -> String {
        "INSERT INTO m(id, v, name) VALUES " + rows.map { "(\($0.id), \($0.v.map(String.init) ?? "NULL"), 'r\($0.id)')" }.joined(separator: ", ")
    }

    public enum Step: CustomStringConvertible, Sendable {
        /// Fetches `v > above` (all rows when nil), by `v` then id or by id, as a batched result.
        case open(above: Int64?, byV: Bool, batch: Int, resident: Int)
        /// Reads the row at `position` of open result `result` (modulo what is open and its count).
        case read(result: Int, position: Int, hold: Bool)
        /// `existingObject(with:)`, held.
        case lookup(Int64)
        /// `object(with:)`, held, not read.
        case fault(Int64)
        /// `v = v + add` where `id <= upTo`, answered as `resultType` (0 count, 1 IDs, 2 stored
        /// changes), merged when `merge` (and the answer allows it).
        case update(upTo: Int64, add: Int64, resultType: Int, merge: Bool)
        /// Deletes `id % modulus == rest`, answered and merged as for `update`.
        case delete(modulus: Int64, rest: Int64, resultType: Int, merge: Bool)
        /// Another session sets `v` of row `id`.
        case external(id: Int64, v: Int64)
        case refreshAll
        /// `refresh(_:mergeChanges: false)` of the held object of row `id`, if any.
        case refreshObject(Int64)
        /// Runs the ID fetch of open result `result` again.
        case refreshResult(Int)
        /// Lets go of every held object.
        case release

        public var description: String {
            switch self {
            case let .open(above, byV, batch, resident): "open v > \(above.map(String.init) ?? "-"), by \(byV ? "v" : "id"), batch \(batch), resident \(resident)"
            case let .read(result, position, hold): "read result \(result) at \(position)\(hold ? ", held" : "")"
            case let .lookup(id): "existingObject \(id)"
            case let .fault(id): "object(with:) \(id)"
            case let .update(upTo, add, type, merge): "update v = v + \(add) where id <= \(upTo), \(["count", "objectIDs", "changes"][type])\(merge ? ", merged" : "")"
            case let .delete(m, r, type, merge): "delete id % \(m) == \(r), \(["count", "objectIDs", "changes"][type])\(merge ? ", merged" : "")"
            case let .external(id, v): "another session sets v = \(v) in row \(id)"
            case .refreshAll: "refreshAllObjects"
            case let .refreshObject(id): "refresh object \(id)"
            case let .refreshResult(r): "refresh result \(r)"
            case .release: "release held objects"
            }
        }

        var kind: String { String(description.prefix { $0 != " " }) }
    }

    /// A random step.
    public static func step(_ g: inout SeededGenerator) -> Step {
        switch g.next(20) {
        case 0, 1: .open(above: g.next(3) == 0 ? nil : Int64(g.next(30)), byV: g.next(2) == 0, batch: 2 + g.next(9), resident: 1 + g.next(3))
        case 2...6: .read(result: g.next(3), position: g.next(70), hold: g.next(2) == 0)
        case 7: .lookup(Int64(1 + g.next(62)))
        case 8: .fault(Int64(1 + g.next(62)))
        case 9, 10: .update(upTo: Int64(5 + g.next(50)), add: Int64(1 + g.next(9)), resultType: g.next(3), merge: g.next(4) != 0)
        case 11: .delete(modulus: Int64(5 + g.next(8)), rest: Int64(g.next(5)), resultType: g.next(3), merge: g.next(4) != 0)
        case 12, 13: .external(id: Int64(1 + g.next(60)), v: Int64(g.next(40)))
        case 14: .refreshAll
        case 15: .refreshObject(Int64(1 + g.next(60)))
        case 16, 17: .refreshResult(g.next(3))
        case 18: .release
        default: .read(result: g.next(3), position: g.next(70), hold: true)
        }
    }

    /// Every kind of step, for a check that a run covered them.
    public static let kinds: Set<String> = ["open", "read", "existingObject", "object(with:)", "update", "delete", "another", "refreshAllObjects", "refresh"]

    private struct Held {
        let object: ManagedObject
        /// What it shows while it has values.
        var shown: Int64??
    }

    private struct OpenResult {
        let collection: BatchFaultingCollection
        let above: Int64?
        let byV: Bool
        /// The ids in order, as of the fetch (or its last refresh).
        var ids: [Int64]
    }

    /// Runs `steps` on a fresh engine from `make`; nil when every check held, else the first
    /// failure, naming its step.
    public static func run(_ steps: [Step], seed: UInt64, make: () throws -> Engine) throws -> String? {
        let engine = try make()
        let context = engine.context
        let entity = engine.id(1).entity
        var file = Dictionary(uniqueKeysWithValues: rows(seed: seed).map { ($0.id, $0.v) })
        var held: [Int64: Held] = [:]
        var results: [OpenResult] = []
        /// Rows changed in the file with no merge naming them nor refresh since.
        var unmerged = Set<Int64>()
        func key(_ id: ObjectID) -> Int64 { id.keyValues.first?.integerValue ?? -1 }
        func order(_ above: Int64?, _ byV: Bool) -> [Int64] {
            let ids = file.filter { above == nil || ($0.value.map { $0 > above! } ?? false) }.map(\.key)
            guard byV else { return ids.sorted() }
            return ids.sorted { a, b in
                let (va, vb) = (file[a]!, file[b]!)
                if va == vb { return a < b }
                guard let va else { return true }
                guard let vb else { return false }
                return va < vb
            }
        }

        /// Checks what `object` shows (it was a fault before the read when `wasFault`).
        func check(_ object: ManagedObject, wasFault: Bool, _ at: String) throws -> String? {
            let id = key(object.objectID)
            if let h = held[id], !h.object.isDeleted, h.object !== object {
                return "\(at): row \(id) read as another object than the one held (identity map)"
            }
            let shown: Int64?
            do {
                shown = try object.value(forKey: "v").integerValue
                guard try object.value(forKey: "name") == .text("r\(id)") else { return "\(at): row \(id) shows the wrong name" }
            } catch let error as BatchStoreError where error.code == .objectNotFound {
                if file[id] != nil { return "\(at): row \(id) read as gone, but the file holds it" }
                return nil
            }
            if wasFault {
                guard let now = file[id] else { return "\(at): row \(id) read from a fault, but the file no longer holds it" }
                if shown != now { return "\(at): row \(id) read from a fault shows v = \(shown.map(String.init) ?? "NULL"), the file holds \(now.map(String.init) ?? "NULL")" }
            } else if let h = held[id], h.object === object, let expected = h.shown {
                if shown != expected { return "\(at): held row \(id) shows v = \(shown.map(String.init) ?? "NULL"), it showed \(expected.map(String.init) ?? "NULL") before (only a merge or refresh changes it)" }
            } else if !unmerged.contains(id) {
                guard let now = file[id] else { return "\(at): row \(id) shows values, but the file no longer holds it (merged as deleted)" }
                if shown != now { return "\(at): row \(id) shows v = \(shown.map(String.init) ?? "NULL"), the file holds \(now.map(String.init) ?? "NULL")" }
            }
            if var h = held[id], h.object === object { h.shown = .some(shown); held[id] = h }
            return nil
        }

        func hold(_ object: ManagedObject) {
            let id = key(object.objectID)
            if let h = held[id], h.object === object { return }
            held[id] = Held(object: object, shown: nil)
        }

        /// Merges `result`'s answer, or notes its rows as changed unmerged.
        func afterEdit(_ result: BatchResult, type: Int, merge: Bool, changed: [Int64], deleting: Bool, _ at: String) -> String? {
            guard merge, type != 0 else {
                unmerged.formUnion(changed)
                return nil
            }
            let changes = type == 1
                ? (deleting ? ChangeSet(deleted: result.objectIDs ?? []) : ChangeSet(updated: result.objectIDs ?? []))
                : result.changes ?? ChangeSet()
            if type == 1, Set((result.objectIDs ?? []).map(key)) != Set(changed) { return "\(at): the answer's IDs are not the rows changed" }
            let report = context.mergeChanges(changes)
            let reported = Set((deleting ? report.deleted : report.updated).map(key))
            for id in changed {
                unmerged.remove(id)
                guard let h = held[id], !h.object.isDeleted || deleting else { continue }
                if !reported.contains(id) { return "\(at): the merge report leaves out held row \(id)" }
                if deleting {
                    if !h.object.isDeleted { return "\(at): held row \(id) is not marked deleted after the merge" }
                    if context.registeredObject(for: h.object.objectID) != nil { return "\(at): row \(id) is still registered after its delete was merged" }
                } else if !h.object.isFault {
                    return "\(at): held row \(id) is not a fault after the merge of its update"
                }
            }
            return nil
        }

        for (n, step) in steps.enumerated() {
            let at = "step \(n + 1) (\(step))"
            switch step {
            case let .open(above, byV, batch, resident):
                var sort = [SortDescriptor(key: "id")]
                if byV { sort.insert(SortDescriptor(key: "v"), at: 0) }
                let request = FetchRequest(entityName: entity.name, predicate: try above.map { try FetchPredicate("v > \($0)") },
                                           sortDescriptors: sort, fetchBatchSize: batch)
                let collection = try context.fetchBatched(request, residentBatches: resident, firstBatch: nil, progress: nil)
                results.append(OpenResult(collection: collection, above: above, byV: byV, ids: order(above, byV)))
                if results.count > 3 { results.removeFirst() }
                if collection.count != results.last!.ids.count { return "\(at): \(collection.count) rows, the file has \(results.last!.ids.count)" }
            case let .read(r, position, keep):
                guard !results.isEmpty else { continue }
                let result = results[r % results.count]
                guard !result.ids.isEmpty else { continue }
                let p = position % result.ids.count
                let id = result.ids[p]
                // No registered object (or a fault) before the read: the read shows the row now.
                let prior = context.registeredObject(for: engine.id(id))
                let wasFault = prior.map { $0.isFault } ?? true
                let object: ManagedObject?
                do {
                    object = try result.collection.object(at: p)
                } catch {
                    return "\(at): reading position \(p) threw \(error)"
                }
                guard let object else {
                    // Gone: deleted in the file (merged, or faulted since).
                    if file[id] != nil { return "\(at): position \(p) (row \(id)) read as gone, the file holds it" }
                    continue
                }
                if key(object.objectID) != id { return "\(at): position \(p) holds row \(key(object.objectID)), expected \(id)" }
                if file[id] == nil, !unmerged.contains(id) { return "\(at): row \(id), deleted and merged, still reads at position \(p)" }
                if keep { hold(object) }
                if let failure = try check(object, wasFault: wasFault, at) { return failure }
            case let .lookup(id):
                let prior = context.registeredObject(for: engine.id(id))
                let wasFault = prior.map { $0.isFault } ?? true
                do {
                    let object = try context.existingObject(with: engine.id(id))
                    if let h = held[id], !h.object.isDeleted, h.object !== object { return "\(at): existingObject gave another object than the one held" }
                    hold(object)
                    if let failure = try check(object, wasFault: wasFault, at) { return failure }
                } catch let error as BatchStoreError where error.code == .objectNotFound {
                    if file[id] != nil, held[id]?.object.isDeleted != true { return "\(at): existingObject says row \(id) is gone, the file holds it" }
                }
            case let .fault(id):
                let object = context.object(with: engine.id(id))
                if let h = held[id], !h.object.isDeleted, h.object !== object { return "\(at): object(with:) gave another object than the one held" }
                if context.registeredObject(for: engine.id(id)) !== object { return "\(at): object(with:) did not register its object" }
                let wasFault = object.isFault
                hold(object)
                if let failure = try check(object, wasFault: wasFault, at) { return failure }
            case let .update(upTo, add, type, merge):
                let changed = file.keys.filter { $0 <= upTo }.sorted()
                let request = BatchUpdateRequest(entityName: entity.name, predicate: try FetchPredicate("id <= \(upTo)"),
                                                 propertiesToUpdate: try UpdateExpression.parseAssignments("v = v + \(add)"),
                                                 resultType: [.count, .objectIDs, .changes][type])
                let result = try context.execute(request, undoable: false)
                for id in changed {
                    // Typed, so that a NULL stays a row holding NULL (an untyped map would remove the key).
                    let new: Int64? = file[id]!.map { $0 + add }
                    file[id] = .some(new)
                }
                if result.count.map({ $0 != changed.count }) ?? false { return "\(at): \(result.count!) rows updated, expected \(changed.count)" }
                if let failure = afterEdit(result, type: type, merge: merge, changed: changed, deleting: false, at) { return failure }
            case let .delete(modulus, rest, type, merge):
                let changed = file.keys.filter { $0 % modulus == rest }.sorted()
                let request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: entity.name, predicate: try FetchPredicate("id % \(modulus) == \(rest)")),
                                                 resultType: [.count, .objectIDs, .changes][type])
                let result = try context.execute(request, undoable: false)
                for id in changed { file[id] = nil }
                if result.count.map({ $0 != changed.count }) ?? false { return "\(at): \(result.count!) rows deleted, expected \(changed.count)" }
                if let failure = afterEdit(result, type: type, merge: merge, changed: changed, deleting: true, at) { return failure }
            case let .external(id, v):
                try engine.external("UPDATE m SET v = \(v) WHERE id = \(id)")
                if file[id] != nil {
                    file[id] = v
                    unmerged.insert(id)
                }
            case .refreshAll:
                context.refreshAllObjects()
                unmerged.removeAll()
                for (id, h) in held where !h.object.isDeleted && !h.object.isFault {
                    return "\(at): held row \(id) is not a fault after refreshAllObjects"
                }
            case let .refreshObject(id):
                guard let h = held[id], !h.object.isDeleted else { continue }
                context.refresh(h.object, mergeChanges: false)
                if !h.object.isFault { return "\(at): the object is not a fault after refresh" }
                if let failure = try check(h.object, wasFault: true, at) { return failure }
            case let .refreshResult(r):
                guard !results.isEmpty else { continue }
                let i = r % results.count
                _ = try results[i].collection.refresh()
                results[i].ids = order(results[i].above, results[i].byV)
                if results[i].collection.count != results[i].ids.count { return "\(at): \(results[i].collection.count) rows after refresh, the file has \(results[i].ids.count)" }
            case .release:
                held.removeAll()
            }
            // After every step: what the test holds is registered (one object per row).
            for (id, h) in held where !h.object.isDeleted {
                if context.registeredObject(for: h.object.objectID) !== h.object { return "\(at): held row \(id) is no longer the registered object" }
            }
        }
        // The file holds what the model says.
        let onFile = try engine.fileRows()
        if onFile.count != file.count || onFile.contains(where: { file[$0.key] != $0.value }) {
            return "after \(steps.count) steps: \(engine.name)'s file holds other rows than the model (\(onFile.count) rows, model \(file.count))"
        }
        return nil
    }

    /// Runs `sequences` random sequences of `length` steps from `seed`; on a failure, shrinks it
    /// to the fewest steps that still fail and returns that reproduction. Also returns the kinds
    /// of step that ran.
    public static func check(sequences: Int, length: Int, seed: UInt64, make: () throws -> Engine) throws -> (failure: String?, kinds: Set<String>) {
        var g = SeededGenerator(state: seed)
        var kinds = Set<String>()
        for sequence in 0..<sequences {
            let steps = (0..<length).map { _ in step(&g) }
            kinds.formUnion(steps.map(\.kind))
            guard let failure = try run(steps, seed: seed, make: make) else { continue }
            let (smallest, shortFailure) = try shrink(steps, failure: failure) { try run($0, seed: seed, make: make) }
            return ("sequence \(sequence) fails in \(smallest.count) steps:\n  \(smallest.map(\.description).joined(separator: "\n  "))\n\(shortFailure)", kinds)
        }
        return (nil, kinds)
    }
}
