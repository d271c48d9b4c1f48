import BatchStore
import Foundation

/// Runs effects against the data: the one store or several, the result on screen, the eager
/// array. It lives on the ``EffectWorker``'s thread and gives back actions; it never reads keys,
/// reduces or draws. The state each job gets is the state that asked for it (read only).
final class EffectRunner {
    /// Work for the runner: an effect from the reducer, or the session's own work between keys.
    enum Job: Sendable {
        case effect(Effect)
        /// Counts the rows of the picker's table at `index`.
        case countTable(index: Int)
        /// Copies the next slice of the result into the eager array.
        case eagerStep
        /// Checks `PRAGMA data_version`: another writer changed the file.
        case watchFile
    }

    let data: BrowserData
    let options: BrowserOptions
    let environment: BrowserEnvironment
    /// Every table sheet's result the state still names, by its result ID
    /// (``BrowserState/resultID``, ``SavedSheet/resultID``): the state's sheets are the one stack;
    /// the data keeps each sheet's result under its ID and lets go of those no sheet names.
    var results: [Int: HeldResult] = [:]
    /// The ID of the table result on screen, or under the sheet on screen (a frequency, summary
    /// or text sheet over it); edits aimed at any other result are refused.
    var shownID: Int?
    var resultSerial = 0
    var eagerArray: [ManagedObject] = []
    var dataVersion: Int?
    /// Seconds the last batch fault took, on ``BrowserEnvironment/now`` (nil: none since the
    /// result opened).
    var lastFaultSeconds: Double?
    /// Lines for the log file, handed to the session with the job's actions.
    private var log: [String] = []

    init(data: BrowserData, options: BrowserOptions, environment: BrowserEnvironment) {
        self.data = data
        self.options = options
        self.environment = environment
        dataVersion = data.dataVersion()
    }

    func log(_ line: String) { log.append(line) }

    func takeLog() -> [String] {
        defer { log = [] }
        return log
    }

    /// Runs `job`; `report` sends progress (and first rows) while it runs; `cancel` stops an
    /// open or a search at its next progress tick.
    func run(_ job: Job, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) -> [Action] {
        do {
            switch job {
            case .effect(let effect):
                return try perform(effect, state: state, cancel: cancel, report: report)
            case .countTable(let index):
                let entries = data.entities
                guard index < entries.count else { return [] }
                do {
                    let n = try data.count(FetchRequest(entityName: entries[index].name))
                    log("counted \(entries[index].name): \(n) rows")
                    return [.tableCounted(index: index, count: n)]
                } catch {
                    // One table that cannot be counted (no permission, a broken view) says so,
                    // and the tables after it are still counted.
                    log("counting \(entries[index].name) failed: \(error)")
                    let reason = (error as? BatchStoreError).map { $0.code == .permissionDenied ? "no permission to read it" : $0.message } ?? "\(error)"
                    return [.tableCountFailed(index: index, reason: reason)]
                }
            case .eagerStep:
                return eagerStep(state)
            case .watchFile:
                if let problem = data.fileProblem {
                    // The WAL this connection left at the path must not become the new file's.
                    data.settleMovedFile()
                    if !state.fileGone { return [.fileGone(problem)] }
                }
                guard let now = data.dataVersion(), let before = dataVersion, now != before else { return [] }
                return [.fileChanged]
            }
        } catch let error as BatchStoreError {
            if let column = error.column { return [.failedAt(error.message, column: column)] }
            return [.failed(error.message)]
        } catch {
            return [.failed("\(error)")]
        }
    }

