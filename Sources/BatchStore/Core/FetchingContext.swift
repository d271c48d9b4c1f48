import Foundation

/// A context that fetches batched results and edits through them: one store's
/// ``ManagedObjectContext`` or several stores' ``CoordinatedContext``. A browser, an exporter or
/// an editor written against it never asks how many stores are behind it: results are
/// ``BatchFaultingCollection``s either way, and their edits touch only their own rows.
///
/// Not thread-safe, like the contexts: use it on the thread or actor that made it.
public protocol FetchingContext: AnyObject {
    /// The engine that holds the IDs and runs the SQL (`SQLite`, `PostgreSQL`): a word for
    /// messages, never a thing to decide on (ask ``engineTraits`` what the engine can do).
    var engineName: String { get }
    /// What the engine behind the context can do, for callers that word or offer things by it.
    var engineTraits: EngineTraits { get }
    /// The result type an edit should ask for so that its changes can be merged here:
    /// ``BatchResultType/changes`` where merging them is cheap (SQLite's: the keys stay in a temp
    /// table of the file's connection), ``BatchResultType/count`` where the caller should refresh
    /// every object instead (PostgreSQL's: its `.changes` would copy every changed key into a
    /// server table, and the browser fetches its result again after an edit anyway).
    var editResultType: BatchResultType { get }
    /// The names of the stores behind the context, in order (one for a ``ManagedObjectContext``).
    var storeNames: [String] { get }
    /// The tables and views that can be fetched (with several stores, those of the first).
    var entities: [Entity] { get }
    /// Why nothing can be edited (a read-only file or store), or nil when the files allow it.
    var readOnlyReason: String? { get }
    /// The entity named `name`.
    /// - Throws: `.noSuchEntity`, naming what there is.
    func entity(named name: String) throws -> Entity
    /// Adds the result of one read-only SQL query as an entity (`query`, `query_2`…) that can
    /// then be fetched, filtered, sorted and edited through as a table (one SQLite store:
    /// `PersistentStore.addQuery(_:arguments:)`).
    /// - Throws: `.invalidQuery` for anything but one read-only query; `.invalidArgument` where
    ///   the engine cannot yet.
    func addQuery(_ sql: String) throws -> Entity
    /// Fetches `request` as a batched result (see ``BatchFaultingCollection``).
    ///
    /// - Parameters:
    ///   - request: what to fetch: the entity, predicate, sort, limit, offset and batch size.
    ///   - residentBatches: how many batches of rows stay in memory (least recently used go first).
    ///   - firstBatch: when given, called with the result's first `fetchBatchSize` objects before
    ///     the ID fetch runs (one `… ORDER BY … LIMIT` query, which needs no full sort).
    ///   - progress: called about every 50 ms during the ID fetch; `.cancel` stops it (the call
    ///     then throws `.cancelled` and leaves no temp table). It must not use this context.
    func fetchBatched(_ request: FetchRequest, residentBatches: Int, firstBatch: (([ManagedObject]) -> Void)?,
                      progress: ((IDFetchProgress) -> IDFetchDecision)?) throws -> BatchFaultingCollection
    /// The object `id` names, read from its store.
    /// - Throws: `.objectNotFound` when the row is gone.
    func existingObject(with id: ObjectID) throws -> ManagedObject
    /// Counts the rows `request` matches (in every store), without fetching them.
    func count(for request: FetchRequest) throws -> Int
    /// Runs a batch update in every store that has its entity, all or nothing across stores.
    func execute(_ request: BatchUpdateRequest, undoable: Bool) throws -> BatchResult
    /// Runs a batch delete in every store that has its entity, all or nothing across stores.
    func execute(_ request: BatchDeleteRequest, undoable: Bool) throws -> BatchResult
    /// Checks a batch update against every store's constraints; writes nothing.
    func validate(_ request: BatchUpdateRequest) throws -> ValidationReport
    /// How many rows a batch delete would remove now, after every refusal the delete itself would
    /// make (a read-only file or store, a view, no privilege, a table without the key it needs);
    /// writes nothing. A dry run's answer.
    func countDelete(_ request: BatchDeleteRequest) throws -> Int
    /// Objects alive in the context's identity map(s).
    var registeredObjectCount: Int { get }
    /// True when an undoable edit can be undone.
    var canUndo: Bool { get }
    /// Undoes the last undoable edit (in every store it changed) and returns what it changed.
    @discardableResult
    func undo() throws -> ChangeSet
    /// What ``undo()`` would take back now (nil: nothing), read from its journal; writes nothing.
    /// - Complexity: a count of the journal's rows.
    func undoSummary() throws -> UndoSummary?
    /// Why an edit of `rows` rows of `entity` (a delete, or an update assigning `assigning`)
    /// could not be undone, or nil when it could: asked before the edit runs, so that its
    /// confirmation says so. The edit itself checks again when it runs.
    func undoRefusal(_ entity: Entity, rows: Int, deleting: Bool, assigning: [String]) -> String?
    /// Runs `body` (edits, counts and undo through this context) so that `progress` can cancel it
    /// part way: an edit stopped before it commits changes nothing and the call throws
    /// `.cancelled` (see ``ManagedObjectContext/interruptible(_:_:)``).
    func interruptible<T>(_ progress: @escaping (EditProgress) -> IDFetchDecision, _ body: () throws -> T) throws -> T
    /// Merges `changes` (from an edit) into the context(s) and drops stale batches of open results.
    func merge(_ changes: ChangeSet)
    /// Turns every registered object back into a fault (another writer changed the files).
    func refreshAllObjects()
    /// Changes when another connection commits to any of the files (`PRAGMA data_version`).
    func dataVersion() throws -> Int
    /// Why a file this context writes is no longer the one at its path (deleted, replaced), or
    /// nil (and always nil for a server).
    var fileProblem: String? { get }
    /// When a file this context wrote was deleted or replaced since it was opened: copies what
    /// its WAL holds into the file it opened and empties the WAL, so that the `-wal` left at the
    /// path (SQLite does not checkpoint a moved file when it closes) cannot be read as part of
    /// whatever file is put there. Does nothing otherwise (and always, for a server).
    func settleMovedFile()
    /// Makes another context over the same store or stores, with its own connection (or
    /// session), for reads on another thread while this one works (a browser reads the last rows
    /// of a sort there while this context fetches the result's IDs); nil where there is none.
    var readerMaker: (@Sendable () throws -> any FetchingContext)? { get }
    /// The engine's own estimate of each table's rows, by entity name, read at once from its
    /// statistics (PostgreSQL's `reltuples`); empty where there is none (SQLite).
    func estimatedRowCounts() -> [String: Int]
    /// The first `fetchLimit` rows of `request` (all of them without a limit: keep it small) as
    /// objects that hold their values, for showing: where the engine can, one statement on a
    /// connection this context keeps, with no ID table (PostgreSQL); elsewhere through a
    /// batched result. What the browser reads the last rows of a sort with while its IDs load.
    func firstRows(_ request: FetchRequest) throws -> [ManagedObject]
    /// Opens what reads need ahead of the first one (PostgreSQL: this context's session), so that
    /// the first read pays for its query alone; does nothing where nothing needs opening.
    func prepareForReads() throws
}

