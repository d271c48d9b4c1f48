import Foundation

/// A batched result: the rows of one fetch, in order, whose IDs live in SQLite and whose objects
/// are faulted in batches as they are touched. ``BatchFaultingCollection`` is the one
/// implementation, over one store or several; code that shows, exports or edits a result is
/// written against this contract and never asks how many stores are behind it.
///
/// The error contract:
/// - the subscript never throws: it gives nil for a row deleted since the fetch, and nil with
///   ``lastError`` set when faulting the batch failed (a locked file, an I/O error);
/// - ``object(at:)`` gives the same nil for a deleted row, and throws the failure;
/// - every other call throws ``BatchStoreError``, and an edit that throws has changed nothing.
///
/// Edits touch only the result's own rows: each statement tests membership in the result's ID
/// table, so a row inserted since the fetch, a row of another table, or a row that left the result
/// is never counted or changed.
public protocol BatchedResult: RandomAccessCollection where Element == ManagedObject?, Index == Int {
    /// The request the result was fetched with: its entity and predicate are what edits act on.
    var request: FetchRequest { get }
    /// Rows per batch.
    var batchSize: Int { get }
    /// Live counters: batches faulted and resident, objects alive, IDs held and where.
    var statistics: BatchStatistics { get }
    /// The last error a fault hit through the non-throwing subscript, if any.
    var lastError: BatchStoreError? { get }

    /// The object at `position`; nil for a row deleted since the fetch; throws when the fault failed.
    func object(at position: Int) throws -> ManagedObject?
    /// The ID of the row at `position`, read from the ID table (no fault).
    func objectID(at position: Int) throws -> ObjectID?
    /// The name of the store the row at `position` comes from.
    func storeName(at position: Int) throws -> String?
    /// Re-runs the ID fetch; returns the new position of the first of `anchors` still in the result.
    @discardableResult
    func refresh(keeping anchors: [Int]) throws -> Int?
    /// The first position after (or, `backwards`, before) `position` whose row matches `predicate`.
    func firstPosition(matching predicate: FetchPredicate, after position: Int, backwards: Bool,
                       progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> Int?
    /// The IDs among `ids` whose rows are in the result's ID table, in the order given.
    func members(of ids: [ObjectID]) throws -> [ObjectID]

    /// Updates the result's rows that `request` matches (only those of `objectIDs`, when given).
    func execute(_ request: BatchUpdateRequest, objectIDs: [ObjectID]?, undoable: Bool) throws -> BatchResult
    /// How many rows the update would change; writes nothing.
    func count(forUpdate request: BatchUpdateRequest, objectIDs: [ObjectID]?) throws -> Int
    /// Deletes the result's rows that `request` selects (its object IDs, or its predicate).
    func execute(_ request: BatchDeleteRequest, undoable: Bool) throws -> BatchResult
    /// How many rows the delete would remove; writes nothing.
    func count(forDelete request: BatchDeleteRequest) throws -> Int
}
