import Foundation

/// The result of a fetch with a batch size: a random-access collection of managed objects whose row
/// IDs live in an SQLite temp table and whose rows are faulted in batches as they are touched.
///
/// - Opening runs one `INSERT INTO temp."bs_ids_…"(key) SELECT t.rowid FROM … WHERE … ORDER BY …`;
///   the IDs never enter Swift memory, and ``count`` is known afterwards.
/// - Touching element `i` faults its batch with one query,
///   `SELECT ids.pos, ids.key, t.<columns> FROM temp."bs_ids_…" AS ids CROSS JOIN main."T" AS t
///   ON t.rowid = ids.key WHERE ids.pos BETWEEN ? AND ?`, and keeps it in a bounded LRU of
///   resident batches, so a sweep over millions of rows holds only ``residentBatchLimit`` batches.
/// - An element is `nil` when its row was deleted after the fetch: never a crash, never a tombstone.
/// - Slices, iteration, `map`, `prefix` keep batching; ``description`` never faults.
///
/// The same type is the result of a fetch across several stores
/// (``CoordinatedContext/fetchBatched(_:affectedStores:residentBatches:firstBatch:progress:)``):
/// its ID table then holds `(store, key)` pairs on the connection that sees every store, and each
/// batch is faulted with one query per store it touches, into that store's context. Everything
/// below works the same for both; see ``BatchedResult`` for the contract, and its edit calls.
///
/// A value type over shared storage: copies and slices share one temp table and one batch cache.
/// The temp table is dropped when the last copy goes away.
public struct BatchFaultingCollection: RandomAccessCollection, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias Element = ManagedObject?
    public typealias Index = Int
    public typealias SubSequence = BatchFaultingCollection
    public typealias Indices = Range<Int>

    package let storage: ResultStorage
    /// Fixed bounds for slices; nil follows the storage's count (which ``refresh(keeping:)`` changes).
    let bounds: Range<Int>?

    package init(storage: ResultStorage, bounds: Range<Int>? = nil) {
        self.storage = storage
        self.bounds = bounds
    }

    public var startIndex: Int { bounds?.lowerBound ?? 0 }
    public var endIndex: Int { bounds?.upperBound ?? storage.count }

    /// The object at `position`, faulting its batch if needed; nil when the row is gone (or when the
    /// fault failed: see ``lastError``).
    /// - Complexity: O(1) when the batch is resident; one indexed query of `fetchBatchSize` rows when not.
    public subscript(position: Int) -> ManagedObject? {
        precondition(position >= startIndex && position < endIndex, "index \(position) out of range \(startIndex)..<\(endIndex)")
        return storage.object(at: position)
    }

    public subscript(bounds: Range<Int>) -> BatchFaultingCollection {
        precondition(bounds.lowerBound >= startIndex && bounds.upperBound <= endIndex, "slice \(bounds) out of range \(startIndex)..<\(endIndex)")
        return BatchFaultingCollection(storage: storage, bounds: bounds)
    }

    /// Iterates in position order, like the collection's indices: the bound is read once per
    /// element (a refresh that shrinks the result ends the iteration early, as with indices),
    /// with no second bounds check in the subscript. Its faults say they are an iteration's, so a
    /// source may read a long sweep another way (PostgreSQL streams it: see `PostgresSweepStream`).
    public struct Iterator: IteratorProtocol {
        let storage: ResultStorage
        var position: Int
        let upperBound: Int?

        public mutating func next() -> ManagedObject?? {
            guard position < (upperBound ?? storage.count) else { return nil }
            defer { position += 1 }
            return .some(storage.object(at: position, iterating: true))
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(storage: storage, position: startIndex, upperBound: bounds?.upperBound)
    }

    /// The elements transformed, in order, read through the iterator (`Collection`'s own `map`
    /// reads by index): a sweep, which an engine that streams sweeps streams.
    public func map<T, E: Error>(_ transform: (ManagedObject?) throws(E) -> T) throws(E) -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(try transform(element)) }
        return result
    }

    /// Like the subscript, but throws when faulting the batch failed (locked file, I/O error).
    public func object(at position: Int) throws -> ManagedObject? {
        precondition(position >= startIndex && position < endIndex, "index \(position) out of range \(startIndex)..<\(endIndex)")
        return try storage.objectThrowing(at: position)
    }

    /// The last error a fault hit through the non-throwing subscript, if any.
    public var lastError: BatchStoreError? { storage.lastError }

    /// The entity fetched (with several stores, the first store's).
    public var entity: Entity { storage.source.entity }
    /// The request the collection was fetched with.
    public var request: FetchRequest { storage.request }
    /// Rows per batch.
    public var batchSize: Int { storage.batchSize }
    /// How many batches stay resident at most (least recently used go first).
    public var residentBatchLimit: Int {
        get { storage.cache.residentLimit }
        nonmutating set { storage.cache.setResidentLimit(newValue) }
    }

    /// Live counters: batches faulted and resident, objects alive, IDs held and where.
    public var statistics: BatchStatistics { storage.statistics }

    /// Re-runs the ID fetch to pick up inserts and deletes; returns the new position of the first
    /// anchor whose row still exists (pass the current row, then its neighbours, to land on the
    /// nearest survivor). Resident batches are dropped; registered objects stay registered.
    /// - Complexity: the cost of the ID fetch, plus one scan of the new ID table per anchor looked up.
    @discardableResult
    public func refresh(keeping anchors: [Int] = []) throws -> Int? {
        try storage.refresh(anchors: anchors)
    }

    /// The ID of the row at `position` as stored in the ID table (one indexed lookup, no fault);
    /// nil outside the result or for a view without a row key.
    public func objectID(at position: Int) throws -> ObjectID? {
        try storage.objectID(at: position)
    }

    /// The name of the store the row at `position` comes from (one indexed lookup, no fault).
    public func storeName(at position: Int) throws -> String? {
        try storage.storeName(at: position)
    }

    /// Drops every resident batch (objects held elsewhere stay alive).
    public func evictAllBatches() { storage.cache.evictAll() }

    public var description: String {
        "<BatchFaultingCollection \(request.entityName) \(startIndex)..<\(endIndex) of \(storage.count), batch size \(batchSize), \(storage.cache.residentCount) batches resident>"
    }

    public var debugDescription: String {
        description + " ids in \(storage.ids.location)"
    }
}