/// What an engine can do that a caller may word or offer differently: asked of a context
/// (``FetchingContext/engineTraits``) instead of comparing its ``FetchingContext/engineName``.
public struct EngineTraits: Sendable, Equatable {
    /// The engine reports how many rows a running statement has read so far (SQLite's VM step
    /// counter), so a long count can say "n rows read".
    public var reportsRowsRead: Bool
    /// The data lives in files this process opened (SQLite), rather than on a server: a change by
    /// another writer is a changed file, and a file can be deleted or replaced under it.
    public var holdsFiles: Bool
    /// ``FetchingContext/dataVersion()`` moves with every commit of another writer as soon as it
    /// is made (SQLite's `data_version`), so an unchanged version proves the data unchanged. A
    /// server's version is read from statistics that lag its commits (PostgreSQL's, by up to a
    /// second or more): it says a change happened, never that none did.
    public var exactDataVersion: Bool

    public init(reportsRowsRead: Bool, holdsFiles: Bool, exactDataVersion: Bool) {
        self.reportsRowsRead = reportsRowsRead
        self.holdsFiles = holdsFiles
        self.exactDataVersion = exactDataVersion
    }

    /// SQLite's: a file, with a step counter and an exact data version.
    public static let sqliteFile = EngineTraits(reportsRowsRead: true, holdsFiles: true, exactDataVersion: true)
    /// A server's: no step counter a client can read, nothing on this machine's disk, and a data
    /// version that lags.
    public static let server = EngineTraits(reportsRowsRead: false, holdsFiles: false, exactDataVersion: false)
}

