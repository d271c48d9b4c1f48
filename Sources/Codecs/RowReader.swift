import BatchStore
import Foundation

/// The formats `faultline import` reads.
public enum ImportFormat: String, CaseIterable, Sendable {
    /// One JSON object per line, streamed; blank lines are skipped.
    case ndjson
    /// One JSON array of objects, read whole.
    case json
    /// RFC 4180 with a header line of column names, streamed: an empty unquoted field is NULL,
    /// `""` is empty text, an unquoted `\x…` field of an even number of lowercase hex digits is
    /// a blob (anything else is text as written).
    case csv
}

/// Reads rows (column name -> value) from NDJSON, JSON or CSV, streaming where the format allows.
///
/// A UTF-8 byte order mark at the start of the input is skipped. Invalid UTF-8 in CSV text is
/// replaced (U+FFFD); an NDJSON line that is not a JSON object is an error naming the line.
/// JSON values map to SQLite's storage classes: null, integers that fit Int64 (else reals), reals
/// (a number with a fraction or exponent, `-0.0` and `2.0` included),
/// strings, `{"$blob": base64}` as a blob, and any other array or object as its JSON text.
public final class RowReader {
    private let bytes: ByteReader
    private let format: ImportFormat
    private var header: [String] = []
    private var jsonRows: [[String: Any]] = []
    /// For each of `jsonRows`, the source text of its numbers (see ``numberTexts(_:objectDepth:)``).
    private var jsonNumbers: [[String: String]] = []
    /// Rows returned so far.
    public private(set) var rowsRead = 0
    private var line = 0

    /// Reads the CSV header line or the whole JSON array at once.
    /// - Throws: `BatchStoreError(.invalidArgument)` for an empty CSV file or JSON that is not an
    ///   array of objects.
    public init(bytes: ByteReader, format: ImportFormat) throws {
        self.bytes = bytes
        self.format = format
        _ = bytes.skip(prefix: [0xEF, 0xBB, 0xBF])
        switch format {
        case .csv:
            // The header's fields are names: text as written, `\x…` included; an empty one is "".
            guard let h = try readCSVRecord(names: true) else { throw BatchStoreError(.invalidArgument, "the CSV file is empty: it needs a header line of column names") }
            header = h.map { field in
                if case .text(let name) = field { return name }
                return ""
            }
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
            jsonNumbers = Self.numberTexts([UInt8](data), objectDepth: 1).reversed()
        case .ndjson: break
        }
    }

    /// True once no row is left (checked before asking for the next one).
    public var isAtEnd: Bool {
        switch format {
        case .json: return jsonRows.isEmpty
        default: return bytes.isAtEnd
        }
    }

    /// The next row, or nil at the end.
    /// - Throws: `BatchStoreError(.invalidArgument)` naming the line or row at fault.
    public func next() throws -> [String: SQLValue]? {
        switch format {
        case .json:
            guard let object = jsonRows.popLast() else { return nil }
            rowsRead += 1
            return try Self.convert(object, row: rowsRead, numbers: jsonNumbers.popLast() ?? [:])
        case .ndjson:
            while let lineBytes = bytes.readLine() {
                line += 1
                if lineBytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
                if let row = FlatJSON.object(lineBytes) {
                    rowsRead += 1
                    return row
                }
                guard let object = try? JSONSerialization.jsonObject(with: Data(lineBytes)) as? [String: Any] else {
                    throw BatchStoreError(.invalidArgument, "line \(line): not a JSON object")
                }
                rowsRead += 1
                return try Self.convert(object, row: rowsRead, numbers: Self.numberTexts(lineBytes, objectDepth: 0).first ?? [:])
            }
            return nil
        case .csv:
            guard let values = try nextValues() else { return nil }
            var row = [String: SQLValue](minimumCapacity: header.count)
            for (name, value) in zip(header, values) { row[name] = value }
            return row
        }
    }

    /// The CSV header's column names, in order (empty for NDJSON and JSON, whose rows name
    /// their keys).
    public var columns: [String] { header }

    /// The next CSV record's values, in the order of ``columns``, or nil at the end: rows by
    /// position, so that nothing is looked up by name per row.
    /// - Throws: `BatchStoreError(.invalidArgument)` for a record whose field count differs from
    ///   the header's, or a quoted field left open.
    /// - Precondition: the format is CSV.
    public func nextValues() throws -> [SQLValue]? {
        precondition(format == .csv, "rows by position are read from CSV")
        guard let record = try readCSVRecord() else { return nil }
        rowsRead += 1
        guard record.count == header.count else {
            throw BatchStoreError(.invalidArgument, "CSV row \(rowsRead): \(record.count) field\(record.count == 1 ? "" : "s"), but the header has \(header.count)")
        }
        return record
    }

