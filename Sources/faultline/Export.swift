import ArgumentParser
import BatchStore
import FaultlineCodecs
import Foundation
import TerminalCore

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream a table's rows to stdout through a BatchFaultingCollection.",
        discussion: "Memory stays flat whatever the row count: rows are faulted --batch-size at a time.")

    @OptionGroup var source: TableOptions

    @Option(help: "Sort keys: \"col [asc|desc], …\".")
    var sort: String?

    @Option(help: "Skip this many rows.")
    var offset: Int = 0

    @Option(help: "At most this many rows.")
    var limit: Int?

    @Option(help: "tsv, csv or ndjson.")
    var format: ExportFormat = .tsv

    @Option(help: "Rows faulted per batch.")
    var batchSize: Int = 500

    func validate() throws {
        guard offset >= 0 else { throw ValidationError("--offset must not be negative") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() throws {
        // Parse user text before touching the file, so bad usage exits 2 without opening anything.
        let predicate = try source.parsedPredicate()
        let sort = try self.sort.map { try SortDescriptor.parse($0) } ?? []
        let (context, entity, _) = try source.open(.init(readOnly: true))
        let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sort,
                                   fetchLimit: limit ?? 0, fetchOffset: offset, fetchBatchSize: batchSize)
        // Several files: a first column names each row's store.
        let withStore = source.databases.count > 1
        let writer = RowWriter(format: format, columns: entity.attributes.map(\.name), withStore: withStore)
        let out = BufferedOutput()
        out.write(writer.header())
        if limit != 0 {
            let rows = try context.fetchBatched(request, residentBatches: 2, firstBatch: nil, progress: nil)
            // On a terminal, values are shown, never sent raw; into a pipe or file they are exact.
            for index in rows.indices {
                guard let object = try rows.object(at: index) else { continue } // deleted since the fetch
                out.write(writer.line(try object.values(entity), store: withStore ? object.objectID.entity.storeName : nil))
            }
        }
        out.flush()
    }
}

/// Collects output and writes it to stdout in 64 KiB chunks.
final class BufferedOutput {
    private var buffer = Data()

    /// Set when stdout is a terminal: control characters are escaped before they are written.
    let toTerminal = isatty(1) == 1

    func write(_ s: String) {
        buffer.append(contentsOf: (toTerminal ? Self.forTerminal(s) : s).utf8)
        if buffer.count >= 65_536 { flush() }
    }

    /// Escapes control characters in each line, keeping tabs and the line ends (LF or CRLF) themselves.
    static func forTerminal(_ s: String) -> String {
        s.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let crlf = line.hasSuffix("\r")
            let body = (crlf ? line.dropLast() : line).split(separator: "\t", omittingEmptySubsequences: false)
                .map { TerminalText.escapingControlCharacters(String($0)) }.joined(separator: "\t")
            return body + (crlf ? "\r" : "")
        }.joined(separator: "\n")
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

extension ExportFormat: ExpressibleByArgument {}

extension ManagedObject {
    /// Every column's value, in the entity's column order.
    func values(_ entity: Entity) throws -> [SQLValue] {
        try (0..<entity.attributes.count).map { try value(at: $0) }
    }
}