extension FetchingContext {
    /// Not built yet for several stores or PostgreSQL: refused, naming the engine.
    public func addQuery(_ sql: String) throws -> Entity {
        throw BatchStoreError(.invalidArgument, "a query is opened on one SQLite file; it is not built yet for \(storeNames.count > 1 ? "several files" : engineName)")
    }

    public var fileProblem: String? { nil }
    public func settleMovedFile() {}
    public var readerMaker: (@Sendable () throws -> any FetchingContext)? { nil }
    public var editResultType: BatchResultType { .changes }
    public func estimatedRowCounts() -> [String: Int] { [:] }
    public func firstRows(_ request: FetchRequest) throws -> [ManagedObject] {
        let result = try fetchBatched(request, residentBatches: 1, firstBatch: nil, progress: nil)
        return try (0..<result.count).compactMap { try result.object(at: $0) }
    }
    public func prepareForReads() throws {}
}

/// A context with an identity map, on either engine (one store's ``ManagedObjectContext``,
/// PostgreSQL's `PostgresContext`): at most one live object per row, held weakly, whichever
/// result or lookup read it; merges refault updated objects and mark deleted ones. Code written
/// against it (a cache of objects, a view that redraws what a merge reports) runs on both.
public protocol ObjectContext: FetchingContext {
    /// The registered object for `id`, if one is alive; never does I/O.
    func registeredObject(for id: ObjectID) -> ManagedObject?
    /// The registered object for `id`, or a new registered fault for it (no I/O: reading a value
    /// of a fault whose row is gone throws `.objectNotFound`).
    func object(with id: ObjectID) -> ManagedObject
    /// Turns `object` back into a fault, keeping (`mergeChanges`) or dropping its unsaved changes.
    func refresh(_ object: ManagedObject, mergeChanges: Bool)
    /// Forgets every object; those held elsewhere become detached.
    func reset()
    /// Merges `changes` and says what it did (see ``ManagedObjectContext/mergeChanges(_:)``).
    @discardableResult
    func mergeChanges(_ changes: ChangeSet) -> MergeReport
}

/// A context that runs an edit and then hands back each changed row's ID as the engine streams
/// it, after the commit, without holding them all (PostgreSQL's: the changed keys wait in a
/// temp table of the server): client memory O(1) however many rows changed. Callers that print
/// changed IDs prefer this when a context offers it.
public protocol ChangedIDStreamingContext: FetchingContext {
    /// Runs `request` in one transaction, then calls `body` with each changed row's ID (in key
    /// order); returns how many changed.
    func execute(_ request: BatchUpdateRequest, changedIDs body: (ObjectID) throws -> Void) throws -> Int
    /// ``execute(_:changedIDs:)`` for a delete.
    func execute(_ request: BatchDeleteRequest, changedIDs body: (ObjectID) throws -> Void) throws -> Int
}

/// What a batch insert wrote, as ``InsertingContext/executeCounting(_:)`` answers it.
public struct InsertCounts: Sendable, Equatable {
    public var inserted: Int
    /// Rows an upsert updated (0 for the other policies).
    public var updated: Int
    /// Rows written, as the engine counted its statements' rows where it did (SQLite: an upsert
    /// that writes one key twice wrote two rows, where ``inserted`` and ``updated`` count keys).
    package var written: Int?
    /// Rows written: ``inserted`` plus ``updated`` unless the engine counted them itself.
    public var total: Int { written ?? inserted + updated }

    public init(inserted: Int, updated: Int) {
        self.inserted = inserted
        self.updated = updated
    }
}

/// A context that runs a batch insert and answers only how many rows it inserted and updated,
/// keeping no IDs (what an import of millions of rows asks for): each engine by its fastest path
/// (SQLite's prepared statement, PostgreSQL's `COPY`).
public protocol InsertingContext: FetchingContext {
    /// Runs `request` in one transaction: every row or none; its result type is the engine's
    /// business (an upsert needs to tell inserted rows from updated ones).
    func executeCounting(_ request: BatchInsertRequest) throws -> InsertCounts
}

/// A context whose rows stream as values rather than in place (PostgreSQL's: there is no SQLite
/// statement to read from); callers that write rows out prefer this when a context offers it.
public protocol ValueStreamingContext: FetchingContext {
    /// The rows `request` matches, in its order, each as its entity's column values, one
    /// statement, forward only.
    func streamValues(_ request: FetchRequest, _ body: ([SQLValue]) throws -> Void) throws
}
