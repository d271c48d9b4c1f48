import ArgumentParser
import BatchStore
import FaultlineCodecs
import Foundation
import TerminalCore

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream a table's rows to stdout as TSV, CSV, NDJSON or a JSON array, filtered and sorted.",
        discussion: "SQLite: one forward statement (the library's streamRows): memory stays flat whatever the row count, and the rows are one consistent read of the file(s). PostgreSQL URL: the same, one statement streamed row by row from one snapshot: memory stays flat.")

    @OptionGroup var source: TableOptions

    @Option(help: "Instead of a table, the result of one read-only SQL query (SELECT, WITH … SELECT or VALUES), or @FILE to read it from a file. One SQLite file.")
    var query: String?

    @Option(help: "Sort keys: \"col [asc|desc], …\".")
    var sort: String?

    @Option(help: "Skip this many rows.")
    var offset: Int = 0

    @Option(help: "At most this many rows.")
    var limit: Int?

    @Option(help: "tsv, csv, ndjson (an object a line) or json (one array of those objects, an object a line).")
    var format: ExportFormat = .tsv

    @Option(help: ArgumentHelp("Ignored: export reads every row once, as one statement, so it needs no batches. Accepted so that scripts that pass it still run.", visibility: .hidden))
    var batchSize: Int = 500

    func validate() throws {
        if source.table != nil && query != nil { throw ValidationError("give --table or --query, not both") }
        if source.table == nil && query == nil { throw ValidationError("name the table with --table, or give --query") }
        guard offset >= 0 else { throw ValidationError("--offset must not be negative") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() throws {
        // Parse user text before touching the file, so bad usage exits 2 without opening anything.
        let predicate = try source.parsedPredicate()
        let sort = try self.sort.map { try SortDescriptor.parse($0) } ?? []
        let query = try self.query.map(readQueryOption)
        let (context, entity, _) = try source.open(.init(readOnly: true), query: query)
        let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sort,
                                   fetchLimit: limit ?? 0, fetchOffset: offset)
        // Several files: a first column names each row's store.
        let withStore = source.databases.count > 1
        let storeNames = context.storeNames
        var writer = RowWriter(format: format, columns: entity.attributes.map(\.name), withStore: withStore)
        let out = BufferedOutput()
        try out.write(writer.header())
        if limit != 0 {
            // One forward pass, one statement: every row is read once, so no ID table is needed.
            try context.streamRows(request, inPlace: { row in
                let start = out.bytes.count
                writer.append(row, store: withStore ? storeNames[row.storeIndex] : nil, to: &out.bytes)
                try out.didAppend(from: start)
            }, values: { values in
                // A server's rows come as values, one statement streamed from one snapshot.
                let start = out.bytes.count
                writer.append(values, to: &out.bytes)
                try out.didAppend(from: start)
            })
        }
        try out.write(writer.footer())
        try out.flush()
    }
}

/// Collects output bytes and writes them to stdout in 64 KiB chunks.
final class BufferedOutput {
    var bytes: [UInt8] = []

    /// Set when stdout is a terminal: control characters are escaped before they are written.
    let toTerminal = isatty(1) == 1

    init() { bytes.reserveCapacity(1 << 17) }

    func write(_ s: String) throws {
        let start = bytes.count
        bytes += s.utf8
        try didAppend(from: start)
    }

    /// Call after appending to ``bytes``: on a terminal, what was appended from `start` on is
    /// escaped (values are shown, never sent raw; into a pipe or file they are exact); past 64 KiB,
    /// the buffer is written out.
    @inline(__always)
    func didAppend(from start: Int) throws {
        if toTerminal {
            let appended = String(decoding: bytes[start...], as: UTF8.self)
            bytes.removeSubrange(start...)
            bytes += TerminalText.escapingControlCharactersKeepingLines(appended).utf8
        }
        if bytes.count >= 65_536 { try flush() }
    }

    func flush() throws {
        var written = 0
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while written < buffer.count {
                let n = Foundation.write(1, base + written, buffer.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BatchStoreError(.sqlite(-1), "cannot write the output: \(String(cString: strerror(errno)))")
                }
                written += n
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

extension ExportFormat: ExpressibleByArgument {}
