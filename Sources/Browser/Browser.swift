import BatchStore
import Foundation
import TerminalCore

/// BatchStore's sort key (Foundation has a type of the same name).
typealias SortDescriptor = BatchStore.SortDescriptor

@_silgen_name("malloc_trim") private func c_malloc_trim(_ pad: Int) -> Int32

/// How the browser starts.
public struct BrowserOptions: Sendable {
    public var table: String?
    public var filter: String
    /// Sort keys as on the command line: `"rating desc, title"`.
    public var sort: String?
    public var batchSize: Int
    public var residentBatches: Int
    /// Why edits are refused for the whole session (nil: the file decides).
    public var readOnlyReason: String?

    public init(table: String? = nil, filter: String = "", sort: String? = nil, batchSize: Int = 100, residentBatches: Int = 8, readOnlyReason: String? = nil) {
        self.table = table
        self.filter = filter
        self.sort = sort
        self.batchSize = batchSize
        self.residentBatches = residentBatches
        self.readOnlyReason = readOnlyReason
    }
}

/// The browser session: holds the data (one store or several) and the current result, feeds keys
/// to the reducer, runs the effects it asks for against SQLite, and presents frames.
///
/// Not thread-safe: like its context, it lives on one thread.
public final class Browser {
    public private(set) var state: BrowserState
    public let backend: TerminalBackend
    let data: BrowserData
    let options: BrowserOptions
    private(set) var collection: BrowserResult?
    /// The number of the result in `collection` (``BrowserState/resultID``); edits aimed at any
    /// other result are refused.
    private var collectionID: Int?
    private var resultSerial = 0
    private var eagerArray: [ManagedObject] = []
    private var dataVersion: Int?
    private var lastTick = Date.distantPast
    /// Time spent in the last `send` (reduce, effects, render, present), for the benchmark.
    public private(set) var lastKeySeconds = 0.0
    /// Writes a line to the log file given with `--log` (never to the screen).
    public var log: ((String) -> Void)?

    /// A browser over one file.
    public convenience init(store: PersistentStore, options: BrowserOptions, backend: TerminalBackend) throws {
        try self.init(data: BrowserData(context: try ManagedObjectContext(store: store)), name: (store.path as NSString).lastPathComponent, options: options, backend: backend)
    }

    /// A browser over several files as one: results sort across them and show each row's store.
    public convenience init(coordinator: PersistentStoreCoordinator, options: BrowserOptions, backend: TerminalBackend) throws {
        try self.init(data: BrowserData(context: try CoordinatedContext(coordinator: coordinator)), name: coordinator.stores.map(\.name).joined(separator: " + "),
                      options: options, backend: backend)
    }

    init(data: BrowserData, name: String, options: BrowserOptions, backend: TerminalBackend) throws {
        self.data = data
        self.options = options
        self.backend = backend
        let size = backend.size
        state = BrowserState(width: size.width, height: size.height)
        state.databaseName = name
        dataVersion = data.dataVersion()
    }

    /// Objects alive in the browser's context(s).
    public var registeredObjectCount: Int { data.registeredObjectCount }

    /// Opens the starting table (or the table list) and draws the first frame.
    public func start() {
        if let table = options.table {
            perform(open: table, filter: options.filter, sortText: options.sort)
        } else if data.entities.count == 1, let only = data.entities.first {
            perform(open: only.name, filter: options.filter, sortText: options.sort)
        } else {
            dispatch(.tablesListed(tableEntries()))
        }
        present()
    }

    /// Runs until `q`: waits for keys, samples memory and watches the file between them.
    public func run() {
        while !state.quit {
            let timeout = hasIdleWork ? 0 : (state.memoryPanel ? 250 : 1000)
            if let key = backend.nextKey(timeoutMilliseconds: timeout) {
                send(key)
            } else {
                tick()
                present()
            }
            if idle() { present() }
        }
    }

    /// Work done between keys, one piece at a time so keys stay responsive: table counts for the
    /// picker, steps of the eager copy.
    private var pendingCounts: [Int] = []
    private var hasIdleWork: Bool { state.eagerActive || !pendingCounts.isEmpty }

    /// Does one piece of background work; false when there was none.
    @discardableResult
    public func idle() -> Bool {
        if !pendingCounts.isEmpty {
            let index = pendingCounts.removeFirst()
            let entries = data.entities
            guard index < entries.count else { return true }
            do {
                let n = try data.count(FetchRequest(entityName: entries[index].name))
                dispatch(.tableCounted(index: index, count: n))
            } catch {
                log?("counting \(entries[index].name) failed: \(error)")
            }
            return true
        }
        if state.eagerActive {
            eagerStep()
            return true
        }
        return false
    }

