import BatchStore
import Foundation

/// One definition of the unsaved-changes and saving suite, run over a ``ManagedObjectContext``
/// (`SaveModelTests`, SQLite) and a `PostgresContext` (`PostgresSaveModelTests`): random
/// sequences of `setValue`, inserts, deletes, saves, rollbacks, refreshes, another session's
/// writes and deletes, and batch updates and deletes merged under each ``MergePolicy``, checked
/// after every step against a plain Swift model of what the file holds and of what is pending.
///
/// What the model says:
/// - nothing reaches the file before ``SavingContext/save()``; a save writes every pending change
///   (deletes, then updates, then inserts) or, on an error, nothing, and the changes stay pending;
/// - a save fails with `.objectNotFound` when a row with a pending update is gone, and with
///   `.constraint` when an insert's key is taken (by a row, or by an earlier insert);
/// - an object with a pending change shows it over its row's values (after a refresh that keeps
///   changes), whatever the row holds now; without one it shows the row;
/// - ``SavingContext/rollback()`` and a refresh without `mergeChanges` drop pending changes (and a
///   pending delete); a merged batch delete drops those of its rows;
/// - a merged batch update of a row with a pending change: `.error` reports it as a conflict and
///   keeps the change, `.storeWins` drops it (and a pending delete), `.inMemoryWins` keeps it;
/// - a saved insert's object names its row by key; the context holds changed objects even when
///   the test lets go of them.
public enum SaveModel {
    public enum Step: CustomStringConvertible, Sendable {
        /// `setValue(v)` on the object of row `id` (a fault from `object(with:)`).
        case set(id: Int64, v: Int64?)
        /// `insertObject` with key `key` and `v`.
        case insert(key: Int64, v: Int64?)
        /// `delete` of the object of row `id`.
        case delete(Int64)
        /// `delete` of the `n`th pending inserted object.
        case dropInsert(Int)
        case save
        case rollback
        /// Reads row `id` through its object, after a refresh keeping changes.
        case read(Int64)
        /// `refresh(_:mergeChanges:)` of row `id`'s registered object.
        case refresh(id: Int64, merge: Bool)
        /// Another session sets `v` of row `id`, or deletes it (`v` nil).
        case external(id: Int64, v: Int64?, delete: Bool)
        /// A batch update `v = v + add` of the rows with `id <= upTo`, merged under `policy`.
        case update(upTo: Int64, add: Int64, policy: Int)
        /// A batch delete of the rows with `id % modulus == rest`, merged.
        case batchDelete(modulus: Int64, rest: Int64)
        /// The test lets go of every object it holds.
        case release

        public var description: String {
            func v(_ v: Int64?) -> String { v.map(String.init) ?? "nil" }
            return switch self {
            case let .set(id, value): "set v = \(v(value)) in row \(id)"
            case let .insert(key, value): "insert id \(key), v = \(v(value))"
            case let .delete(id): "delete row \(id)"
            case let .dropInsert(n): "delete pending insert #\(n)"
            case .save: "save"
            case .rollback: "rollback"
            case let .read(id): "read row \(id)"
            case let .refresh(id, merge): "refresh row \(id)\(merge ? " keeping changes" : "")"
            case let .external(id, value, delete): delete ? "another session deletes row \(id)" : "another session sets v = \(v(value)) in row \(id)"
            case let .update(upTo, add, policy): "batch update v = v + \(add) where id <= \(upTo), merged \(["error", "storeWins", "inMemoryWins"][policy])"
            case let .batchDelete(m, r): "batch delete id % \(m) == \(r), merged"
            case .release: "release held objects"
            }
        }

        var kind: String { String(description.prefix { $0 != " " && $0 != "#" }) }
    }

    /// The kinds of step a long enough random run must include, and the outcomes it must see: a
    /// save that wrote, saves failed each way, a conflict under `.error`.
    public static let kinds: Set<String> = ["set", "insert", "delete", "save", "rollback", "read", "refresh", "another", "batch", "release",
                                            "saved", "save failed: objectNotFound", "save failed: constraint", "conflict"]

    public static func step(_ g: inout SeededGenerator) -> Step {
        func v() -> Int64? { g.next(6) == 0 ? nil : Int64(g.next(40)) }
        func row() -> Int64 { Int64(1 + g.next(64)) }
        return switch g.next(24) {
        case 0...5: .set(id: row(), v: v())
        case 6, 7: .insert(key: g.next(4) == 0 ? row() : Int64(100 + g.next(40)), v: v())
        case 8, 9: .delete(row())
        case 10: .dropInsert(g.next(4))
        case 11...13: .save
        case 14: .rollback
        case 15, 16: .read(row())
        case 17: .refresh(id: row(), merge: g.next(2) == 0)
        case 18, 19: .external(id: row(), v: v(), delete: g.next(3) == 0)
        case 20, 21: .update(upTo: Int64(5 + g.next(50)), add: Int64(1 + g.next(9)), policy: g.next(3))
        case 22: .batchDelete(modulus: Int64(5 + g.next(8)), rest: Int64(g.next(5)))
        default: .release
        }
    }

