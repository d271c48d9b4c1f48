import Foundation

/// Something that keeps objects of a context in resident batches: an open result
/// (``BatchFaultingCollection``, ``CoordinatedCollection``). A merge or an undo tells it which
/// objects went stale, and it drops the batches that hold them.
protocol ResidentBatches: AnyObject {
    /// Drops resident batches holding an object that `isStale` flags; returns how many.
    func evictBatches(where isStale: (ManagedObject) -> Bool) -> Int
}

/// The open results of a context, held weakly: a result that nobody holds leaves by itself.
final class OpenResults {
    private var entries: [Weak] = []

    private struct Weak {
        weak var result: (any ResidentBatches)?
    }

    /// Registers an open result.
    /// - Complexity: O(open results), pruning those that are gone.
    func add(_ result: any ResidentBatches) {
        entries.removeAll { $0.result == nil }
        entries.append(Weak(result: result))
    }

    /// The results still open.
    var all: [any ResidentBatches] { entries.compactMap(\.result) }

    /// Drops, in every open result that may hold `entities` (nil: any), the batches holding a
    /// deleted object or a fault; returns how many batches were dropped.
    @discardableResult
    func evictStale(of entities: Set<ObjectIdentifier>? = nil) -> Int {
        var dropped = 0
        for result in all {
            // A result over several stores holds entities of other contexts too: ask it.
            dropped += result.evictBatches { object in
                (entities?.contains(ObjectIdentifier(object.entity)) ?? true) && (object.isDeleted || !object.hasValues)
            }
        }
        return dropped
    }
}
