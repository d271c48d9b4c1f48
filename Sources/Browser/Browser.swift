import BatchStore
import Foundation
import TerminalCore

/// BatchStore's sort key (Foundation has a type of the same name): the one sort type from the
/// `s` key to the SQL.
typealias SortDescriptor = BatchStore.SortDescriptor

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
    /// `y` copies to the terminal's clipboard with OSC 52 (`FAULTLINE_OSC52=1`); else to a file.
    public var osc52 = false
    /// Where `y` writes its file when it does not use the clipboard (nil: the temporary folder).
    public var copyDirectory: String?
    /// The prompt history file, read at start and written when an entry is added (nil: the
    /// history lives as long as the session; tests and `faultline snapshot` keep none).
    public var historyPath: String?

    public init(table: String? = nil, filter: String = "", sort: String? = nil, batchSize: Int = 100, residentBatches: Int = 8, readOnlyReason: String? = nil) {
        self.table = table
        self.filter = filter
        self.sort = sort
        self.batchSize = batchSize
        self.residentBatches = residentBatches
        self.readOnlyReason = readOnlyReason
    }
}

/// The browser session: feeds keys to the reducer, hands the effects it asks for to the worker
/// that owns the data (one store or several), reduces what comes back, and presents frames.
///
/// The session itself lives on one thread (the one that calls ``start()``, ``run()`` and
/// ``send(_:)``); SQLite is used on the worker's thread only.
public final class Browser {
    public internal(set) var state: BrowserState
    let backend: TerminalBackend
    let options: BrowserOptions
    let environment: BrowserEnvironment
    let worker: EffectWorker
    /// The tables and views, as the file had them when the browser opened it.
    let tableNames: [String]
    /// Picker tables still to count, one between keys.
    var pendingCounts: [Int] = []
    /// When the file was last checked for another writer's changes (``BrowserEnvironment/now``).
    var lastFileCheck = -Double.infinity
    /// A confirmation opened and has not been drawn yet: once it is, the keys typed before are
    /// thrown away (``present()``).
    var questionToShow = false
    /// Time spent in the last `send` (reduce, effects, render, present).
    package internal(set) var lastKeySeconds = 0.0
    /// Writes a line to the log file given with `--log` (never to the screen).
    public var log: ((String) -> Void)?

    /// A browser over one file.
    public convenience init(store: PersistentStore, options: BrowserOptions, backend: TerminalBackend) throws {
        try self.init(store: store, options: options, backend: backend, environment: .live)
    }

    /// A browser over several files as one: results sort across them and show each row's store.
    public convenience init(coordinator: PersistentStoreCoordinator, options: BrowserOptions, backend: TerminalBackend) throws {
        try self.init(coordinator: coordinator, options: options, backend: backend, environment: .live)
    }

    /// A browser over any ``FetchingContext`` (a PostgreSQL store's, say), named `name` on screen.
    public convenience init(context: any FetchingContext, name: String, options: BrowserOptions, backend: TerminalBackend) throws {
        try self.init(context: context, name: name, options: options, backend: backend, environment: .live)
    }

    /// A browser over any ``FetchingContext``, with the clock and memory readings of `environment`.
    package convenience init(context: any FetchingContext, name: String, options: BrowserOptions, backend: TerminalBackend, environment: BrowserEnvironment) throws {
        try self.init(data: BrowserData(context: context), name: name, options: options, backend: backend, environment: environment)
    }

    /// A browser over one file, with the clock and memory readings of `environment`.
    package convenience init(store: PersistentStore, options: BrowserOptions, backend: TerminalBackend, environment: BrowserEnvironment) throws {
        try self.init(data: BrowserData(context: try ManagedObjectContext(store: store)), name: (store.path as NSString).lastPathComponent, options: options,
                      backend: backend, environment: environment)
    }

    /// A browser over several files, with the clock and memory readings of `environment`.
    package convenience init(coordinator: PersistentStoreCoordinator, options: BrowserOptions, backend: TerminalBackend, environment: BrowserEnvironment) throws {
        try self.init(data: BrowserData(context: try CoordinatedContext(coordinator: coordinator)), name: coordinator.stores.map(\.name).joined(separator: " + "),
                      options: options, backend: backend, environment: environment)
    }

    init(data: BrowserData, name: String, options: BrowserOptions, backend: TerminalBackend, environment: BrowserEnvironment) throws {
        self.options = options
        self.backend = backend
        self.environment = environment
        tableNames = data.entities.map(\.name)
        // From here on the data is the worker's alone.
        worker = EffectWorker(runner: EffectRunner(data: data, options: options, environment: environment))
        let size = backend.size
        state = BrowserState(width: size.width, height: size.height, databaseName: name)
        state.engineName = data.engineName
        state.engineTraits = data.engineTraits
    }

    /// Objects alive in the browser's context(s).
    package var registeredObjectCount: Int { worker.read { $0.data.registeredObjectCount } }

    /// The results the data holds, one per table sheet the state names (for tests).
    package var heldResultCount: Int { worker.read { $0.results.count } }

    /// The first column's name when several stores are shown: which store a row comes from.
    static let storeColumn = BrowserState.storeColumn
}