/// The result of a fetch across several stores: the same type as a one-store result (see
/// ``BatchFaultingCollection``), named for what it is.
public typealias CoordinatedCollection = BatchFaultingCollection

/// Counters a ``BatchFaultingCollection`` keeps (all O(1) to read).
public struct BatchStatistics: Sendable, Equatable {
    /// Rows in the result.
    public var count: Int
    /// Rows per batch.
    public var batchSize: Int
    /// Batch faults run so far (one query each).
    public var batchesFaulted: Int
    /// Batches in memory now.
    public var batchesResident: Int
    /// The most batches kept in memory.
    public var residentBatchLimit: Int
    /// Objects referenced by resident batches.
    public var objectsResident: Int
    /// Objects alive in the whole context (identity map size).
    public var objectsAlive: Int
    /// Row IDs held for the result; they live in SQLite's temp store, not in Swift memory.
    public var idsHeld: Int
    /// Row IDs held in Swift memory (0 for a batched collection).
    public var idsInSwiftMemory: Int
    /// Where the IDs live.
    public var idStorage: String
    /// How long the ID fetch took, in seconds.
    public var idFetchSeconds: Double
    /// How long the last batch fault took, in seconds.
    public var lastFaultSeconds: Double?
    /// Time spent in batch faults so far, in seconds.
    public var totalFaultSeconds: Double
    /// Bytes of packed values held by resident batches (cells and text/blob arenas); nil where
    /// batches keep decoded values (a child context, several stores).
    public var valueBytesResident: Int? = nil
    /// Batches an iteration read from one statement streaming the rest of the result instead of
    /// faulting them one by one (PostgreSQL; counted in ``batchesFaulted`` too; 0 on SQLite, whose
    /// faults are as cheap as a stream).
    public var batchesStreamed: Int = 0
    /// Streams an iteration started (one at most per fetch; PostgreSQL).
    public var streamsStarted: Int = 0
}

/// Progress of an ID fetch, handed to the progress handler of ``ProgressiveFetch/finish(progress:)``.
public struct IDFetchProgress: Sendable {
    package init(rowsScanned: Int, estimatedRows: Int?, elapsed: Double) {
        self.rowsScanned = rowsScanned
        self.estimatedRows = estimatedRows
        self.elapsed = elapsed
    }

    /// Rows the ID fetch has scanned from the table so far (full-scan steps).
    public var rowsScanned: Int
    /// An estimate of the rows to scan (the table's largest rowid), when known.
    public var estimatedRows: Int?
    /// Seconds since the ID fetch began.
    public var elapsed: Double
    /// `rowsScanned / estimatedRows`, capped below 1 until done; nil when unknown.
    public var fractionCompleted: Double? {
        guard let estimatedRows, estimatedRows > 0 else { return nil }
        return min(0.99, Double(rowsScanned) / Double(estimatedRows))
    }
}

/// What a progress handler tells the ID fetch.
public enum IDFetchDecision: Sendable {
    case proceed
    case cancel
}
