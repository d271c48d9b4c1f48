import ArgumentParser
import BatchStore
import Browser
import FaultlineDemo
import Foundation
import TerminalCore
import TerminalCurses

/// `faultline [browse] [DB] …`: the terminal browser (the default command).
struct Browse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Browse a table of a SQLite file or a PostgreSQL URL in the terminal (the default command; no DB opens the demo).")

    @Argument(help: "The SQLite file (it must exist); several files browse as one result, with a column naming each row's store. Or a PostgreSQL URL (postgresql://user@host/db, ?host=/socket/dir), browsed and edited as a file is. Without any, the demo database (1M movies), created in the cache directory on first run.", completion: .file())
    var databases: [String] = []

    var database: String? { databases.first }

    @OptionGroup var view: ViewOptions

    @Option(help: "Append a log of what the browser does to this file (never to the screen).")
    var log: String?

    @Option(help: "Movies in the demo database when it is created.")
    var demoRows: Int = 1_000_000

    func validate() throws {
        guard demoRows > 0 else { throw ValidationError("--demo-rows must be at least 1") }
    }

    func run() throws {
        // A query that cannot run is refused before the demo database is made.
        if let query = view.query { _ = try readQueryOption(query) }
        let paths = databases.isEmpty ? [try DemoDatabase.ensureInCache(rows: demoRows)] : databases
        var opened = try view.open(paths)
        // Up and Down recall earlier prompts across runs; `snapshot` keeps no history.
        opened.options.historyPath = ViewOptions.stateFolder(ProcessInfo.processInfo.environment).map { $0 + "/history" }
        let logger = try log.map { try LogFile(path: $0) }
        let terminal: CursesTerminal
        do {
            terminal = try CursesTerminal(environment: ProcessInfo.processInfo.environment)
        } catch let error as CursesTerminal.Unavailable {
            throw BatchStoreError(.invalidArgument, error.description)
        }
        defer { terminal.close() }
        let browser = try opened.browser(backend: terminal, environment: .live)
        browser.log = logger.map { l in { l.write($0) } }
        browser.start()
        browser.run()
    }
}

/// What to open and how, as `browse` and `snapshot` take it: the table, filter, sort, batch size
/// and read-only flag.
struct ViewOptions: ParsableArguments {
    @Option(help: "The table or view to open (without it, a list to pick from).")
    var table: String?

    @Option(help: "Instead of a table, the result of one read-only SQL query (SELECT, WITH … SELECT or VALUES), or @FILE to read it from a file: browsed, filtered, sorted and searched like a view, read-only. One SQLite file.")
    var query: String?

    @Option(name: .customLong("where"), help: "Which rows: a predicate in NSPredicate format, e.g. 'year >= 1990', or a SQL condition after the word WHERE, e.g. \"WHERE title LIKE 'U%'\" (SQLite).")
    var predicate: String?

    @Option(help: "Sort keys: 'rating desc, title'.")
    var sort: String?

    @Option(help: "Rows faulted per batch.")
    var batchSize: Int = 100

    @Flag(help: "Open the file (or the PostgreSQL database) read-only: the edit keys do nothing.")
    var readOnly = false

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        if table != nil && query != nil { throw ValidationError("give --table or --query, not both") }
    }

    /// The files at `paths` (each must exist), checked against the table, filter and sort before
    /// any screen is drawn.
    /// A PostgreSQL URL (one, alone) opens the database it names instead.
    func open(_ paths: [String]) throws -> OpenedView {
        let query = try self.query.map(readQueryOption)
        if query != nil { try refuseQuery(on: paths) }
        if let predicate { _ = try FetchPredicate(filter: predicate) }
        if let sort { _ = try SortDescriptor.parse(sort) }
        var options = BrowserOptions(table: table, filter: predicate ?? "", sort: sort, batchSize: batchSize,
                                     readOnlyReason: readOnly ? "opened with --read-only" : nil)
        let environment = ProcessInfo.processInfo.environment
        options.osc52 = environment["FAULTLINE_OSC52"] == "1"
        options.copyDirectory = Self.stateFolder(environment)
        if paths.contains(where: isPostgresURL) {
            guard paths.count == 1 else { throw BatchStoreError(.invalidArgument, "a PostgreSQL URL cannot be browsed together with other stores") }
            let server = try serverContext(paths[0])
            if let table { _ = try server.entity(named: table) }
            return OpenedView(stores: [], coordinator: nil, server: server, options: options)
        }
        // A query is opened on a read-only file, so that SQLite itself refuses any write it might
        // still hide; the file is opened again for writing only when the query's rows name
        // tables' rows, which D, U and e then edit (the query is still one read-only statement).
        var stores = try paths.map { try PersistentStore(path: $0, options: .init(readOnly: readOnly || query != nil, walAtFirstWrite: !readOnly, query: query)) }
        if query != nil, !readOnly, stores.first?.queryEntity?.editTables.isEmpty == false {
            stores = try paths.map { try PersistentStore(path: $0, options: .init(readOnly: false, walAtFirstWrite: true, query: query)) }
        }
        if let entity = stores.first?.queryEntity { options.table = entity.name }
        let coordinator = stores.count > 1 ? try PersistentStoreCoordinator(stores: stores) : nil
        if let table {
            if let coordinator { _ = try coordinator.entities(named: table) } else { _ = try stores[0].entity(named: table) }
        }
        return OpenedView(stores: stores, coordinator: coordinator, options: options)
    }

    /// Where `y` writes its file: `$XDG_STATE_HOME/faultline`, else `$HOME/.local/state/faultline`
    /// (made at the first copy; the temporary folder when it cannot be).
    static func stateFolder(_ environment: [String: String]) -> String? {
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].flatMap { $0.isEmpty ? nil : $0 + "/.local/state" }
        return base.map { $0 + "/faultline" }
    }
}

/// Files (or a PostgreSQL database) opened for a browser session, and the options it starts with.
struct OpenedView {
    let stores: [PersistentStore]
    let coordinator: PersistentStoreCoordinator?
    /// A server's context (a PostgreSQL URL), instead of files.
    var server: (any FetchingContext)? = nil
    var options: BrowserOptions

    /// What the screen and a picture's title call it: the file names, or the database's.
    var title: String {
        if let server { return "\(server.storeNames.joined(separator: " ")) (\(server.engineName))" }
        return stores.map { ($0.path as NSString).lastPathComponent }.joined(separator: " ")
    }

    /// A browser over the files (one store, or several as one), or the database, on `backend`.
    func browser(backend: TerminalBackend, environment: BrowserEnvironment) throws -> Browser {
        if let server { return try Browser(context: server, name: title, options: options, backend: backend, environment: environment) }
        if let coordinator { return try Browser(coordinator: coordinator, options: options, backend: backend, environment: environment) }
        return try Browser(store: stores[0], options: options, backend: backend, environment: environment)
    }
}

/// The `--log` file: one timestamped line per event, appended.
final class LogFile {
    let handle: FileHandle
    init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw BatchStoreError(.invalidArgument, "cannot create the log file \(path)")
            }
        }
        guard let h = FileHandle(forWritingAtPath: path) else { throw BatchStoreError(.invalidArgument, "cannot write the log file \(path)") }
        h.seekToEndOfFile()
        handle = h
    }
    func write(_ line: String) {
        handle.write(Data("\(ISO8601DateFormatter().string(from: Date())) \(TerminalText.escapingControlCharacters(line))\n".utf8))
    }
}