    /// Handles one key completely: reduce, effects, frame. Returns the frame time.
    @discardableResult
    public func send(_ key: Key) -> Double {
        let started = DispatchTime.now().uptimeNanoseconds
        if key == .resize {
            let size = backend.size
            dispatch(.resized(width: size.width, height: size.height))
        } else {
            dispatch(.key(key))
        }
        if state.memoryPanel { sampleMemory() }
        present()
        lastKeySeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return lastKeySeconds
    }

    /// Sends several keys (tests, the benchmark).
    public func send(_ keys: [Key]) {
        for key in keys { send(key) }
    }

    /// Between keys: memory sample when the panel is open, and `PRAGMA data_version` once a second.
    public func tick() {
        if state.memoryPanel { sampleMemory() }
        guard Date().timeIntervalSince(lastTick) >= 1 else { return }
        lastTick = Date()
        if let now = data.dataVersion(), let before = dataVersion, now != before, !state.fileChanged {
            dispatch(.fileChanged)
        }
    }

    func present() {
        backend.present(render(state, colors: backend.colorsEnabled))
    }

    /// Applies `action` and everything it leads to.
    public func dispatch(_ action: Action) {
        var queue = [action]
        while !queue.isEmpty {
            let next = queue.removeFirst()
            for effect in state.reduce(next) {
                queue += perform(effect)
            }
        }
    }

    // MARK: Effects

    private func perform(_ effect: Effect) -> [Action] {
        do {
            switch effect {
            case .listTables:
                return [.tablesListed(tableEntries())]
            case .countTable(let index):
                pendingCounts.append(index)
                return []
            case .open(let table, let filter, let sort, let cursor):
                perform(open: table, filter: filter, sorts: sort.map { [SortDescriptor(keyPath: [$0.column], ascending: $0.ascending)] } ?? [], cursor: cursor)
                return []
            case .loadWindow(let range):
                return [.windowLoaded(start: range.lowerBound, rows: try snapshots(range))]
            case .loadRecord(let row):
                return [.recordLoaded(try recordFields(row))]
            case .search(let column, let text, let from, let backwards):
                return try search(column: column, text: text, from: from, backwards: backwards)
            case .countDelete(let target):
                let result = try result(for: target)
                return [.countedForDelete(try data.countDelete(in: result, marked: target.marked), target: target)]
            case .runDelete(let target):
                return [try runDelete(target)]
            case .countUpdate(let text, let target):
                let result = try result(for: target)
                let assignments = try UpdateExpression.parseAssignments(text)
                return [.countedForUpdate(rows: try data.countUpdate(assignments, in: result, marked: target.marked), assignments: text, target: target)]
            case .runUpdate(let text, let target):
                return [try runUpdate(text, target: target)]
            case .undo:
                guard data.canUndo else { return [.failed("nothing to undo")] }
                let started = Date()
                let changes = try data.undo()
                // Undo acts on the last edit, which may be of another table: say which.
                let tables = Set((changes.inserted + changes.updated + changes.deleted).map(\.entity.name) + changes.stored.map(\.entity.name)).sorted().joined(separator: ", ")
                let of = tables.isEmpty ? "" : " of \(tables)"
                let what = changes.insertedCount > 0 ? "restored \(rows(changes.insertedCount, "deleted"))\(of)"
                    : changes.updatedCount > 0 ? "restored the old values of \(rows(changes.updatedCount))\(of)"
                    : "removed \(rows(changes.deletedCount, "inserted"))\(of)"
                return [try afterEdit("undo: \(what)", started: started)]
            case .reload:
                guard collection != nil else {
                    if let table = state.table { perform(open: table, filter: state.filter, sorts: currentSorts) }
                    return []
                }
                data.refreshAllObjects()
                let started = Date()
                let action = try afterEdit("reloaded", started: started, keepingMarks: true)
                dataVersion = data.dataVersion()
                state.fileChanged = false
                return [action]
            case .startEager:
                guard let collection else { return [] }
                eagerArray = []
                eagerArray.reserveCapacity(collection.count)
                return [.info("copying all \(group(collection.count)) rows into a Swift array, as `Array(results)` would: watch RSS climb (Esc stops)"),
                        .eagerProgress(loaded: 0, done: collection.count == 0)]
            case .stopEager:
                let n = eagerArray.count
                eagerArray = []
                _ = c_malloc_trim(0)
                sampleMemory()
                return [.eagerStopped("back to batches: the array of \(group(n)) objects is gone, and so is its memory")]
            case .sampleMemory:
                sampleMemory()
                return []
            }
        } catch let error as BatchStoreError {
            return [.failed(error.message)]
        } catch {
            return [.failed("\(error)")]
        }
    }

