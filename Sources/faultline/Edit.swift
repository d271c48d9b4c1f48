import ArgumentParser
import BatchStore
import Browser
import Foundation

/// The file, table and filter that `export`, `update` and `delete` all take.
struct TableOptions: ParsableArguments {
    @Argument(help: "The SQLite file (it must exist); several files are one result across stores; or a PostgreSQL URL (postgresql://user@host/db, ?host=/socket/dir).", completion: .file())
    var databases: [String]

    @Option(help: "With several files: which stores, by name (the file name without extension), e.g. 'a,b'.")
    var stores: String?

    var database: String { databases[0] }

    /// `--stores` as a list (nil: every store).
    var storeList: [String]? {
        stores.map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }
    }

    /// The PostgreSQL URL given instead of a file, if one was (`postgres://…`, `postgresql://…`).
    var postgresURL: String? {
        databases.count == 1 && isPostgresURL(databases[0]) ? databases[0] : nil
    }

    func validate() throws {
        guard !databases.isEmpty else { throw ValidationError("name the SQLite file") }
        if databases.count > 1, databases.contains(where: isPostgresURL) {
            throw ValidationError("a PostgreSQL URL cannot be combined with other stores")
        }
        if stores != nil && databases.count < 2 { throw ValidationError("--stores needs several files") }
    }

    @Option(help: "The table (export also reads a view).")
    var table: String?

    @Option(name: .customLong("where"), help: "Which rows: a predicate in NSPredicate format, e.g. 'year >= 1990 AND genre == \"Noir\"', or a SQL condition after the word WHERE, e.g. \"WHERE title LIKE 'U%'\" (SQLite).")
    var predicate: String?

    func parsedPredicate() throws -> FetchPredicate? { try predicate.map { try FetchPredicate(filter: $0) } }

    /// The file's context, or with several files a context over them (over the `--stores` named,
    /// in the files' order, after checking each has the table), the table's entity, and how many
    /// stores have it.
    /// With `query` (export's `--query`), its result instead of the table.
    func open(_ options: PersistentStore.Options, query: String? = nil) throws -> (context: any FetchingContext, entity: Entity, stores: Int) {
        if query != nil { try refuseQuery(on: databases) }
        let table = self.table ?? PersistentStore.queryEntityName
        if let postgresURL {
            let context = try serverContext(postgresURL)
            return (context, try context.entity(named: table), 1)
        }
        var options = options
        options.query = query
        let stores = try databases.map { try PersistentStore(path: $0, options: options) }
        if stores.count == 1 {
            let context = try ManagedObjectContext(store: stores[0])
            return (context, try stores[0].queryEntity ?? context.entity(named: table), 1)
        }
        let all = try PersistentStoreCoordinator(stores: stores)
        let entities = try all.entities(named: table, in: storeList)
        // The stores keep the order of the files: ties and unsorted results go by store order.
        let chosen = try storeList.map { names in try PersistentStoreCoordinator(stores: all.stores.filter { names.contains($0.name) }) } ?? all
        return (try CoordinatedContext(coordinator: chosen), entities[0], entities.count)
    }
}

/// The text of a `--query` option: the option itself, or with `@PATH` the file's text (UTF-8, a
/// byte-order mark left out), checked for what needs no database (``PersistentStore/checkQueryText(_:)``).
func readQueryOption(_ option: String) throws -> String {
    var text = option
    if option.hasPrefix("@") {
        let path = String(option.dropFirst())
        guard var data = FileManager.default.contents(atPath: path) else {
            throw BatchStoreError(.invalidArgument, "--query \(option): cannot read \(path)")
        }
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { data.removeFirst(3) }
        guard let decoded = String(data: data, encoding: .utf8) else {
            throw BatchStoreError(.invalidArgument, "--query \(option): \(path) is not UTF-8 text")
        }
        text = decoded
    }
    try PersistentStore.checkQueryText(text)
    return text
}

