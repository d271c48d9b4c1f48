import Foundation

extension CoordinatedContext: FetchingContext {
    public var storeNames: [String] { coordinator.stores.map(\.name) }
    public var entities: [Entity] { coordinator.stores[0].schema.entities }
    public var readOnlyReason: String? { coordinator.stores.first(where: \.isReadOnly).map { "store \($0.name) is read-only" } }
    public func entity(named name: String) throws -> Entity { try coordinator.entities(named: name)[0] }

    public func fetchBatched(_ request: FetchRequest, residentBatches: Int = 8, firstBatch: (([ManagedObject]) -> Void)?,
                             progress: ((IDFetchProgress) -> IDFetchDecision)? = nil) throws -> BatchFaultingCollection {
        try fetchBatched(request, affectedStores: nil, residentBatches: residentBatches, firstBatch: firstBatch, progress: progress)
    }

    /// The sum over the stores that have `request`'s entity.
    public func count(for request: FetchRequest) throws -> Int {
        try coordinator.entities(named: request.entityName).reduce(0) { try $0 + context(for: $1.storeName).count(for: request) }
    }

    public var registeredObjectCount: Int { contexts.reduce(0) { $0 + $1.registeredObjectCount } }
    public func merge(_ changes: ChangeSet) { mergeChanges(changes) }
}