    /// One JSON object as a row.
    /// `numbers` holds the source text of the object's numbers by key: a number with a fraction
    /// or an exponent is a real, digits alone an integer when they fit Int64 (else a real).
    static func convert(_ object: [String: Any], row: Int, numbers: [String: String] = [:]) throws -> [String: SQLValue] {
        var out: [String: SQLValue] = [:]
        for (key, value) in object {
            switch value {
            case is NSNull: out[key] = .null
            case let s as String: out[key] = .text(s)
            case is NSNumber where numbers[key] != nil:
                let text = numbers[key] ?? ""
                if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let i = Int64(text) {
                    out[key] = .integer(i)
                } else if let d = Double(text) {
                    out[key] = .real(d)
                } else {
                    throw BatchStoreError(.invalidArgument, "row \(row): \(key) holds a number that is not JSON")
                }
            case let n as NSNumber:
                // A number written with a fraction or exponent (`2.0`, `-0.0`) stays a real. Foundation
                // types some long negative integers as doubles too, but keeps their digits.
                if ["d", "f"].contains(String(cString: n.objCType)) {
                    let digits = n.stringValue
                    if !digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" || $0.isLetter }), let i = Int64(digits) {
                        out[key] = .integer(i)
                    } else {
                        // The digits, not doubleValue: Foundation's doubleValue can be off by an
                        // ulp or two (0.30000000000000004 came back as 0.3000000000000001).
                        out[key] = .real(Double(digits) ?? n.doubleValue)
                    }
                } else if let i = n as? Int64 {
                    out[key] = .integer(i)
                } else {
                    out[key] = .real(n.doubleValue)
                }
            case let d as [String: Any] where d.count == 1 && d["$blob"] is String:
                guard let base64 = d["$blob"] as? String, let data = Data(base64Encoded: base64) else {
                    throw BatchStoreError(.invalidArgument, "row \(row): \(key) has a $blob that is not base64")
                }
                out[key] = .blob(data)
            default:
                guard JSONSerialization.isValidJSONObject(value) else {
                    throw BatchStoreError(.invalidArgument, "row \(row): \(key) holds a value that is not JSON")
                }
                let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
                out[key] = .text(String(decoding: data, as: UTF8.self))
            }
        }
        return out
    }

    /// The source text of every number that is a member of an object opening at `objectDepth`
    /// (0: the line is one object; 1: objects inside a top-level array), one dictionary per such
    /// object, in order. Foundation's JSON reader gives numbers as NSNumber, which loses whether
    /// `1000000000000000.0` had a fraction; the text keeps it.
    /// - Complexity: O(bytes), one pass.
    static func numberTexts(_ bytes: [UInt8], objectDepth: Int) -> [[String: String]] {
        var objects: [[String: String]] = []
        var depth = 0
        var i = 0
        var key: String?
        // Inside an object at objectDepth: true where a key may start (after { or ,).
        var expectingKey = false
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 34:   // a string: a key of an object we track, or a value to skip
                let start = i
                i += 1
                while i < bytes.count && bytes[i] != 34 { i += bytes[i] == 92 ? 2 : 1 }
                if depth == objectDepth + 1 && expectingKey {
                    let raw = Data(bytes[start...min(i, bytes.count - 1)])
                    key = (try? JSONSerialization.jsonObject(with: raw, options: .fragmentsAllowed)) as? String
                    expectingKey = false
                }
                i += 1
                continue
            case 123, 91:   // { [
                depth += 1
                if b == 123 && depth == objectDepth + 1 { objects.append([:]); expectingKey = true; key = nil }
            case 125, 93:   // } ]
                depth -= 1
            case 44 where depth == objectDepth + 1:   // ,
                expectingKey = true
                key = nil
            case _ where depth == objectDepth + 1 && (b == 45 || (48...57).contains(b)):   // - and digits: a number value
                let start = i
                while i < bytes.count, bytes[i] == 43 || bytes[i] == 45 || bytes[i] == 46 || bytes[i] == 69 || bytes[i] == 101 || (48...57).contains(bytes[i]) { i += 1 }
                if let key, !objects.isEmpty { objects[objects.count - 1][key] = String(decoding: bytes[start..<i], as: UTF8.self) }
                key = nil
                continue
            default: break
            }
            i += 1
        }
        return objects
    }

    /// One CSV record, or nil at the end of the input. A field is NULL when empty and unquoted,
    /// a blob when unquoted `\x` + an even number of lowercase hex digits, else text as written;
    /// with `names`, every non-empty field is text as written (a header).
    /// - Complexity: O(bytes): each chunk is scanned in place (``ByteReader/consumeChunk(_:)``).
    private func readCSVRecord(names: Bool = false) throws -> [SQLValue]? {
        guard !bytes.isAtEnd else { return nil }
        var scanner = CSVRecordScanner(names: names, capacity: header.count)
        while !scanner.ended, bytes.consumeChunk({ scanner.scan($0) }) {}
        return try scanner.end()
    }

    static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: return b - 48
        case 97...102: return b - 87
        default: return nil
        }
    }
}

