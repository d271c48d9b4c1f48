import BatchStore
import Foundation

/// The formats `faultline export` writes.
public enum ExportFormat: String, CaseIterable, Sendable {
    /// A header line, tab-separated fields, `\N` for NULL, `\t \n \r \\` escaped, blobs as `\x` hex.
    case tsv
    /// RFC 4180 with CRLF line ends: NULL is an empty unquoted field, empty text is `""`, text that
    /// starts with `\x` is quoted (it would read back as a blob), blobs are unquoted `\x` hex.
    case csv
    /// One JSON object per line, keys in column order; blobs as `{"$blob": base64}`; reals that
    /// are not finite as the strings `"inf"`, `"-inf"`, `"nan"`.
    case ndjson
}

/// Formats rows as TSV, CSV or NDJSON: the exact bytes `faultline export` writes.
public struct RowWriter: Sendable {
    public let format: ExportFormat
    /// Column names, in order.
    public let columns: [String]
    /// With several stores, a first column (`store`, or `$store` in NDJSON) says where each row comes from.
    public let withStore: Bool

    public init(format: ExportFormat, columns: [String], withStore: Bool = false) {
        self.format = format
        self.columns = columns
        self.withStore = withStore
    }

    /// The header line (none for NDJSON).
    public func header() -> String {
        let names = (withStore ? ["store"] : []) + columns
        switch format {
        case .tsv: return names.map(Self.tsvEscape).joined(separator: "\t") + "\n"
        case .csv: return names.map(Self.csvQuote).joined(separator: ",") + "\r\n"
        case .ndjson: return ""
        }
    }

    /// One row, its line end included; `values` in column order, `store` when ``withStore``.
    public func line(_ values: [SQLValue], store: String? = nil) -> String {
        let storeValue: SQLValue? = withStore ? .text(store ?? "") : nil
        switch format {
        case .tsv:
            return ((storeValue.map { [Self.tsvField($0)] } ?? []) + values.map(Self.tsvField)).joined(separator: "\t") + "\n"
        case .csv:
            return ((storeValue.map { [Self.csvField($0)] } ?? []) + values.map(Self.csvField)).joined(separator: ",") + "\r\n"
        case .ndjson:
            var parts: [String] = storeValue.map { [Self.jsonString("$store") + ":" + Self.jsonValue($0)] } ?? []
            for (name, value) in zip(columns, values) {
                parts.append(Self.jsonString(name) + ":" + Self.jsonValue(value))
            }
            return "{" + parts.joined(separator: ",") + "}\n"
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
