import Foundation

extension CoordinatedContext {
    /// Runs `body` so that it can be cancelled part way, as ``ManagedObjectContext/interruptible(_:_:)``
    /// does, on every store's connection and the coordinating one. An edit or undo across stores
    /// can be cancelled until its first store's part commits; from then on it runs to the end
    /// (all or nothing across stores).
    public func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T {
        try Interruption { progress($0) == .cancel }.run(on: [connection] + contexts.map(\.connection), body)
    }
}