/// Refuses `--query` where it does not run yet: on a PostgreSQL URL, and over several files.
func refuseQuery(on databases: [String]) throws {
    if databases.contains(where: isPostgresURL) {
        throw BatchStoreError(.invalidArgument, "--query reads SQLite files; on a PostgreSQL URL it is not built yet")
    }
    if databases.count > 1 { throw BatchStoreError(.invalidArgument, "--query reads one SQLite file; name one") }
}

/// Options shared by `update` and `delete`.
struct EditOptions: ParsableArguments {
    enum ResultKind: String, ExpressibleByArgument, CaseIterable { case status, count, ids }

    @OptionGroup var source: TableOptions

    @Flag(help: "Change every row (required when there is no --where).")
    var all = false

    @Option(help: "What to print: status, count or ids (object ID URIs, one per line).")
    var result: ResultKind = .count

    @Flag(help: "Print how many rows would change (an update also checks every constraint), and change nothing.")
    var dryRun = false

    func validate() throws {
        guard source.table != nil else { throw ValidationError("name the table with --table") }
        let predicate = source.predicate
        if predicate == nil && !all { throw ValidationError("say which rows with --where, or --all for every row") }
        if predicate != nil && all { throw ValidationError("--where and --all do not go together") }
    }

    var resultType: BatchResultType {
        switch result {
        case .status: return .statusOnly
        case .count: return .count
        case .ids: return .changes   // streamed from SQLite when printed: no ID array
        }
    }

    /// Opens the file (or files) and the entity, then either counts (dry run) or executes, and
    /// reports. With several files the request runs in every store (all or nothing).
    func perform(verb: String, assigned: [String] = [], dryRunCount: (any FetchingContext, Entity) throws -> Int,
                 execute: (any FetchingContext, Entity) throws -> BatchResult,
                 executeStreamingIDs: (any ChangedIDStreamingContext, Entity, (ObjectID) throws -> Void) throws -> Int) throws {
        let (context, entity, stores) = try source.open(.init(walAtFirstWrite: true))
        if dryRun {
            // Every refusal the real run would make comes first (the count runs them), then what it would change.
            let n = try dryRunCount(context, entity)
            switch result {
            case .ids:
                // The IDs the edit would change, as the real run prints them (an update's are the rows it matches).
                let rows = try context.fetchBatched(FetchRequest(entityName: entity.name, predicate: try source.parsedPredicate()), residentBatches: 1, firstBatch: nil, progress: nil)
                for position in 0..<rows.count { if let id = try rows.objectID(at: position) { print(id.uriRepresentation) } }
            case .status: print("ok")
            case .count: print(n)
            }
            // What the real run would change beyond these rows (foreign-key actions, triggers),
            // as the browser's question says it.
            if n > 0, let refusal = context.undoRefusal(entity, rows: 0, deleting: verb == "delete", assigning: assigned),
               let beyond = UndoRefusal.beyondRows(refusal) {
                printError("note: beyond these rows, \(beyond)")
            }
            printError("would \(verb) \(counted(n, "row"))\(source.databases.count > 1 ? " in \(counted(stores, "store"))" : "") (dry run: nothing was written)")
            return
        }
        let start = Date()
        let ticker = Ticker(verb == "update" ? "updating" : "deleting")
        defer { ticker.stop() }
        if self.result == .ids, let streaming = context as? any ChangedIDStreamingContext {
            // Where the engine can (PostgreSQL), the changed keys wait on its side until the
            // transaction has committed, then stream here: no ID array, and no ID printed for a
            // rolled-back edit.
            let n = try executeStreamingIDs(streaming, entity) { print($0.uriRepresentation) }
            printError("\(verb)d \(counted(n, "row")) in \(String(format: "%.2f", Date().timeIntervalSince(start))) s")
            return
        }
        let result = try execute(context, entity)
        try report(verb + "d", result, seconds: Date().timeIntervalSince(start))
    }

