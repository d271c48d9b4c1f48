import ArgumentParser
import BatchStore
import BatchStorePostgres
import FaultlineCodecs
import Browser
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Batch-insert rows from a file in one transaction (all rows or none).",
        discussion: """
            ndjson: one JSON object per line, streamed. json: one array of objects (read whole). csv: a header \
            line of column names, then rows (RFC 4180; an empty unquoted field is NULL, "" is empty text, an \
            unquoted \\x… field is a blob), streamed. Keys are column names; missing ones take the column default; \
            an unknown one is an error. This reads the NDJSON and CSV that `export` writes (not its TSV).
            """)

    enum Conflict: String, ExpressibleByArgument, CaseIterable {
        case fail, ignore, upsert

        var policy: BatchInsertRequest.ConflictPolicy {
            switch self {
            case .fail: return .fail
            case .ignore: return .ignore
            case .upsert: return .upsert
            }
        }
    }

    @Argument(help: "The SQLite file (it must exist), or a PostgreSQL URL (postgresql://user@host/db).")
    var database: String

    @Option(help: "The table.")
    var table: String

    @Argument(help: "The file to read (- for standard input).")
    var file: String

    @Option(help: "ndjson, json or csv (default: from the file's extension, else ndjson).")
    var format: ImportFormat?

    @Option(help: "On a UNIQUE conflict: fail (nothing written), ignore the row, or upsert (update only the given columns).")
    var onConflict: Conflict = .fail

    @Flag(help: "Read and check every row, then roll back: prints how many rows would be inserted.")
    var dryRun = false

    func run() throws {
        let format = self.format ?? ImportFormat(rawValue: (file as NSString).pathExtension.lowercased()) ?? .ndjson
        let handle: FileHandle
        if file == "-" { handle = .standardInput } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                  let h = FileHandle(forReadingAtPath: file) else {
                throw BatchStoreError(.fileNotFound, "\(file): no such file")
            }
            handle = h
        }
        if PostgresStoreURL.isStoreURL(database) {
            try importIntoPostgres(handle, format: format)
            return
        }
        // WAL at the first write, as the other verbs; a dry run writes nothing, so it never switches.
        let store = try PersistentStore(path: database, options: .init(walAtFirstWrite: !dryRun))
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: table)
        let reader = try RowReader(bytes: ByteReader(handle), format: format)
        let policy = onConflict.policy
        let ticker = Ticker("importing")
        defer { ticker.stop() }
        // An upsert keeps its written keys apart (inserted, updated), so the message can say which.
        let resultType: BatchResultType = onConflict == .upsert ? .changes : .count
        let request = BatchInsertRequest(entityName: entity.name, conflictPolicy: policy, resultType: resultType) {
            if dryRun, reader.isAtEnd { throw DryRunDone() }
            ticker.set(reader.rowsRead)
            return try reader.next()
        }
        let start = Date()
        do {
            let result = try context.execute(request)
            let total = result.count ?? 0
            print(total)
            let seconds = String(format: "%.2f", Date().timeIntervalSince(start))
            if let changes = result.changes, onConflict == .upsert {
                printError("upserted \(counted(total, "row")) from \(file): \(group(changes.insertedCount)) inserted, \(group(changes.updatedCount)) updated, in \(seconds) s")
            } else {
                printError("inserted \(counted(total, "row")) from \(file) in \(seconds) s")
            }
        } catch is DryRunDone {
            print(reader.rowsRead)
            printError("would insert \(counted(reader.rowsRead, "row")) (dry run: rolled back, nothing was written)")
        }
    }
}

extension Import {
    /// The rows into a PostgreSQL table: multi-row INSERTs in one transaction
    /// (``PostgresContext/executeCounting(_:)``); a dry run sends every row and rolls back.
    func importIntoPostgres(_ handle: FileHandle, format: ImportFormat) throws {
        let context = PostgresContext(store: try PostgresStore(url: database))
        let table = try context.entity(named: self.table).name
        let reader = try RowReader(bytes: ByteReader(handle), format: format)
        let ticker = Ticker("importing")
        defer { ticker.stop() }
        let request = BatchInsertRequest(entityName: table, conflictPolicy: onConflict.policy, resultType: .count) {
            if dryRun, reader.isAtEnd { throw DryRunDone() }
            ticker.set(reader.rowsRead)
            return try reader.next()
        }
        let start = Date()
        do {
            let counts = try context.executeCounting(request)
            print(counts.total)
            let seconds = String(format: "%.2f", Date().timeIntervalSince(start))
            if onConflict == .upsert {
                printError("upserted \(counted(counts.total, "row")) from \(file): \(group(counts.inserted)) inserted, \(group(counts.updated)) updated, in \(seconds) s")
            } else {
                printError("inserted \(counted(counts.total, "row")) from \(file) in \(seconds) s")
            }
        } catch is DryRunDone {
            print(reader.rowsRead)
            printError("would insert \(counted(reader.rowsRead, "row")) (dry run: rolled back, nothing was written)")
        }
    }
}

/// Thrown from the row handler to roll a dry run back once every row was read and checked.
struct DryRunDone: Error {}

extension ImportFormat: ExpressibleByArgument {}