    /// An insert waiting for the save.
    private struct PendingInsert {
        let key: Int64
        let v: Int64?
        let object: ManagedObject
    }

    /// Runs `steps` on a fresh engine from `make` (``ContextModel/Engine``, whose context must be
    /// a ``SavingContext``); nil when every check held, else the first failure, naming its step.
    public static func run(_ steps: [Step], seed: UInt64, make: () throws -> ContextModel.Engine) throws -> String? {
        var outcomes = Set<String>()
        return try run(steps, seed: seed, outcomes: &outcomes, make: make)
    }

    /// ``run(_:seed:make:)``, adding to `outcomes` what the saves and merges did.
    static func run(_ steps: [Step], seed: UInt64, outcomes: inout Set<String>, make: () throws -> ContextModel.Engine) throws -> String? {
        let engine = try make()
        guard let context = engine.context as? any SavingContext else { return "\(engine.name)'s context does not save" }
        let entity = engine.id(1).entity
        var file = Dictionary(uniqueKeysWithValues: ContextModel.rows(seed: seed).map { ($0.id, $0.v) })
        var pending: [Int64: Int64?] = [:]
        var pendingDeletes = Set<Int64>()
        var inserts: [PendingInsert] = []
        var held: [ManagedObject] = []
        func key(_ id: ObjectID) -> Int64 { id.keyValues.first?.integerValue ?? -1 }
        func show(_ v: Int64?) -> String { v.map(String.init) ?? "NULL" }

        for (n, step) in steps.enumerated() {
            let at = "step \(n + 1) (\(step))"
            switch step {
            case let .set(id, v):
                let object = context.object(with: engine.id(id))
                held.append(object)
                do {
                    try object.setValue(v.map { .integer($0) } ?? .null, forKey: "v")
                    if pendingDeletes.contains(id) { return "\(at): a row marked for deletion took a new value" }
                    pending[id] = .some(v)
                } catch let error as BatchStoreError where error.code == .objectNotFound {
                    if !pendingDeletes.contains(id) { return "\(at): refused (\(error.message)), but the row is not marked for deletion" }
                }
                if !object.hasChanges, !pendingDeletes.contains(id) { return "\(at): the object has no changes after setValue" }
            case let .insert(k, v):
                let object = try context.insertObject(into: entity.name, values: ["id": .integer(k), "v": v.map { .integer($0) } ?? .null, "name": .text("n\(k)")])
                if !object.isInserted || !object.hasChanges { return "\(at): the new object is not marked inserted" }
                if object.objectID == engine.id(k) { return "\(at): an unsaved object already names row \(k)" }
                inserts.append(PendingInsert(key: k, v: v, object: object))
                held.append(object)
            case let .delete(id):
                let object = context.object(with: engine.id(id))
                held.append(object)
                do {
                    try context.delete(object)
                    pendingDeletes.insert(id)
                } catch let error as BatchStoreError where error.code == .objectNotFound {
                    return "\(at): delete threw \(error.message)"
                }
                if !object.isDeleted || !object.hasChanges { return "\(at): the object is not marked deleted" }
            case let .dropInsert(i):
                guard !inserts.isEmpty else { continue }
                let insert = inserts.remove(at: i % inserts.count)
                try context.delete(insert.object)
                if !insert.object.isDeleted || insert.object.hasChanges { return "\(at): the dropped insert still counts as a change" }
            case .save:
                // What the file must hold after a save, or the error it must fail with.
                var after = file
                var expected: BatchStoreError.Code?
                for id in pendingDeletes { after[id] = nil }
                for (id, v) in pending.sorted(by: { $0.key < $1.key }) where !pendingDeletes.contains(id) {
                    if after[id] == nil { expected = .objectNotFound; break }
                    after[id] = .some(v)
                }
                if expected == nil {
                    for insert in inserts {
                        if after[insert.key] != nil { expected = .constraint; break }
                        after[insert.key] = .some(insert.v)
                    }
                }
                // The objects of pending updates, held across the save to look at them after it.
                let updated = pending.keys.filter { !pendingDeletes.contains($0) }.compactMap { id in
                    context.registeredObject(for: engine.id(id)).map { (id, $0) }
                }
                if updated.count != pending.keys.filter({ !pendingDeletes.contains($0) }).count {
                    return "\(at): an object with a pending change is not registered (the context must hold it)"
                }
                do {
                    try context.save()
                    if let expected { return "\(at): the save succeeded, it should fail with \(expected)" }
                } catch let error as BatchStoreError {
                    guard let expected else { return "\(at): the save failed: \(error.message)" }
                    if error.code != expected { return "\(at): the save failed with \(error.code) (\(error.message)), expected \(expected)" }
                    if !context.hasChanges { return "\(at): the failed save dropped the pending changes" }
                    outcomes.insert("save failed: \(expected)")
                    break
                }
                if !pending.isEmpty || !pendingDeletes.isEmpty || !inserts.isEmpty { outcomes.insert("saved") }
                // Saved objects show what was written without being refreshed; deleted ones are gone.
                for (id, object) in updated {
                    if context.registeredObject(for: engine.id(id)) !== object { return "\(at): the saved object of row \(id) is no longer its registered object" }
                    if object.hasChanges { return "\(at): the saved object of row \(id) still has changes" }
                    if try object.value(forKey: "v").integerValue != after[id] ?? nil { return "\(at): the saved object of row \(id) shows another v than was written" }
                }
                for id in pendingDeletes where context.registeredObject(for: engine.id(id)) != nil {
                    return "\(at): the deleted row \(id) is still registered after the save"
                }
                file = after
                for insert in inserts {
                    if insert.object.isInserted { return "\(at): a saved insert is still marked inserted" }
                    if key(insert.object.objectID) != insert.key { return "\(at): a saved insert names row \(key(insert.object.objectID)), not \(insert.key)" }
                    if context.registeredObject(for: engine.id(insert.key)) !== insert.object { return "\(at): the saved insert of row \(insert.key) is not its registered object" }
                    if try insert.object.value(forKey: "v").integerValue != insert.v { return "\(at): the saved insert of row \(insert.key) shows another v" }
                }
                pending.removeAll()
                pendingDeletes.removeAll()
                inserts.removeAll()
            case .rollback:
                context.rollback()
                for insert in inserts where !insert.object.isDeleted { return "\(at): a rolled-back insert is not marked deleted" }
                pending.removeAll()
                pendingDeletes.removeAll()
                inserts.removeAll()
            case let .read(id):
                let object = context.object(with: engine.id(id))
                context.refresh(object, mergeChanges: true)
                let changes = pending[id] != nil || pendingDeletes.contains(id)
                if object.hasChanges != changes { return "\(at): hasChanges is \(object.hasChanges), the model has \(changes)" }
                let shown: Int64?
                do {
                    shown = try object.value(forKey: "v").integerValue
                } catch let error as BatchStoreError where error.code == .objectNotFound {
                    if pending[id] != nil || file[id] != nil { return "\(at): read as gone (\(error.message))" }
                    continue
                }
                let expected = pending[id] ?? file[id]
                guard let expected else { return "\(at): shows v = \(show(shown)), the row is gone and no change is pending" }
                if shown != expected { return "\(at): shows v = \(show(shown)), expected \(show(expected))" }
            case let .refresh(id, merge):
                guard let object = context.registeredObject(for: engine.id(id)) else { continue }
                context.refresh(object, mergeChanges: merge)
                if !merge {
                    pending[id] = nil
                    pendingDeletes.remove(id)
                    if object.hasChanges { return "\(at): the object keeps changes after a refresh that drops them" }
                }
            case let .external(id, v, delete):
                if delete {
                    try engine.external("DELETE FROM m WHERE id = \(id)")
                    file[id] = nil
                } else {
                    try engine.external("UPDATE m SET v = \(v.map(String.init) ?? "NULL") WHERE id = \(id)")
                    if file[id] != nil { file[id] = .some(v) }
                }
            case let .update(upTo, add, policy):
                context.mergePolicy = [.error, .storeWins, .inMemoryWins][policy]
                let changed = Set(file.keys.filter { $0 <= upTo })
                let request = BatchUpdateRequest(entityName: entity.name, predicate: try FetchPredicate("id <= \(upTo)"),
                                                 propertiesToUpdate: try UpdateExpression.parseAssignments("v = v + \(add)"), resultType: .objectIDs)
                let result = try context.execute(request, undoable: false)
                for id in changed { file[id] = .some(file[id]!.map { $0 + add }) }
                let report = context.mergeChanges(ChangeSet(updated: result.objectIDs ?? []))
                let conflicted = Set(pending.keys.filter { changed.contains($0) })
                let reported = Set(report.conflicts.map(key))
                if reported != (policy == 0 ? conflicted : []) {
                    return "\(at): conflicts \(reported.sorted()), the model has \(policy == 0 ? conflicted.sorted() : [])"
                }
                if !reported.isEmpty { outcomes.insert("conflict") }
                if policy == 1 {
                    for id in conflicted { pending[id] = nil; pendingDeletes.remove(id) }
                }
                // Without a refresh: every registered object of an updated row shows its pending
                // change, or else the row as it is now (the merge refaulted it).
                for id in changed {
                    guard let object = context.registeredObject(for: engine.id(id)) else { continue }
                    let expected = pending[id] ?? file[id] ?? nil
                    if try object.value(forKey: "v").integerValue != expected { return "\(at): row \(id)'s object shows another v than \(show(expected)) after the merge" }
                }
            case let .batchDelete(modulus, rest):
                let changed = Set(file.keys.filter { $0 % modulus == rest })
                let request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: entity.name, predicate: try FetchPredicate("id % \(modulus) == \(rest)")),
                                                 resultType: .objectIDs)
                let result = try context.execute(request, undoable: false)
                for id in changed { file[id] = nil }
                _ = context.mergeChanges(ChangeSet(deleted: result.objectIDs ?? []))
                for id in changed {
                    pending[id] = nil
                    pendingDeletes.remove(id)
                    if context.registeredObject(for: engine.id(id)) != nil { return "\(at): row \(id) is still registered after its delete was merged" }
                }
            case .release:
                held.removeAll()
            }
            let expectChanges = !pending.isEmpty || !pendingDeletes.isEmpty || !inserts.isEmpty
            if context.hasChanges != expectChanges { return "\(at): hasChanges is \(context.hasChanges), the model says \(expectChanges)" }
            let changedCount = Set(pending.keys).union(pendingDeletes).count + inserts.count
            if context.changedObjects.count != changedCount { return "\(at): \(context.changedObjects.count) changed objects, the model has \(changedCount)" }
            let onFile = try engine.fileRows()
            if onFile.count != file.count || onFile.contains(where: { file[$0.key] != $0.value }) {
                let extra = onFile.keys.filter { file[$0] == nil }.sorted(), missing = file.keys.filter { onFile[$0] == nil }.sorted()
                let differ = file.keys.filter { onFile[$0] != nil && onFile[$0] != file[$0] }.sorted()
                return "\(at): \(engine.name)'s file holds other rows than the model (extra \(extra), missing \(missing), other v in \(differ))"
            }
        }
        return nil
    }

    /// Runs `sequences` random sequences of `length` steps from `seed`; on a failure, shrinks it
    /// to the fewest steps that still fail and returns that reproduction. Also returns the kinds
    /// of step that ran.
    public static func check(sequences: Int, length: Int, seed: UInt64, make: () throws -> ContextModel.Engine) throws -> (failure: String?, kinds: Set<String>) {
        var g = SeededGenerator(state: seed)
        var kinds = Set<String>()
        for sequence in 0..<sequences {
            let steps = (0..<length).map { _ in step(&g) }
            kinds.formUnion(steps.map(\.kind))
            guard let failure = try run(steps, seed: seed, outcomes: &kinds, make: make) else { continue }
            let (smallest, shortFailure) = try shrink(steps, failure: failure) { try run($0, seed: seed, make: make) }
            return ("sequence \(sequence) fails in \(smallest.count) steps:\n  \(smallest.map(\.description).joined(separator: "\n  "))\n\(shortFailure)", kinds)
        }
        return (nil, kinds)
    }

    /// The contracts one object graph gives both engines' contexts, checked on two fresh engines
    /// from `make`: a delete of another context's object throws `.invalidArgument` (it was a
    /// trap on SQLite) and changes neither; a refresh of another context's object leaves it as it
    /// was; a delete of an object whose row a merge said was deleted throws `.objectNotFound`.
    /// Nil when every contract held, else what broke.
    public static func contracts(make: () throws -> ContextModel.Engine) throws -> String? {
        let engine = try make(), other = try make()
        guard let context = engine.context as? any SavingContext else { return "\(engine.name)'s context does not save" }
        let stranger = other.context.object(with: other.id(2))
        _ = try stranger.value(forKey: "v")
        do {
            try context.delete(stranger)
            return "\(engine.name): a delete of another context's object was taken"
        } catch let error as BatchStoreError where error.code == .invalidArgument {
            if stranger.isDeleted || context.hasChanges { return "\(engine.name): the refused delete marked something" }
        }
        context.refresh(stranger, mergeChanges: false)
        if stranger.isFault { return "\(engine.name): a refresh through another context refaulted its object" }
        let gone = context.object(with: engine.id(3))
        _ = try gone.value(forKey: "v")
        context.merge(ChangeSet(inserted: [], updated: [], deleted: [engine.id(3)]))
        guard gone.isDeleted else { return "\(engine.name): the merged delete did not mark the object" }
        do {
            try context.delete(gone)
            return "\(engine.name): a delete of an object a merge marked deleted was taken"
        } catch let error as BatchStoreError where error.code == .objectNotFound {
            if context.hasChanges { return "\(engine.name): the refused delete left a pending change" }
        }
        return nil
    }
}