    private func perform(_ effect: Effect, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        switch effect {
        case .listTables:
            let estimates = data.estimatedRowCounts()
            let version = data.dataVersion()
            return [.tablesListed(data.entities.map { entity in
                var entry = TableEntry(name: entity.name, isView: entity.kind == .view, count: nil)
                entry.estimate = estimates[entity.name]
                entry.version = version
                return entry
            })]
        case .countTable, .cancel:
            preconditionFailure("\(effect) is the session's, not the runner's")
        case .open(let table, let filter, let sort, let cursor, let thenBy):
            return try open(table, filter: filter, sorts: (sort.map { [$0] } ?? []) + thenBy, cursor: cursor, state: state, cancel: cancel, report: report)
        case .openQuery(let sql):
            let entity = try data.addQuery(sql)
            return try open(entity.name, filter: "", sorts: [], cursor: 0, push: true, note: entity.name, state: state, cancel: cancel, report: report)
        case .peekLast, .countMatches, .peekRows:
            return []   // the session hands it to the second thread (EffectWorker.peek)
        case .loadWindow(let range):
            do {
                if state.frequencySheet != nil { return [.windowLoaded(start: range.lowerBound, rows: try frequencyRows(range))] }
                return [.windowLoaded(start: range.lowerBound, rows: try snapshots(range))]
            } catch {
                // Said once, for these rows: the screen does not ask for them again and again
                // (a lost server session made every frame ask, and the browser spun deaf).
                log("reading rows \(range) failed: \(error)")
                return [.windowFailed(range, (error as? BatchStoreError)?.message ?? "\(error)")]
            }
        case .frequency(let column, let result):
            return try countFrequencies(of: column, result: result, cancel: cancel, report: report)
        case .binFrequency(let column, let after):
            return try bin(column, after: after, cancel: cancel, report: report)
        case .openValue(let row, let sheet):
            return try openValue(at: row, of: sheet, state: state, cancel: cancel, report: report)
        case .openRelated(let reference, let toMany, let row, let result):
            return try openRelated(reference, toMany: toMany, row: row, result: result, state: state, cancel: cancel, report: report)
        case .write(let path, let overwrite, let result):
            return try write(to: path, overwrite: overwrite, result: result, cancel: cancel, report: report)
        case .copy(let request):
            return try copy(request, cancel: cancel, report: report)
        case .closeSheet(let role):
            closeSheet(role, state: state)
            return []
        case .summarize(let columns, let result):
            return try summarize(columns, result: result, cancel: cancel, report: report)
        case .loadRecord(let row):
            return [.textLoaded(try record(row, state: state))]
        case .loadSQL(let result, let row):
            return [try statements(of: result, row: row, state: state)]
        case .search(let column, let text, let from, let backwards):
            return try search(column: column, text: text, from: from, backwards: backwards, cancel: cancel, report: report)
        case .countDelete(let target):
            return try countDelete(target, cancel: cancel, report: report)
        case .runDelete(let target, let undo):
            return try runDelete(target, undo: undo, state: state, cancel: cancel, report: report)
        case .countUpdate(let text, let target):
            return try countUpdate(text, target: target, cancel: cancel, report: report)
        case .runUpdate(let text, let target, let undo):
            return try runUpdate(text, target: target, undo: undo, state: state, cancel: cancel, report: report)
        case .countUndo:
            return try countUndo(cancel: cancel, report: report)
        case .loadCell(let row, let column, let result):
            return [try loadCell(row: row, column: column, result: result)]
        case .undo:
            return try undo(state: state, cancel: cancel, report: report)
        case .recount(let role):
            return try recount(role, state: state, cancel: cancel, report: report)
        case .reload:
            return try reload(state: state, cancel: cancel, report: report)
        case .startEager:
            return startEager()
        case .stopEager:
            return stopEager()
        case .sampleMemory:
            return [sampleMemory()]
        case .saveHistory(let kind, let text):
            guard let path = options.historyPath else { return [] }
            do {
                try HistoryFile(path: path).add(text, for: kind)
                return []
            } catch {
                log("saving the prompt history to \(path) failed: \(error)")
                return [.historyNotSaved("\(error)")]
            }
        }
    }
}

/// `1 row`, `2 rows`, `1,000 deleted rows`.
func rows(_ n: Int, _ kind: String = "") -> String { counted(n, kind.isEmpty ? "row" : kind + " row") }

/// `4,667 ms`, or `12.5 s` from ten seconds on.
func milliseconds(_ seconds: Double) -> String {
    seconds < 10 ? "\(group(Int((seconds * 1000).rounded()))) ms" : "\(String(format1: seconds)) s"
}
