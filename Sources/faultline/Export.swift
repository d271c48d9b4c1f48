import ArgumentParser
import BatchStore
import Foundation
import TerminalCore

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream a table's rows to stdout through a BatchFaultingCollection.",
        discussion: "Memory stays flat whatever the row count: rows are faulted --batch-size at a time.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case tsv, csv, ndjson }

    @OptionGroup var source: TableOptions

    @Option(help: "Sort keys: \"col [asc|desc], …\".")
    var sort: String?

    @Option(help: "Skip this many rows.")
    var offset: Int = 0

    @Option(help: "At most this many rows.")
    var limit: Int?

    @Option(help: "tsv, csv or ndjson.")
    var format: Format = .tsv

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
        if source.databases.count > 1 { return try runAcrossStores(predicate: predicate, sort: sort) }
        let store = try PersistentStore(path: source.database, options: .init(readOnly: true))
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: source.table)
        let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sort,
                                   fetchLimit: limit ?? 0, fetchOffset: offset, fetchBatchSize: batchSize)
        if limit == 0 { return try writeHeader(entity) }
        let rows = try context.fetchBatched(request, residentBatches: 2)
        let out = BufferedOutput()
        let writer = RowWriter(format: format, entity: entity)
        out.write(writer.header())
        // On a terminal, values are shown, never sent raw; into a pipe or file they are exact.
        for index in rows.indices {
            guard let object = try rows.object(at: index) else { continue } // deleted since the fetch
            out.write(try writer.line(object))
        }
        out.flush()
    }

    /// Several files: one result sorted across them, with a first column naming each row's store.
    private func runAcrossStores(predicate: FetchPredicate?, sort: [BatchStore.SortDescriptor]) throws {
        let coordinator = try PersistentStoreCoordinator(stores: source.databases.map { try PersistentStore(path: $0, options: .init(readOnly: true)) })
        let context = try CoordinatedContext(coordinator: coordinator)
        let entity = try coordinator.entities(named: source.table, in: source.storeList)[0]
        let request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sort,
                                   fetchLimit: limit ?? 0, fetchOffset: offset, fetchBatchSize: batchSize)
        let writer = RowWriter(format: format, entity: entity, withStore: true)
        let out = BufferedOutput()
        out.write(writer.header())
        if limit != 0 {
            let rows = try context.fetchBatched(request, affectedStores: source.storeList, residentBatches: 2)
            for index in rows.indices {
                guard let object = try rows.object(at: index) else { continue }
                out.write(try writer.line(object))
            }
        }
        out.flush()
    }

    private func writeHeader(_ entity: Entity) throws {
        let out = BufferedOutput()
        out.write(RowWriter(format: format, entity: entity).header())
        out.flush()
    }
}

/// Formats rows as TSV (`\N` for NULL, backslash escapes), CSV (RFC 4180, NULL as an empty
/// unquoted field) or NDJSON (one object per line; blobs as `{"$blob": base64}`).
struct RowWriter {
    let format: Export.Format
    let entity: Entity
    /// With several stores, a first column `store` says where each row comes from.
    var withStore = false

    func header() -> String {
        let names = (withStore ? ["store"] : []) + entity.attributes.map(\.name)
        switch format {
        case .tsv: return names.map(tsvEscape).joined(separator: "\t") + "\n"
        case .csv: return names.map(csvQuote).joined(separator: ",") + "\r\n"
        case .ndjson: return ""
        }
    }

    func line(_ object: ManagedObject) throws -> String {
        let count = entity.attributes.count
        let store: SQLValue? = withStore ? .text(object.objectID.entity.storeName) : nil
        switch format {
        case .tsv:
            return try ((store.map { [tsvField($0)] } ?? []) + (0..<count).map { tsvField(try object.value(at: $0)) }).joined(separator: "\t") + "\n"
        case .csv:
            return try ((store.map { [csvField($0)] } ?? []) + (0..<count).map { csvField(try object.value(at: $0)) }).joined(separator: ",") + "\r\n"
        case .ndjson:
            var parts: [String] = store.map { [jsonString("$store") + ":" + jsonValue($0)] } ?? []
            for (i, a) in entity.attributes.enumerated() {
                parts.append(jsonString(a.name) + ":" + jsonValue(try object.value(at: i)))
            }
            return "{" + parts.joined(separator: ",") + "}\n"
        }
    }

    func tsvEscape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    func tsvField(_ v: SQLValue) -> String {
        switch v {
        case .null: return "\\N"
        case .blob(let d): return hex(d)
        case .real(let d): return "\(d)"
        default: return tsvEscape(v.description)
        }
    }

    /// Blobs in TSV and CSV: `\x` and lowercase hex.
    func hex(_ d: Data) -> String { "\\x" + d.map { String(format: "%02x", $0) }.joined() }

    func csvQuote(_ s: String) -> String {
        // Text starting with \x is quoted so that it never reads back as a blob.
        if s.isEmpty || s.hasPrefix("\\x") || s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    func csvField(_ v: SQLValue) -> String {
        switch v {
        case .null: return ""
        case .blob(let d): return hex(d)
        case .real(let d): return "\(d)"
        default: return csvQuote(v.description)
        }
    }

    func jsonValue(_ v: SQLValue) -> String {
        switch v {
        case .null: return "null"
        case .integer(let i): return String(i)
        case .real(let d): return d.isFinite ? "\(d)" : jsonString("\(d)")
        case .text(let s): return jsonString(s)
        case .blob(let d): return "{\"$blob\":\"\(d.base64EncodedString())\"}"
        }
    }

    func jsonString(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if c.value < 0x20 || (c.value >= 0x7F && c.value < 0xA0) || c.value == 0x2028 || c.value == 0x2029 {
                    out += String(format: "\\u%04x", c.value)
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out + "\""
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
