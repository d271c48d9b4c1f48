import BatchStore
import FaultlineCodecs
import Foundation
import GRDB
import Testing
import TestSupport


/// The byte encoder writes what the String-based writer wrote, for every format, on random values
/// built to hit every escaping rule, and on a file's values that no Swift String could hold.
@Suite struct ByteEncoderTests {
    static let pieces: [String] = ["a", "Z", "0", " ", ",", "\"", "\\", "\\x", "\t", "\n", "\r", "\r\n", "\0", "\u{1}", "\u{1b}[31m",
                                   "\u{7f}", "\u{80}", "\u{85}", "\u{9f}", "\u{a0}", "é", "Ö", "日本", "😀", "\u{2028}", "\u{2029}",
                                   "\u{feff}", "\u{fffd}", "x,y", "{}", "null", "$blob", "="]

    static func randomValue(_ rng: inout SplitMix64) -> SQLValue {
        switch rng.next() % 6 {
        case 0: return .null
        case 1:
            let edges: [Int64] = [.min, .max, 0, -1, 9, 10, -10, 1_000_000_007]
            return .integer(rng.next() % 2 == 0 ? edges[Int(rng.next() % UInt64(edges.count))] : Int64(bitPattern: rng.next()) >> (rng.next() % 64))
        case 2:
            let edges: [Double] = [0, -0.0, .infinity, -.infinity, .nan, 1.5, 1e15, 1e16, 0.1, 2.5e-308, .greatestFiniteMagnitude]
            return .real(rng.next() % 2 == 0 ? edges[Int(rng.next() % UInt64(edges.count))] : Double(bitPattern: rng.next()))
        case 3, 4:
            let n = Int(rng.next() % 8)
            return .text((0..<n).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined())
        default:
            let n = Int(rng.next() % 70)
            return .blob(Data((0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        }
    }

    @Test func randomValuesEncodeAsBefore() {
        var rng = SplitMix64(seed: 14)
        for round in 0..<3_000 {
            let width = Int(rng.next() % 5)
            let columns = (0..<width).map { _ in Self.pieces[Int(rng.next() % UInt64(Self.pieces.count))] + "c" }
            let values = (0..<width).map { _ in Self.randomValue(&rng) }
            let withStore = rng.next() % 3 == 0
            let store = withStore ? Self.pieces[Int(rng.next() % UInt64(Self.pieces.count))] : nil
            for format in ExportFormat.allCases {
                var new = RowWriter(format: format, columns: columns, withStore: withStore)
                let old = ReferenceRowWriter(format: format, columns: columns, withStore: withStore)
                #expect(new.header() == old.header(), "round \(round) \(format) header of \(columns)")
                let line = new.line(values, store: store)
                #expect(Array(line.utf8) == Array(old.line(values, store: store).utf8), "round \(round) \(format): \(values)")
                var bytes: [UInt8] = [1, 2]
                new.append(values, store: store, to: &bytes)
                #expect(bytes == [1, 2] + Array(line.utf8), "append keeps what the buffer held")
                // A JSON array's second row follows the first one's comma and line end; the footer closes it.
                var second: [UInt8] = []
                new.append(values, store: store, to: &second)
                #expect(second == (format == .json ? Array(",\n".utf8) : []) + Array(line.utf8))
                #expect(new.footer() == (format == .json ? "\n]\n" : "") && new.rowsWritten == 2)
            }
        }
    }

    /// Text a Swift String cannot hold (invalid UTF-8, lone surrogates' bytes, truncated sequences)
    /// straight from the file: streamed in place, it is written as the decoded value would be.
    @Test func fileValuesStreamAsTheirDecodedValues() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE t(id INTEGER PRIMARY KEY, a, b);
            INSERT INTO t(a, b) VALUES (CAST(x'ff41' AS TEXT), CAST(x'e282' AS TEXT)), (CAST(x'eda080' AS TEXT), CAST(x'c2' AS TEXT)),
              (CAST(x'f09080' AS TEXT), CAST(x'41c285e280a8efbbbf00' AS TEXT)), ('', x''), (NULL, x'00ff10'),
              (1e300 * 1e300, -1e300 * 1e300), (CAST(x'5c78' AS TEXT), '日本,"\n');
            """)
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let context = try ManagedObjectContext(store: store)
        let columns = ["id", "a", "b"]
        for format in ExportFormat.allCases {
            var new = RowWriter(format: format, columns: columns)
            let old = ReferenceRowWriter(format: format, columns: columns)
            var streamed: [UInt8] = []
            var expected: [UInt8] = []
            try context.streamRows(BatchStore.FetchRequest(entityName: "t")) { row in
                if format == .json, !expected.isEmpty { expected += ",\n".utf8 }
                new.append(row, to: &streamed)
                expected += old.line(row.values).utf8
            }
            #expect(streamed == expected, "\(format): \(String(decoding: streamed, as: UTF8.self))")
            #expect(!streamed.isEmpty)
        }
    }
}

/// The String-based writer `faultline export` used before rows were encoded straight into bytes,
/// kept verbatim as the oracle the byte encoder must match.
struct ReferenceRowWriter: Sendable {
    let format: ExportFormat
    /// Column names, in order.
    let columns: [String]
    /// With several stores, a first column (`store`, or `$store` in NDJSON) says where each row comes from.
    let withStore: Bool

    init(format: ExportFormat, columns: [String], withStore: Bool = false) {
        self.format = format
        self.columns = columns
        self.withStore = withStore
    }

    /// The header line (none for NDJSON).
    func header() -> String {
        let names = (withStore ? ["store"] : []) + columns
        switch format {
        case .tsv: return names.map(Self.tsvEscape).joined(separator: "\t") + "\n"
        case .csv: return names.map(Self.csvQuote).joined(separator: ",") + "\r\n"
        case .ndjson: return ""
        case .json: return "[\n"
        }
    }

    /// One row, its line end included; `values` in column order, `store` when ``withStore``.
    func line(_ values: [SQLValue], store: String? = nil) -> String {
        let storeValue: SQLValue? = withStore ? .text(store ?? "") : nil
        switch format {
        case .tsv:
            return ((storeValue.map { [Self.tsvField($0)] } ?? []) + values.map(Self.tsvField)).joined(separator: "\t") + "\n"
        case .csv:
            return ((storeValue.map { [Self.csvField($0)] } ?? []) + values.map(Self.csvField)).joined(separator: ",") + "\r\n"
        case .ndjson, .json:
            var parts: [String] = storeValue.map { [Self.jsonString("$store") + ":" + Self.jsonValue($0)] } ?? []
            for (name, value) in zip(columns, values) {
                parts.append(Self.jsonString(name) + ":" + Self.jsonValue(value))
            }
            // A JSON array's row (the first: the others follow a comma and a line end) ends with the object.
            return "{" + parts.joined(separator: ",") + (format == .json ? "}" : "}\n")
        }
    }

    static func tsvEscape(_ s: String) -> String {
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

    static func tsvField(_ v: SQLValue) -> String {
        switch v {
        case .null: return "\\N"
        case .blob(let d): return hex(d)
        case .real(let d): return "\(d)"
        default: return tsvEscape(v.description)
        }
    }

    /// Blobs in TSV and CSV: `\x` and lowercase hex.
    static func hex(_ d: Data) -> String { "\\x" + d.map { String(format: "%02x", $0) }.joined() }

    static func csvQuote(_ s: String) -> String {
        // Text starting with \x is quoted so that it never reads back as a blob. Scalars, not
        // Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
        if s.isEmpty || s.utf8.starts(with: [92, 120]) || s.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    static func csvField(_ v: SQLValue) -> String {
        switch v {
        case .null: return ""
        case .blob(let d): return hex(d)
        case .real(let d): return "\(d)"
        default: return csvQuote(v.description)
        }
    }

    static func jsonValue(_ v: SQLValue) -> String {
        switch v {
        case .null: return "null"
        case .integer(let i): return String(i)
        case .real(let d): return d.isFinite ? "\(d)" : jsonString("\(d)")
        case .text(let s): return jsonString(s)
        case .blob(let d): return "{\"$blob\":\"\(d.base64EncodedString())\"}"
        }
    }

    static func jsonString(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                // U+FEFF too: Foundation's JSON reader drops it when it stands unescaped in a string.
                if c.value < 0x20 || (c.value >= 0x7F && c.value < 0xA0) || c.value == 0x2028 || c.value == 0x2029 || c.value == 0xFEFF {
                    out += String(format: "\\u%04x", c.value)
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out + "\""
    }
}
