import BatchStore
import Foundation

/// A result the browser scrolls: one store's ``BatchFaultingCollection`` or several stores'
/// ``CoordinatedCollection``.
protocol BrowserResult {
    var count: Int { get }
    var statistics: BatchStatistics { get }
    /// The request the result was fetched with: its entity and predicate are what edits act on.
    var request: FetchRequest { get }
    func object(at position: Int) throws -> ManagedObject?
    func refresh(keeping anchors: [Int]) throws -> Int?
    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int?
    /// The IDs among `ids` whose rows are in the result's ID table.
    func members(of ids: [ObjectID]) throws -> [ObjectID]
}

/// What the browser reads and edits: one store's context, or a context over several stores.
protocol BrowserData: AnyObject {
    /// Tables and views to pick from.
    var entities: [Entity] { get }
    /// Why nothing can be edited (nil: the files allow it).
    var readOnlyReason: String? { get }
    /// True with several stores: the grid shows which store each row comes from.
    var showsStores: Bool { get }
    var registeredObjectCount: Int { get }
    var canUndo: Bool { get }
    func entity(named name: String) throws -> Entity
    /// Opens `request`; `firstRows` gets the first batch early when the data can give it, and
    /// `progress` is called during the ID fetch.
    func open(_ request: FetchRequest, residentBatches: Int, firstRows: ([ManagedObject]) -> Void,
              progress: @escaping (IDFetchProgress) -> IDFetchDecision) throws -> BrowserResult
    func count(_ request: FetchRequest) throws -> Int
    // Edits act on the rows of `result` only: the `marked` ones that are still in it, or (nil)
    // every row of it. Each count is what the matching edit would change now.
    func countDelete(in result: BrowserResult, marked: [ObjectID]?) throws -> Int
    /// Deletes with undo when it can, and says when it cannot.
    func delete(in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String)
    func countUpdate(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> Int
    /// Updates with undo when it can, and says when it cannot.
    func update(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String)
    func undo() throws -> ChangeSet
    func merge(_ changes: ChangeSet)
    func refreshAllObjects()
    func dataVersion() -> Int?
}

/// The update of `result`'s rows (its entity and predicate), narrowed to `marked` when given.
private func updateRequest(_ assignments: [(name: String, value: UpdateExpression)], of result: BrowserResult, marked: [ObjectID]?) throws -> BatchUpdateRequest {
    var request = BatchUpdateRequest(entityName: result.request.entityName, predicate: result.request.predicate,
                                     propertiesToUpdate: assignments, resultType: .changes)
    if let marked {
        let m = try FetchPredicate.matching(marked)
        request.predicate = request.predicate.map { $0 && m } ?? m
    }
    return request
}

/// The delete of `result`'s rows (its entity and predicate, unsorted), or of `marked`.
private func deleteRequest(of result: BrowserResult, marked: [ObjectID]?) -> BatchDeleteRequest {
    if let marked { return BatchDeleteRequest(objectIDs: marked, resultType: .changes) }
    return BatchDeleteRequest(fetchRequest: FetchRequest(entityName: result.request.entityName, predicate: result.request.predicate), resultType: .changes)
}

/// Runs `body` with undo; when undo is refused (too many rows, foreign-key actions), runs it
/// without and says why.
private func undoable<R>(_ body: (Bool) throws -> R) throws -> (R, String) {
    do {
        return (try body(true), "; u undoes")
    } catch let error as BatchStoreError where error.code == .undoRefused || error.code == .tooBigToUndo {
        return (try body(false), "; no undo: \(error.message)")
    }
}

// Both kinds of result already have exactly what the browser needs.
extension BatchFaultingCollection: BrowserResult {}
extension CoordinatedCollection: BrowserResult {}

/// One store: the first batch shows before the ID fetch (``ManagedObjectContext/beginFetch(_:residentBatches:)``).
final class SingleStoreData: BrowserData {
    let store: PersistentStore
    let context: ManagedObjectContext
    init(store: PersistentStore) throws {
        self.store = store
        context = try ManagedObjectContext(store: store)
    }
    var entities: [Entity] { store.schema.entities }
    var readOnlyReason: String? { store.isReadOnly ? "the file is read-only" : nil }
    var showsStores: Bool { false }
    var registeredObjectCount: Int { context.registeredObjectCount }
    var canUndo: Bool { context.canUndo }
    func entity(named name: String) throws -> Entity { try store.entity(named: name) }
    func open(_ request: FetchRequest, residentBatches: Int, firstRows: ([ManagedObject]) -> Void,
              progress: @escaping (IDFetchProgress) -> IDFetchDecision) throws -> BrowserResult {
        let progressive = try context.beginFetch(request, residentBatches: residentBatches)
        firstRows(progressive.firstBatch)
        return try progressive.finish(progress: progress)
    }
    func count(_ request: FetchRequest) throws -> Int { try context.count(for: request) }
    /// The one-store result: its ID table is on the context's connection, so every count and edit
    /// tests membership in the statement itself (``BatchFaultingCollection/execute(_:undoable:)-(BatchDeleteRequest,_)``).
    private func collection(_ result: BrowserResult) -> BatchFaultingCollection {
        guard let collection = result as? BatchFaultingCollection else { preconditionFailure("a one-store browser shows a BatchFaultingCollection") }
        return collection
    }
    func countDelete(in result: BrowserResult, marked: [ObjectID]?) throws -> Int {
        try collection(result).count(forDelete: deleteRequest(of: result, marked: marked))
    }
    func delete(in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String) {
        let request = deleteRequest(of: result, marked: marked)
        return try undoable { try collection(result).execute(request, undoable: $0) }
    }
    func countUpdate(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> Int {
        try collection(result).count(forUpdate: try updateRequest(assignments, of: result, marked: marked))
    }
    func update(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String) {
        let request = try updateRequest(assignments, of: result, marked: marked)
        return try undoable { try collection(result).execute(request, undoable: $0) }
    }
    func undo() throws -> ChangeSet { try context.undo() }
    func merge(_ changes: ChangeSet) { context.mergeChanges(changes) }
    func refreshAllObjects() { context.refreshAllObjects() }
    func dataVersion() -> Int? { try? context.dataVersion() }
}

/// Several stores: one result sorted across them; edits go to every store (all or nothing), and
/// `u` undoes the last edit in every store it changed.
final class MultiStoreData: BrowserData {
    let coordinator: PersistentStoreCoordinator
    let context: CoordinatedContext
    private var undoStores: [[String]] = []
    init(coordinator: PersistentStoreCoordinator) throws {
        self.coordinator = coordinator
        context = try CoordinatedContext(coordinator: coordinator)
    }
    var entities: [Entity] { coordinator.stores[0].schema.entities }
    var readOnlyReason: String? {
        coordinator.stores.first(where: \.isReadOnly).map { "store \($0.name) is read-only" }
    }
    var showsStores: Bool { true }
    var registeredObjectCount: Int { context.contexts.reduce(0) { $0 + $1.registeredObjectCount } }
    var canUndo: Bool { !undoStores.isEmpty }
    func entity(named name: String) throws -> Entity { try coordinator.entities(named: name)[0] }
    func open(_ request: FetchRequest, residentBatches: Int, firstRows: ([ManagedObject]) -> Void,
              progress: @escaping (IDFetchProgress) -> IDFetchDecision) throws -> BrowserResult {
        try withoutActuallyEscaping(firstRows) { first in
            try context.fetchBatched(request, residentBatches: residentBatches, firstBatch: first, progress: progress)
        }
    }
    func count(_ request: FetchRequest) throws -> Int {
        try coordinator.entities(named: request.entityName).reduce(0) { try $0 + context.context(for: $1.storeName).count(for: request) }
    }
    /// The several-store result: each count and edit copies the result's keys to each store's
    /// connection and tests membership in the statement itself
    /// (``CoordinatedCollection/execute(_:undoable:)-(BatchDeleteRequest,_)``), so only rows in
    /// the result are ever counted or changed.
    private func collection(_ result: BrowserResult) -> CoordinatedCollection {
        guard let collection = result as? CoordinatedCollection else { preconditionFailure("a several-store browser shows a CoordinatedCollection") }
        return collection
    }
    func countDelete(in result: BrowserResult, marked: [ObjectID]?) throws -> Int {
        try collection(result).count(forDelete: deleteRequest(of: result, marked: marked))
    }
    func delete(in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String) {
        if let marked, marked.isEmpty { return (BatchResult(succeeded: true, count: 0, objectIDs: nil), "") }
        let request = deleteRequest(of: result, marked: marked)
        let (results, note) = try undoable { try collection(result).execute(request, undoable: $0) }
        return (combine(results, undone: note == "; u undoes"), note)
    }
    func countUpdate(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> Int {
        try collection(result).count(forUpdate: try updateRequest(assignments, of: result, marked: nil), objectIDs: marked)
    }
    func update(_ assignments: [(name: String, value: UpdateExpression)], in result: BrowserResult, marked: [ObjectID]?) throws -> (BatchResult, undoNote: String) {
        if let marked, marked.isEmpty { return (BatchResult(succeeded: true, count: 0, objectIDs: nil), "") }
        let request = try updateRequest(assignments, of: result, marked: nil)
        let (results, note) = try undoable { try collection(result).execute(request, objectIDs: marked, undoable: $0) }
        return (combine(results, undone: note == "; u undoes"), note)
    }
    private func combine(_ results: [String: BatchResult], undone: Bool) -> BatchResult {
        if undone { undoStores.append(results.keys.sorted()) }
        let counts = results.values.compactMap(\.count)
        let ids = results.values.compactMap(\.objectIDs)
        let changes = results.values.compactMap(\.changes)
        return BatchResult(succeeded: results.values.allSatisfy(\.succeeded), count: counts.count == results.count ? counts.reduce(0, +) : nil,
                           objectIDs: ids.count == results.count ? ids.flatMap { $0 } : nil,
                           changes: changes.count == results.count ? changes.reduce(ChangeSet(), +) : nil)
    }
    func undo() throws -> ChangeSet {
        guard let stores = undoStores.popLast() else { throw BatchStoreError(.nothingToUndo, "nothing to undo") }
        var all = ChangeSet()
        for name in stores { all = all + (try context.undo(store: name)) }
        return all
    }
    func merge(_ changes: ChangeSet) { context.mergeChanges(changes) }
    func refreshAllObjects() { context.refreshAllObjects() }
    func dataVersion() -> Int? { try? context.dataVersion() }
}
