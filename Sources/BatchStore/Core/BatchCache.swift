import Foundation

/// The objects of one batch, as a fault made them.
package struct FaultedBatch {
    var objects: [ManagedObject?]
    /// The packed values the batch's objects point to: one per store the batch came from; none
    /// where objects keep decoded values (a child context).
    var packed: [PackedRows]
    /// Where the batch's objects and packed values go back for reuse when it is dropped: the
    /// identity map of each context they belong to, one per element of ``packed`` in the same
    /// order (empty: nothing is reused).
    var recyclers: [(map: IdentityMap, link: ContextLink)] = []

    init(objects: [ManagedObject?], packed: [PackedRows], recyclers: [(map: IdentityMap, link: ContextLink)] = []) {
        self.objects = objects
        self.packed = packed
        self.recyclers = recyclers
    }

    /// Objects with their own decoded values, reused by nothing (another engine's batch).
    package init(objects: [ManagedObject?]) {
        self.init(objects: objects, packed: [])
    }
}

/// The resident batches of a result: a bounded LRU keyed by batch number, with the last batch
/// used kept aside for the sequential case, and the counters ``BatchStatistics`` reports.
///
/// Dropping a batch detaches the objects something else still holds from its packed buffers
/// (they get their own decoded values), so an object kept by the app never keeps a whole batch alive.
final class BatchCache {
    let batchSize: Int
    private(set) var residentLimit: Int
    private var batches: [Int: Entry] = [:]
    private var clock: UInt64 = 0
    private var lastBatchIndex = -1
    private var lastBatch: [ManagedObject?] = []
    private(set) var batchesFaulted = 0
    private(set) var lastFaultSeconds: Double?
    private(set) var totalFaultSeconds = 0.0

    private struct Entry {
        var batch: FaultedBatch
        var lastUse: UInt64
    }

    init(batchSize: Int, residentLimit: Int) {
        precondition(batchSize > 0, "batch size must be positive")
        self.batchSize = batchSize
        self.residentLimit = max(1, residentLimit)
    }

    /// The object at `position` when its batch is the last one used: the common case, no hashing.
    /// `.none` when the batch is elsewhere; `.some(nil)` for a row gone since the fetch.
    @inline(__always)
    func fastObject(at position: Int) -> ManagedObject?? {
        let b = position / batchSize
        guard b == lastBatchIndex else { return .none }
        guard let object = lastBatch[position - b * batchSize], !object.isDeleted else { return .some(nil) }
        return .some(object)
    }

    /// The object at `position`, faulting its batch with `fault` (given the batch's positions)
    /// when it is not resident; nil for a row gone since the fetch.
    /// - Complexity: O(1) when resident; `fault`, plus O(resident batches) to evict, when not.
    func object(at position: Int, fault: (Range<Int>) throws -> FaultedBatch, count: Int) throws -> ManagedObject? {
        let b = position / batchSize
        if b != lastBatchIndex {
            clock += 1
            if var entry = batches[b] {
                entry.lastUse = clock
                batches[b] = entry
                lastBatch = entry.batch.objects
            } else {
                let start = b * batchSize
                let started = DispatchTime.now().uptimeNanoseconds
                let batch = try fault(start..<min(start + batchSize, count))
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                lastFaultSeconds = seconds
                totalFaultSeconds += seconds
                batchesFaulted += 1
                if batches.count >= residentLimit { evictLeastRecentlyUsed() }
                batches[b] = Entry(batch: batch, lastUse: clock)
                lastBatch = batch.objects
            }
            lastBatchIndex = b
        }
        let slot = position - b * batchSize
        guard slot < lastBatch.count, let object = lastBatch[slot] else { return nil }
        return object.isDeleted ? nil : object
    }

    private func evictLeastRecentlyUsed() {
        guard let victim = batches.min(by: { $0.value.lastUse < $1.value.lastUse })?.key else { return }
        drop(victim)
    }

    /// Drops batch `b`. Its objects that something else still holds (the app, another result)
    /// get their own decoded values, so they do not keep the batch's packed buffers alive.
    private func drop(_ b: Int) {
        if b == lastBatchIndex { lastBatchIndex = -1; lastBatch = [] }
        guard var entry = batches.removeValue(forKey: b) else { return }
        var packed = entry.batch.packed
        guard !packed.isEmpty else { return }
        entry.batch.packed = []
        // Objects only this batch holds go back to their context for reuse, so a sweep allocates
        // no object per row. The array is uniquely ours now (lastBatch was cleared), so the checks
        // below read each object's own reference count without copying the array.
        let recyclers = entry.batch.recyclers
        for recycler in recyclers { recycler.map.recycle(&entry.batch.objects, link: recycler.link) }
        // Objects something else still holds get their own values.
        for i in entry.batch.objects.indices where entry.batch.objects[i] != nil {
            if !isKnownUniquelyReferenced(&entry.batch.objects[i]), let object = entry.batch.objects[i], packed.contains(where: object.isPacked(in:)) {
                object.detachFromPackedRows()
            }
        }
        // Then no object refers to the packed buffers, unless one was left out above: reused
        // only when none does.
        if recyclers.count == packed.count {
            entry.batch.objects = []
            while var rows = packed.popLast() { recyclers[packed.count].map.recycle(&rows) }
        }
    }

    /// Drops every resident batch.
    func evictAll() {
        lastBatchIndex = -1
        lastBatch = []
        for b in Array(batches.keys) { drop(b) }
    }

    /// Drops resident batches holding an object that `isStale` flags; returns how many.
    func evict(where isStale: (ManagedObject) -> Bool) -> Int {
        let stale = batches.filter { $0.value.batch.objects.contains { $0.map(isStale) ?? false } }.map(\.key)
        for b in stale { drop(b) }
        return stale.count
    }

    func setResidentLimit(_ limit: Int) {
        residentLimit = max(1, limit)
        while batches.count > residentLimit { evictLeastRecentlyUsed() }
    }

    /// Batches in memory now.
    var residentCount: Int { batches.count }
    /// Objects referenced by resident batches.
    var objectsResident: Int { batches.values.reduce(0) { $0 + $1.batch.objects.count } }
    /// Bytes of packed values held by resident batches.
    var packedBytes: Int { batches.values.reduce(0) { $0 + $1.batch.packed.reduce(0) { $0 + $1.byteCount } } }
}
