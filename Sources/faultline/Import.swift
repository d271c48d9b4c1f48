import ArgumentParser
import BatchStore
import FaultlineCodecs
import Browser
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Batch-insert rows from a file in one transaction (all rows or none).",
        discussion: """
            ndjson: one JSON object per line, streamed. json: one array of objects (read whole). csv: a header \
            line of column names, then rows (RFC 4180; an empty unquoted field is NULL, "" is empty text, an \
            unquoted \\x field of an even number of lowercase hex digits is a blob), streamed; the header is checked before any row. Keys are column names; missing ones take the column default; \
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

    @Argument(help: "The SQLite file (it must exist), or a PostgreSQL URL (postgresql://user@host/db).", completion: .file())
    var database: String

    @Option(help: "The table.")
    var table: String

    @Argument(help: "The file to read (- for standard input).", completion: .file())
    var file: String

    @Option(help: "ndjson, json or csv (default: from the file's extension, else ndjson).")
    var format: ImportFormat?

    @Option(help: "On a UNIQUE conflict: fail (nothing written), ignore the row, or upsert (update only the given columns).")
    var onConflict: Conflict = .fail

    @Flag(help: "Read and check every row, then roll back: prints how many rows were read and checked (with --on-conflict ignore or upsert, how many of them a real run inserts, skips or updates is known only then).")
    var dryRun = false

    enum Switch: String, ExpressibleByArgument, CaseIterable { case on, off }

    @Option(help: "on: a row whose foreign key names no parent row fails the import, naming the row, column and value. off: rows go in as they are, dangling keys included (as many files hold them, and as export wrote them). SQLite only.")
    var foreignKeys: Switch = .on

    func run() throws {
        let fileExtension = (file as NSString).pathExtension.lowercased()
        if self.format == nil, ["tsv", "tab"].contains(fileExtension) {
            throw BatchStoreError(.invalidArgument, "\(file): TSV cannot be imported (import reads csv, ndjson and json); export the table as csv or ndjson")
        }
        let format = self.format ?? ImportFormat(rawValue: fileExtension == "jsonl" ? "ndjson" : fileExtension) ?? .ndjson
        let handle: FileHandle
        if file == "-" { handle = .standardInput } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                  let h = FileHandle(forReadingAtPath: file) else {
                throw BatchStoreError(.fileNotFound, "\(file): no such file")
            }
            handle = h
        }
        let context: any InsertingContext
        if isPostgresURL(database) {
            if foreignKeys == .off {
                throw BatchStoreError(.invalidArgument, "--foreign-keys off is for SQLite files: PostgreSQL checks every foreign key (nothing was written)")
            }
            // Multi-row INSERTs (or COPY) in one transaction; a dry run sends every row and rolls back.
            context = try serverContext(database)
        } else {
            // WAL at the first write, as the other verbs; a dry run writes nothing, so it never switches.
            context = try ManagedObjectContext(store: try PersistentStore(path: database, options: .init(walAtFirstWrite: !dryRun)))
        }
        try insert(handle, format: format, entity: try context.entity(named: table)) { try context.executeCounting($0) }
    }

    /// Reads the file's rows into a batch insert that `execute` runs (answering rows written, and
    /// of them inserted and updated, as the engine counts them), and reports; a dry run's handler ends the rows with ``DryRunDone`` once all were read.
    private func insert(_ handle: FileHandle, format: ImportFormat, entity: Entity,
                        execute: (BatchInsertRequest) throws -> InsertCounts) throws {
        let entityName = entity.name
        let reader = try RowReader(bytes: ByteReader(handle), format: format)
        if format == .csv { try checkHeader(reader.columns, of: entity) }
        let ticker = Ticker("importing")
        defer { ticker.stop() }
        var request: BatchInsertRequest
        if format == .csv {
            // CSV rows by position under the header: names resolved once, not per row.
            request = BatchInsertRequest(entityName: entityName, columns: reader.columns, conflictPolicy: onConflict.policy, resultType: .count) {
                if dryRun, reader.isAtEnd { throw DryRunDone() }
                ticker.set(reader.rowsRead)
                return try reader.nextValues()
            }
        } else {
            request = BatchInsertRequest(entityName: entityName, conflictPolicy: onConflict.policy, resultType: .count) {
                if dryRun, reader.isAtEnd { throw DryRunDone() }
                ticker.set(reader.rowsRead)
                return try reader.next()
            }
        }
        request.checksForeignKeys = foreignKeys == .on
        let start = Date()
        do {
            let counts = try execute(request)
            let (total, inserted, updated) = (counts.total, counts.inserted, counts.updated)
            print(total)
            let seconds = String(format: "%.2f", Date().timeIntervalSince(start))
            if onConflict == .upsert {
                printError("upserted \(counted(total, "row")) from \(file): \(group(inserted)) inserted, \(group(updated)) updated, in \(seconds) s")
            } else {
                printError("inserted \(counted(total, "row")) from \(file) in \(seconds) s")
            }
        } catch is DryRunDone {
            print(reader.rowsRead)
            if onConflict == .fail {
                printError("would insert \(counted(reader.rowsRead, "row")) (dry run: rolled back, nothing was written)")
            } else {
                // Conflicting rows are skipped or updated, not inserted: the dry run rolled back
                // before it could tell the split, so it says only what it read and checked.
                printError("read and checked \(counted(reader.rowsRead, "row")); with --on-conflict \(onConflict.rawValue) some may be \(onConflict == .ignore ? "skipped" : "updated") rather than inserted (dry run: rolled back, nothing was written)")
            }
        }
    }
}

extension Import {
    /// A CSV header's names, checked before any row is read (a file of no rows, or one whose line
    /// ends the reader does not know, would otherwise say nothing): each names a column that can
    /// be set, each column once.
    /// - Throws: `BatchStoreError` naming the file and the name at fault.
    func checkHeader(_ names: [String], of entity: Entity) throws {
        var seen: [Int: String] = [:]
        for name in names {
            guard let index = entity.indexOfAttribute(named: name) else {
                throw BatchStoreError(.noSuchAttribute, "\(file): the header names \(name.debugDescription), which is no column of \(entity.name); columns: \(entity.attributes.map(\.name).joined(separator: ", "))")
            }
            let column = entity.attributes[index].name
            if let other = seen[index] {
                throw BatchStoreError(.invalidArgument, "\(file): the header names the column \(column) twice (\(other.debugDescription) and \(name.debugDescription); names are case-insensitive)")
            }
            if entity.attributes[index].isGenerated {
                throw BatchStoreError(.readOnly, "\(file): the header names \(entity.name).\(column), a generated column, which cannot be set")
            }
            seen[index] = name
        }
    }
}

/// Thrown from the row handler to roll a dry run back once every row was read and checked.
struct DryRunDone: Error {}

extension ImportFormat: ExpressibleByArgument {}
