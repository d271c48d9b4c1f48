import ArgumentParser
import BatchStore
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Batch-insert rows from a file in one transaction (all rows or none).",
        discussion: """
            ndjson: one JSON object per line, streamed. json: one array of objects (read whole). csv: a header \
            line of column names, then rows (RFC 4180; an empty unquoted field is NULL, "" is empty text, an \
            unquoted \\x… field is a blob), streamed. Keys are column names; missing ones take the column default; \
            an unknown one is an error. This reads what `export` writes.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case ndjson, json, csv }
    enum Conflict: String, ExpressibleByArgument, CaseIterable { case fail, ignore, upsert }

    @Argument(help: "The SQLite file (it must exist).")
    var database: String

    @Option(help: "The table.")
    var table: String

    @Argument(help: "The file to read (- for standard input).")
    var file: String

    @Option(help: "ndjson, json or csv (default: from the file's extension, else ndjson).")
    var format: Format?

    @Option(help: "On a UNIQUE conflict: fail (nothing written), ignore the row, or upsert (update only the given columns).")
    var onConflict: Conflict = .fail

    @Flag(help: "Read and check every row, then roll back: prints how many rows would be inserted.")
    var dryRun = false

    func run() throws {
        let format = self.format ?? Format(rawValue: (file as NSString).pathExtension.lowercased()) ?? .ndjson
        let handle: FileHandle
        if file == "-" { handle = .standardInput } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                  let h = FileHandle(forReadingAtPath: file) else {
                throw BatchStoreError(.fileNotFound, "\(file): no such file")
            }
            handle = h
        }
        let store = try PersistentStore(path: database, options: .init(useWAL: true))
        let context = try ManagedObjectContext(store: store)
        let entity = try store.entity(named: table)
        let reader = try RowReader(handle: handle, format: format)
        let policy: BatchInsertRequest.ConflictPolicy = [.fail: .fail, .ignore: .ignore, .upsert: .upsert][onConflict]!
        let ticker = Ticker("importing")
        defer { ticker.stop() }
        let request = BatchInsertRequest(entityName: entity.name, conflictPolicy: policy, resultType: .count) {
            if dryRun, reader.isAtEnd { throw DryRunDone() }
            ticker.set(reader.rowsRead)
            return try reader.next()
        }
        let start = Date()
        do {
            let result = try context.execute(request)
            print(result.count ?? 0)
            printError(String(format: "inserted %d row%@ from %@ in %.2f s", result.count ?? 0, result.count == 1 ? "" : "s", file, Date().timeIntervalSince(start)))
        } catch is DryRunDone {
            print(reader.rowsRead)
            printError("would insert \(reader.rowsRead) row\(reader.rowsRead == 1 ? "" : "s") (dry run: rolled back, nothing was written)")
        }
    }
}

/// Thrown from the row handler to roll a dry run back once every row was read and checked.
struct DryRunDone: Error {}

/// Reads rows from NDJSON, JSON or CSV, streaming where the format allows.
final class RowReader {
    private let bytes: ByteReader
    private let format: Import.Format
    private var header: [String] = []
    private var jsonRows: [[String: Any]] = []
    private(set) var rowsRead = 0
    private var line = 0

    init(handle: FileHandle, format: Import.Format) throws {
        self.bytes = ByteReader(handle)
        self.format = format
        switch format {
        case .csv:
            guard let h = try readCSVRecord() else { throw BatchStoreError(.invalidArgument, "the CSV file is empty: it needs a header line of column names") }
            header = h.map { $0 ?? "" }
        case .json:
            let data = bytes.readAll()
            guard let array = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
                throw BatchStoreError(.invalidArgument, "the JSON file must hold one array of objects")
            }
            jsonRows = try array.enumerated().map { i, item in
                guard let object = item as? [String: Any] else { throw BatchStoreError(.invalidArgument, "JSON item \(i + 1) is not an object") }
                return object
            }
            jsonRows.reverse()
        case .ndjson: break
        }
    }

    /// True once no row is left (checked before the handler is called again).
    var isAtEnd: Bool {
        switch format {
        case .json: return jsonRows.isEmpty
        default: return bytes.isAtEnd
        }
    }

    func next() throws -> [String: SQLValue]? {
        switch format {
        case .json:
            guard let object = jsonRows.popLast() else { return nil }
            rowsRead += 1
            return try Self.convert(object, row: rowsRead)
        case .ndjson:
            while let lineBytes = bytes.readLine() {
                line += 1
                if lineBytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
                guard let object = try? JSONSerialization.jsonObject(with: Data(lineBytes)) as? [String: Any] else {
                    throw BatchStoreError(.invalidArgument, "line \(line): not a JSON object")
                }
                rowsRead += 1
                return try Self.convert(object, row: rowsRead)
            }
            return nil
        case .csv:
            guard let record = try readCSVRecord() else { return nil }
            rowsRead += 1
            guard record.count == header.count else {
                throw BatchStoreError(.invalidArgument, "CSV row \(rowsRead): \(record.count) fields, but the header has \(header.count)")
            }
            var row: [String: SQLValue] = [:]
            for (name, field) in zip(header, record) { row[name] = Self.csvValue(field) }
            return row
        }
    }

    static func csvValue(_ field: String?) -> SQLValue {
        guard let field else { return .null }
        if field.hasPrefix("\u{0}blob:") { // marker set by readCSVRecord for unquoted \x fields
            let hex = Array(field.utf8.dropFirst(6))
            var data = Data()
            var i = 0
            while i + 1 < hex.count, let b = UInt8(String(decoding: hex[i...i + 1], as: UTF8.self), radix: 16) { data.append(b); i += 2 }
            return .blob(data)
        }
        return .text(field)
    }

    static func convert(_ object: [String: Any], row: Int) throws -> [String: SQLValue] {
        var out: [String: SQLValue] = [:]
        for (key, value) in object {
            switch value {
            case is NSNull: out[key] = .null
            case let s as String: out[key] = .text(s)
            case let n as NSNumber:
                if let i = n as? Int64 { out[key] = .integer(i) } else { out[key] = .real(n.doubleValue) }
            case let d as [String: Any] where d.count == 1 && d["$blob"] is String:
                guard let data = Data(base64Encoded: d["$blob"] as! String) else {
                    throw BatchStoreError(.invalidArgument, "row \(row): \(key) has a $blob that is not base64")
                }
                out[key] = .blob(data)
            default:
                let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
                out[key] = .text(String(decoding: data, as: UTF8.self))
            }
        }
        return out
    }

    /// One CSV record: fields as text, nil for an empty unquoted field, a marker for unquoted `\x…`.
    private func readCSVRecord() throws -> [String?]? {
        guard !bytes.isAtEnd else { return nil }
        var fields: [String?] = []
        var field: [UInt8] = []
        var quoted = false, inQuotes = false
        func finish() {
            if !quoted && field.isEmpty { fields.append(nil) }
            else if !quoted && field.count >= 2 && field[0] == 92 && field[1] == 120 && field.dropFirst(2).allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) {
                fields.append("\u{0}blob:" + String(decoding: field.dropFirst(2), as: UTF8.self))
            } else { fields.append(String(decoding: field, as: UTF8.self)) }
            field.removeAll(keepingCapacity: true)
            quoted = false
        }
        while let b = bytes.next() {
            if inQuotes {
                if b == 34 {
                    if bytes.peek() == 34 { _ = bytes.next(); field.append(34) } else { inQuotes = false }
                } else { field.append(b) }
                continue
            }
            switch b {
            case 34 where field.isEmpty && !quoted: inQuotes = true; quoted = true
            case 44: finish()
            case 13 where bytes.peek() == 10: break
            case 10: finish(); return fields
            default: field.append(b)
            }
        }
        if inQuotes { throw BatchStoreError(.invalidArgument, "CSV: a quoted field is not closed at the end of the file") }
        finish()
        return fields
    }
}

/// Reads a file in 64 KiB chunks, byte by byte or line by line.
final class ByteReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var index = 0
    private var eof = false

    init(_ handle: FileHandle) { self.handle = handle }

    private func fill() -> Bool {
        if index < buffer.count { return true }
        if eof { return false }
        let data = handle.readData(ofLength: 65_536)
        if data.isEmpty { eof = true; return false }
        buffer = [UInt8](data)
        index = 0
        return true
    }

    var isAtEnd: Bool { !fill() }

    func next() -> UInt8? {
        guard fill() else { return nil }
        defer { index += 1 }
        return buffer[index]
    }

    func peek() -> UInt8? { fill() ? buffer[index] : nil }

    func readLine() -> [UInt8]? {
        guard fill() else { return nil }
        var line: [UInt8] = []
        while fill() {
            let b = buffer[index]
            index += 1
            if b == 10 { return line }
            line.append(b)
        }
        return line
    }

    func readAll() -> Data {
        var data = Data(fill() ? buffer[index...] : [])
        index = buffer.count
        data.append(handle.readDataToEndOfFile())
        eof = true
        return data
    }
}