/// Reads one CSV record from chunks of bytes, its state kept between chunks (a record may span
/// several): a value type, so that the scan runs on locals.
private struct CSVRecordScanner {
    /// Where the scan stands: in plain bytes, inside quotes, just past a quote inside quotes
    /// (a second quote stands for one, anything else closes), just past a CR in plain bytes
    /// (a LF after it ends the record, anything else keeps the CR).
    enum State { case plain, inQuotes, quoteInQuotes, afterCR }

    let names: Bool
    var fields: [SQLValue] = []
    var field: [UInt8] = []
    var quoted = false
    var state = State.plain
    /// True once the record's line end was read.
    private(set) var ended = false

    init(names: Bool, capacity: Int) {
        self.names = names
        fields.reserveCapacity(capacity)
        field.reserveCapacity(64)
    }

    /// Scans `chunk` up to the end of the record or of the chunk; returns the bytes used.
    mutating func scan(_ chunk: UnsafeBufferPointer<UInt8>) -> Int {
        var i = 0
        let n = chunk.count
        while i < n {
            switch state {
            case .plain:
                let start = i
                while i < n {
                    let b = chunk[i]
                    if b == 44 || b == 10 || b == 13 || b == 34 { break }
                    i += 1
                }
                if i > start { field.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[start..<i])) }
                guard i < n else { return n }
                let b = chunk[i]
                i += 1
                switch b {
                case 34 where field.isEmpty && !quoted:
                    quoted = true
                    state = .inQuotes
                case 44:
                    finishField()
                case 13:
                    state = .afterCR
                case 10:
                    finishField()
                    ended = true
                    return i
                default:
                    // A quote inside an unquoted field (or after a closing one): kept as written.
                    field.append(b)
                }
            case .inQuotes:
                let start = i
                while i < n && chunk[i] != 34 { i += 1 }
                if i > start { field.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[start..<i])) }
                guard i < n else { return n }
                i += 1
                state = .quoteInQuotes
            case .quoteInQuotes:
                if chunk[i] == 34 {
                    field.append(34)
                    i += 1
                    state = .inQuotes
                } else {
                    state = .plain
                }
            case .afterCR:
                state = .plain
                if chunk[i] == 10 {
                    finishField()
                    ended = true
                    return i + 1
                }
                field.append(13)
            }
        }
        return n
    }

    /// The record's fields, its last field finished when the input ended without a line end.
    /// - Throws: `BatchStoreError(.invalidArgument)` when the input ended inside quotes.
    mutating func end() throws -> [SQLValue] {
        if !ended {
            switch state {
            case .inQuotes: throw BatchStoreError(.invalidArgument, "CSV: a quoted field is not closed at the end of the file")
            case .afterCR: field.append(13)
            case .plain, .quoteInQuotes: break
            }
            finishField()
        }
        return fields
    }

    private mutating func finishField() {
        if !quoted && field.isEmpty {
            fields.append(.null)
        } else if !names && !quoted && field.count >= 2 && field.count % 2 == 0 && field[0] == 92 && field[1] == 120
                    && field.dropFirst(2).allSatisfy({ RowReader.nibble($0) != nil }) {
            var data = Data(capacity: field.count / 2)
            var i = 2
            while i + 1 < field.count, let high = RowReader.nibble(field[i]), let low = RowReader.nibble(field[i + 1]) {
                data.append(high << 4 | low)
                i += 2
            }
            fields.append(.blob(data))
        } else {
            fields.append(.text(String(decoding: field, as: UTF8.self)))
        }
        field.removeAll(keepingCapacity: true)
        quoted = false
    }
}