    private func tableEntries() -> [TableEntry] {
        data.entities.map { TableEntry(name: $0.name, isView: $0.kind == .view, count: nil) }
    }

    /// The result `target` was aimed at, if it is still the one on screen; otherwise nothing runs.
    private func result(for target: EditTarget) throws -> BrowserResult {
        guard let collection, let collectionID, target.result == collectionID,
              collection.request.entityName == target.table else {
            throw BatchStoreError(.invalidArgument, "that edit was for a result no longer on screen; nothing was changed")
        }
        return collection
    }

    /// Searches the current column from `from`, wrapping once; a long search shows progress, and
    /// Esc (or Ctrl-C, or q) cancels the search alone: the cursor, filter and sort stay.
    private func search(column: String, text: String, from: Int, backwards: Bool) throws -> [Action] {
        guard let collection else { return [] }
        // What the grid shows, searched as text: numbers too (`/195` finds the year 1950).
        let predicate = try FetchPredicate(format: "string(%K) CONTAINS[c] %@", arguments: [.key(column), .value(.text(text))])
        let started = Date()
        var lastDraw = Date.distantPast
        let progress: (IDFetchProgress) -> IDFetchDecision = { [self] p in
            if let key = backend.nextKey(timeoutMilliseconds: 0) {
                if key == .escape || key == .ctrl("c") || key == .char("q") { return .cancel }
                if key == .resize { let s = backend.size; _ = state.reduce(.resized(width: s.width, height: s.height)) }
            }
            if Date().timeIntervalSince(started) >= 0.2, Date().timeIntervalSince(lastDraw) >= 0.1 {
                lastDraw = Date()
                _ = state.reduce(.searchProgress(text: text, rows: p.rowsScanned))
                present()
            }
            return .proceed
        }
        do {
            if let row = try collection.firstPosition(matching: predicate, after: from, backwards: backwards, progress: progress) {
                return [.searchFound(row: row, text: text, wrapped: false)]
            }
            let row = try collection.firstPosition(matching: predicate, after: backwards ? collection.count : -1, backwards: backwards, progress: progress)
            return [.searchFound(row: row, text: text, wrapped: row != nil)]
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.info("search cancelled: still on row \(group(state.cursorRow + 1))")]
        }
    }

    /// Opens `table` with a progressive fetch: the first batch on screen at once, then the ID
    /// fetch with a progress line; Esc cancels it and keeps what was shown before.
    private func perform(open table: String, filter: String, sortText: String?) {
        do {
            perform(open: table, filter: filter, sorts: try sortText.map { try SortDescriptor.parse($0) } ?? [])
        } catch let error as BatchStoreError {
            dispatch(.failed(error.message))
        } catch {
            dispatch(.failed("\(error)"))
        }
    }

    private var currentSorts: [SortDescriptor] {
        state.sort.map { [SortDescriptor(keyPath: [$0.column], ascending: $0.ascending)] } ?? []
    }

    private func perform(open table: String, filter: String, sorts: [SortDescriptor], cursor: Int = 0) {
        let before = state
        do {
            let entity = try data.entity(named: table)
            let predicate = filter.isEmpty ? nil : try FetchPredicate(format: filter)
            let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sorts, fetchBatchSize: options.batchSize)
            let columns = (data.showsStores ? [Self.storeColumn] : []) + entity.attributes.map(\.name)
            let started = Date()
            var lastDraw = Date()
            var cancelled = false
            var quitAfterCancel = false
            let opened: BrowserResult
            do {
                opened = try data.open(request, residentBatches: options.residentBatches, firstRows: { [self] first in
                    dispatch(.openingFirstRows(table: entity.name, columns: columns, rows: first.map(snapshot)))
                    present()
                }, progress: { [self] progress in
                    if Date().timeIntervalSince(lastDraw) >= 0.1 {
                        lastDraw = Date()
                        _ = state.reduce(.loadProgress(fraction: progress.fractionCompleted, rows: progress.rowsScanned))
                        present()
                    }
                    if let key = backend.nextKey(timeoutMilliseconds: 0) {
                        if key == .escape || key == .ctrl("c") || key == .char("q") {
                            cancelled = true
                            quitAfterCancel = key != .escape
                            return .cancel
                        }
                        if key == .resize { let s = backend.size; _ = state.reduce(.resized(width: s.width, height: s.height)); present() }
                    }
                    return .proceed
                })
            } catch let error as BatchStoreError where error.code == .cancelled || cancelled {
                state = before
                if collection == nil {
                    // Nothing to go back to: keep what was asked for, so `r` asks again.
                    state.table = entity.name
                    state.columns = columns
                    state.filter = filter
                    state.sort = sorts.first.map { (column: $0.keyPath.joined(separator: "."), ascending: $0.ascending) }
                    state.count = 0
                    state.mode = .grid
                }
                dispatch(.info(collection == nil ? "loading cancelled: r loads it again" : "loading cancelled: still showing the previous result"))
                if quitAfterCancel { state.quit = true }
                return
            }
            if state.eagerLoaded != nil { eagerArray = []; dispatch(.eagerStopped("the eager array was dropped with the old result")) }
            // Marks belong to one result: only those whose rows are in the new ID table go on.
            var kept: Marks?
            resultSerial += 1
            if let marks = state.marks, !marks.all, !marks.ids.isEmpty {
                let members = (try? opened.members(of: Array(marks.ids))) ?? []
                kept = Marks(result: resultSerial, ids: Set(members))
            }
            collection = opened
            collectionID = resultSerial
            let seconds = Date().timeIntervalSince(started)
            let readOnly = options.readOnlyReason ?? data.readOnlyReason ?? (entity.isReadOnly ? "\(entity.name) is a view or has no row key" : nil)
            let sort = sorts.first.map { (column: $0.keyPath.joined(separator: "."), ascending: $0.ascending) }
            dispatch(.opened(table: entity.name, columns: columns, filter: filter, sort: sort, count: opened.count, cursor: cursor, readOnly: readOnly,
                             message: "\(rows(opened.count)) in \(milliseconds(seconds)) (IDs in SQLite, rows faulted \(options.batchSize) at a time)",
                             result: resultSerial, marks: kept))
            log?("opened \(entity.name) filter=\(filter) sort=\(sorts) rows=\(opened.count) in \(seconds)s")
        } catch let error as BatchStoreError {
            state = before
            dispatch(.failed(error.message))
        } catch {
            state = before
            dispatch(.failed("\(error)"))
        }
    }

    private func snapshot(_ object: ManagedObject?) -> RowSnapshot {
        guard let object, !object.isDeleted else { return RowSnapshot(id: nil, values: [], exists: false) }
        let n = object.entity.attributes.count
        var values: [DisplayValue] = []
        values.reserveCapacity(n + 1)
        if data.showsStores { values.append(.text(object.objectID.entity.storeName)) }
        for i in 0..<n { values.append(DisplayValue((try? object.value(at: i)) ?? .null)) }
        return RowSnapshot(id: object.objectID.isAddressable ? object.objectID : nil, values: values, exists: true)
    }

    private func snapshots(_ range: Range<Int>) throws -> [RowSnapshot] {
        guard let collection else { return [] }
        let eager = eagerArray.count
        return try range.map { row in
            if row < eager { return snapshot(eagerArray[row]) }
            return snapshot(try collection.object(at: row))
        }
    }

    private func recordFields(_ row: Int) throws -> [(name: String, value: String)] {
        guard let collection, let object = try collection.object(at: row) else {
            throw BatchStoreError(.objectNotFound, "row \(row + 1) was deleted since the result was fetched; r reloads")
        }
        var fields: [(name: String, value: String)] = [("object ID", object.objectID.uriRepresentation)]
        for (i, attribute) in object.entity.attributes.enumerated() {
            let value = try object.value(at: i)
            let shown: String
            switch value {
            case .null: shown = "NULL"
            case .text(let s):
                let limit = 2_000
                let head = s.prefix(limit + 1)
                // The size first: a long value runs off the screen's edge.
                shown = head.count > limit ? "(\(group(s.utf8.count)) bytes in all; the first \(group(limit)) characters) " + String(head.dropLast()) + "…" : s
            case .blob(let b):
                shown = "blob, \(group(b.count)) bytes: " + b.prefix(32).map { String(format: "%02x", $0) }.joined() + (b.count > 32 ? "…" : "")
            default: shown = DisplayValue(value).shown
            }
            fields.append((attribute.name + (attribute.declaredType.isEmpty ? "" : " " + attribute.declaredType), shown))
        }
        return fields
    }

    /// The first column's name when several stores are shown: which store a row comes from.
    public static let storeColumn = "@store"

    /// Runs `text` on the target's rows of the result on screen; the message gives SQLite's count.
    private func runUpdate(_ text: String, target: EditTarget) throws -> Action {
        let result = try result(for: target)
        let assignments = try UpdateExpression.parseAssignments(text)
        let started = Date()
        // The changed keys stay in SQLite; the merge asks only about the objects the view holds.
        let (changed, undoNote) = try data.update(assignments, in: result, marked: target.marked)
        merge(changed)
        return try afterEdit("updated \(rows(changed.count ?? 0)) of \(target.table)\(undoNote)", started: started)
    }

    /// Deletes the target's rows of the result on screen; the message gives SQLite's count.
    private func runDelete(_ target: EditTarget) throws -> Action {
        let result = try result(for: target)
        let started = Date()
        let (deleted, undoNote) = try data.delete(in: result, marked: target.marked)
        merge(deleted)
        return try afterEdit("deleted \(rows(deleted.count ?? 0)) from \(target.table)\(undoNote)", started: started)
    }

    private func merge(_ result: BatchResult) {
        if let changes = result.changes {
            data.merge(changes)
        } else {
            data.refreshAllObjects()
        }
    }

    /// Re-runs the result's ID fetch keeping the cursor on its row (or the nearest survivor).
    /// With `keepingMarks` (a reload), marks whose rows are still in the new ID table stay.
    private func afterEdit(_ what: String, started: Date, keepingMarks: Bool = false) throws -> Action {
        guard let collection, let collectionID else { return .info(what) }
        let c = state.cursorRow
        var anchors = [c]
        for d in 1...50 { anchors += [c + d, c - d] }
        anchors = anchors.filter { $0 >= 0 && $0 < collection.count }
        let newCursor = try collection.refresh(keeping: anchors) ?? min(c, max(0, collection.count - 1))
        dataVersion = data.dataVersion()
        var kept: Marks?
        if keepingMarks, let marks = state.currentMarks {
            kept = marks.all ? marks : Marks(result: collectionID, ids: Set(try collection.members(of: Array(marks.ids))))
        }
        return .edited(count: collection.count, cursor: newCursor, message: "\(what) (\(milliseconds(Date().timeIntervalSince(started))))", marks: kept)
    }

    private func sampleMemory() {
        var m = MemorySnapshot()
        m.rss = ProcessMemory.residentBytes()
        m.peakRSS = ProcessMemory.peakResidentBytes()
        m.objectsAlive = data.registeredObjectCount
        if let stats = collection?.statistics {
            m.batchesResident = stats.batchesResident
            m.residentLimit = stats.residentBatchLimit
            m.batchesFaulted = stats.batchesFaulted
            m.idStorage = stats.idStorage
            m.idsHeld = stats.idsHeld
            m.idsInSwiftMemory = stats.idsInSwiftMemory + eagerArray.count
            m.lastFaultSeconds = stats.lastFaultSeconds
            m.valueBytesResident = stats.valueBytesResident
        }
        dispatch(.memorySampled(m))
    }

    /// Copies the next slice of the result into the eager array.
    private func eagerStep() {
        guard let collection, state.eagerActive else { return }
        let start = eagerArray.count
        let end = min(collection.count, start + 20_000)
        for i in start..<end {
            if let o = try? collection.object(at: i) { eagerArray.append(o) } else { break }
        }
        sampleMemory()
        dispatch(.eagerProgress(loaded: eagerArray.count, done: eagerArray.count >= collection.count || end == start))
    }
}

/// `1 row`, `2 rows`, `1,000 deleted rows`.
func rows(_ n: Int, _ kind: String = "") -> String { "\(group(n)) \(kind.isEmpty ? "" : kind + " ")\(n == 1 ? "row" : "rows")" }

func milliseconds(_ seconds: Double) -> String {
    seconds < 10 ? "\(Int((seconds * 1000).rounded())) ms" : String(format: "%.1f s", seconds)
}