    func report(_ verb: String, _ result: BatchResult, seconds: Double) throws {
        switch self.result {
        case .status: print(result.succeeded ? "ok" : "failed")
        case .count: print(result.count ?? 0)
        case .ids:
            for stored in result.changes?.stored ?? [] { try stored.forEachObjectID { print($0.uriRepresentation) } }
        }
        if let count = result.count {
            printError("\(verb) \(counted(count, "row")) in \(String(format: "%.2f", seconds)) s")
        } else {
            printError(String(format: "%@ in %.2f s (--result status does not count rows)", verb, seconds))
        }
    }
}

struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Batch-update the matching rows with one UPDATE in one transaction.",
        discussion: "Example: faultline update movies.sqlite --table movie --where 'genre == \"Noir\"' --set 'votes = votes + 1, rating = round(rating * 1.1, 1)'")

    @OptionGroup var options: EditOptions

    @Option(help: "Assignments: 'col = expression, …' (arithmetic, ||, now(), lowercase, uppercase, coalesce, abs, round, …).")
    var set: String

    func run() throws {
        // Parse everything the user typed before opening the file: bad text exits 2, file untouched.
        let assignments = try UpdateExpression.parseAssignments(set)
        let predicate = try options.source.parsedPredicate()
        func request(_ entity: Entity) -> BatchUpdateRequest {
            BatchUpdateRequest(entityName: entity.name, predicate: predicate, propertiesToUpdate: assignments, resultType: options.resultType)
        }
        try options.perform(verb: "update", assigned: assignments.map(\.0),
                            dryRunCount: { context, entity in
                                let report = try context.validate(request(entity))
                                // What it would write: a few rows old → new, and values it would lose to NULL.
                                if let preview = report.preview {
                                    if !preview.sample.isEmpty {
                                        printError("e.g. \(preview.sampleText(width: 40))\(preview.rows > preview.sample.count ? "; …" : "")")
                                    }
                                    if let nulling = preview.nullingNote { printError("note: \(nulling)") }
                                }
                                if let example = report.example {
                                    printError("\(group(report.rowsFailing)) of \(counted(report.rowsMatched, "row")) would fail, e.g. \(example.id): \(example.reason)")
                                }
                                return report.rowsMatched
                            },
                            execute: { context, entity in try context.execute(request(entity), undoable: false) },
                            executeStreamingIDs: { context, entity, body in try context.execute(request(entity), changedIDs: body) })
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Batch-delete the matching rows with one DELETE in one transaction.",
        discussion: "The file's own foreign-key actions (ON DELETE CASCADE, SET NULL, RESTRICT) apply; over PostgreSQL the server applies them, always.")

    @OptionGroup var options: EditOptions

    @Flag(help: "Apply the schema's delete rules (cascade, nullify, deny) in the same transaction; deny fails naming a row. (PostgreSQL applies its foreign keys' rules itself.)")
    var applyDeleteRules = false

    func run() throws {
        let predicate = try options.source.parsedPredicate()
        if applyDeleteRules && options.source.postgresURL != nil {
            printError("note: PostgreSQL applies its foreign keys' ON DELETE rules itself, always; --apply-delete-rules adds nothing there")
        }
        func fetch(_ entity: Entity) -> FetchRequest { FetchRequest(entityName: entity.name, predicate: predicate) }
        func request(_ entity: Entity) -> BatchDeleteRequest {
            var request = BatchDeleteRequest(fetchRequest: fetch(entity), resultType: options.resultType)
            request.appliesDeleteRules = applyDeleteRules
            return request
        }
        try options.perform(verb: "delete",
                            dryRunCount: { context, entity in try context.countDelete(request(entity)) },
                            execute: { context, entity in try context.execute(request(entity), undoable: false) },
                            executeStreamingIDs: { context, entity, body in try context.execute(request(entity), changedIDs: body) })
    }
}
