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
    /// One JSON array of the same objects, one a line: `[`, the objects separated by `,` and a
    /// line end, `]` (what `faultline import` reads as `json`); `[` and `]` alone for no rows.
    case json
}

/// Formats rows as TSV, CSV, NDJSON or a JSON array: the exact bytes `faultline export` writes.
/// A JSON array needs to know its first row and its end: the writer counts its rows, and
/// ``footer()`` closes the array (the other formats have none).
///
/// Rows are encoded straight into a byte buffer (``append(_:store:to:)``), from a streamed row's
/// values in place or from ``SQLValue``s: no `String` per value, a table for hex and base64.
/// Text is written as its UTF-8 bytes; a value that is not valid UTF-8 is first decoded with
/// U+FFFD replacing the invalid sequences, as a Swift `String` would hold it.
public struct RowWriter: Sendable {
    public let format: ExportFormat
    /// Column names, in order.
    public let columns: [String]
    /// With several stores, a first column (`store`, or `$store` in NDJSON) says where each row comes from.
    public let withStore: Bool
    /// NDJSON or JSON: fields are JSON values under their keys.
    private let isJSON: Bool
    /// Rows appended so far.
    public private(set) var rowsWritten = 0
    /// NDJSON: `{"name":` for the first column and `,"name":` for the others.
    private let keyPrefixes: [[UInt8]]
    private let storeKeyPrefix: [UInt8]

    public init(format: ExportFormat, columns: [String], withStore: Bool = false) {
        self.format = format
        self.columns = columns
        self.withStore = withStore
        self.isJSON = format == .ndjson || format == .json
        var prefixes: [[UInt8]] = []
        for (i, name) in columns.enumerated() {
            var key: [UInt8] = i == 0 && !withStore ? [UInt8(ascii: "{")] : [UInt8(ascii: ",")]
            Self.appendJSONString(text: Array(name.utf8), to: &key)
            key.append(UInt8(ascii: ":"))
            prefixes.append(key)
        }
        keyPrefixes = prefixes
        var storeKey: [UInt8] = [UInt8(ascii: "{")]
        Self.appendJSONString(text: Array("$store".utf8), to: &storeKey)
        storeKey.append(UInt8(ascii: ":"))
        storeKeyPrefix = storeKey
    }

    /// The header line (none for NDJSON; `[` and a line end for JSON).
    public func header() -> String {
        let names = (withStore ? ["store"] : []) + columns
        var out: [UInt8] = []
        switch format {
        case .tsv:
            for (i, name) in names.enumerated() {
                if i > 0 { out.append(9) }
                Self.appendTSV(text: Array(name.utf8), to: &out)
            }
            out.append(10)
        case .csv:
            for (i, name) in names.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendCSV(text: Array(name.utf8), to: &out)
            }
            out += [13, 10]
        case .ndjson: break
        case .json: out += [UInt8(ascii: "["), 10]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What follows the last row: the array's end for JSON (`]` on a line of its own), nothing
    /// for the others.
    public func footer() -> String {
        guard format == .json else { return "" }
        return rowsWritten == 0 ? "]\n" : "\n]\n"
    }

    /// One row, its line end included, as a first row is written (a JSON array's without the
    /// comma before it); `values` in column order, `store` when ``withStore``. Counts no row.
    public func line(_ values: [SQLValue], store: String? = nil) -> String {
        var first = self
        first.rowsWritten = 0
        var out: [UInt8] = []
        first.append(values, store: store, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends one row, its line end included, to `out`.
    public mutating func append(_ values: [SQLValue], store: String? = nil, to out: inout [UInt8]) {
        beginRow(&out)
        appendRow(count: values.count, store: store, to: &out) { i, out in
            Self.withStreamed(values[i]) { appendField($0, column: i, to: &out) }
        }
    }

    /// Appends one streamed row (its values read in place), its line end included, to `out`.
    @inline(__always)
    public mutating func append(_ row: StreamedRow, store: String? = nil, to out: inout [UInt8]) {
        beginRow(&out)
        appendRow(count: row.count, store: store, to: &out) { i, out in appendField(row[i], column: i, to: &out) }
    }

    /// Counts a row; in a JSON array, every row but the first follows the previous one's comma
    /// and line end.
    @inline(__always)
    private mutating func beginRow(_ out: inout [UInt8]) {
        if format == .json, rowsWritten > 0 { out += [UInt8(ascii: ","), 10] }
        rowsWritten += 1
    }

    @inline(__always)
    private func appendRow(count: Int, store: String?, to out: inout [UInt8], _ field: (Int, inout [UInt8]) -> Void) {
        if withStore {
            var name = store ?? ""
            name.withUTF8 { bytes in
                if isJSON { out += storeKeyPrefix }
                appendField(.text(bytes), column: nil, to: &out)
            }
        }
        switch format {
        case .tsv, .csv:
            let separator: UInt8 = format == .tsv ? 9 : UInt8(ascii: ",")
            for i in 0..<count {
                if i > 0 || withStore { out.append(separator) }
                field(i, &out)
            }
            if format == .tsv { out.append(10) } else { out += [13, 10] }
        case .ndjson, .json:
            // zip(columns, values): the shorter of the two sets the fields.
            let n = min(count, columns.count)
            for i in 0..<n { field(i, &out) }
            if n == 0 && !withStore { out.append(UInt8(ascii: "{")) }
            out.append(UInt8(ascii: "}"))
            if format == .ndjson { out.append(10) }
        }
    }

    /// One field; in NDJSON `column` names the key written before the value (nil for the store).
    @inline(__always)
    private func appendField(_ value: StreamedValue, column: Int?, to out: inout [UInt8]) {
        if isJSON, let column { out += keyPrefixes[column] }
        switch value {
        case .null:
            switch format {
            case .tsv: out += [92, 78]   // \N
            case .csv: break
            case .ndjson, .json: out += [110, 117, 108, 108]   // null
            }
        case .integer(let v): Self.appendInteger(v, to: &out)
        case .real(let v):
            if isJSON, !v.isFinite {
                out.append(34)
                out += "\(v)".utf8
                out.append(34)
            } else {
                out += "\(v)".utf8
            }
        case .text(let bytes):
            Self.withValidUTF8(bytes) { text in
                switch format {
                case .tsv: Self.appendTSV(text: text, to: &out)
                case .csv: Self.appendCSV(text: text, to: &out)
                case .ndjson, .json: Self.appendJSONString(text: text, to: &out)
                }
            }
        case .blob(let bytes):
            if isJSON {
                out += #"{"$blob":""#.utf8
                Self.appendBase64(bytes, to: &out)
                out += [34, 125]
            } else {
                Self.appendHex(bytes, to: &out)
            }
        }
    }

    // MARK: Encoders

    /// Calls `body` with `value` as a ``StreamedValue`` (text and blob bytes borrowed for the call).
    @inline(__always)
    static func withStreamed(_ value: SQLValue, _ body: (StreamedValue) -> Void) {
        switch value {
        case .null: body(.null)
        case .integer(let v): body(.integer(v))
        case .real(let v): body(.real(v))
        case .text(var s): s.withUTF8 { body(.text($0)) }
        case .blob(let d): d.withUnsafeBytes { body(.blob($0)) }
        }
    }

    /// `bytes` as they are when they are ASCII (the common case, checked eight at a time), else
    /// decoded as UTF-8 with invalid sequences replaced, as a `String` holds them.
    @inline(__always)
    static func withValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if isASCII(bytes) { return body(bytes) }
        var s = String(decoding: bytes, as: UTF8.self)
        s.withUTF8(body)
    }

    @inline(__always)
    static func withValidUTF8(_ bytes: [UInt8], _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { withValidUTF8($0, body) }
    }

    @inline(__always)
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var i = 0
        let raw = UnsafeRawPointer(base)
        while i + 8 <= count {
            if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < count {
            if base[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }

    static func appendInteger(_ v: Int64, to out: inout [UInt8]) {
        if v >= 0 && v < 10 { out.append(48 + UInt8(v)); return }
        var magnitude = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for 20 digits
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - n] = 48 + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            if v < 0 { out.append(UInt8(ascii: "-")) }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - n)...]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `\x` and two lowercase hex digits per byte.
    static func appendHex(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out += [92, 120]
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bytes.count * 2))
        hexDigits.withUnsafeBufferPointer { digits in
            out.withUnsafeMutableBufferPointer { o in
                var j = start
                for b in bytes {
                    o[j] = digits[Int(b >> 4)]
                    o[j + 1] = digits[Int(b & 15)]
                    j += 2
                }
            }
        }
    }

    private static let base64Digits: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard base64 with padding and no line breaks (what `Data.base64EncodedString()` writes).
    static func appendBase64(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let count = bytes.count
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: (count + 2) / 3 * 4))
        base64Digits.withUnsafeBufferPointer { table in
            out.withUnsafeMutableBufferPointer { o in
                var i = 0, j = start
                while i + 3 <= count {
                    let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    o[j] = table[Int(v >> 18)]
                    o[j + 1] = table[Int(v >> 12 & 63)]
                    o[j + 2] = table[Int(v >> 6 & 63)]
                    o[j + 3] = table[Int(v & 63)]
                    i += 3
                    j += 4
                }
                let rest = count - i
                if rest > 0 {
                    let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                    o[j] = table[Int(v >> 18)]
                    o[j + 1] = table[Int(v >> 12 & 63)]
                    o[j + 2] = rest == 2 ? table[Int(v >> 6 & 63)] : UInt8(ascii: "=")
                    o[j + 3] = UInt8(ascii: "=")
                }
            }
        }
    }

    /// TSV: `\\`, tab, LF and CR escaped with a backslash.
    static func appendTSV(text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var from = 0
        for (i, b) in text.enumerated() where b == 92 || b == 9 || b == 10 || b == 13 {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: text[from..<i]))
            out.append(92)
            out.append(b == 92 ? 92 : b == 9 ? UInt8(ascii: "t") : b == 10 ? UInt8(ascii: "n") : UInt8(ascii: "r"))
            from = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: text[from...]))
    }

    static func appendTSV(text: [UInt8], to out: inout [UInt8]) {
        withValidUTF8(text) { appendTSV(text: $0, to: &out) }
    }

    /// CSV: quoted when empty, starting with `\x` (it would read back as a blob), or holding a
    /// comma, a quote, CR or LF; quotes doubled inside.
    static func appendCSV(text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let quote = text.isEmpty || (text.count >= 2 && text[0] == 92 && text[1] == 120)
            || text.contains(where: { $0 == 44 || $0 == 34 || $0 == 10 || $0 == 13 })
        guard quote else { return out.append(contentsOf: text) }
        out.append(34)
        for b in text {
            out.append(b)
            if b == 34 { out.append(34) }
        }
        out.append(34)
    }

    static func appendCSV(text: [UInt8], to out: inout [UInt8]) {
        withValidUTF8(text) { appendCSV(text: $0, to: &out) }
    }

    /// A JSON string. Escaped: `"` `\` LF CR tab as themselves; other C0 controls, DEL, the C1
    /// controls, U+2028, U+2029 and U+FEFF (Foundation's JSON reader drops an unescaped one) as
    /// `\u` and four lowercase hex digits. `text` must be valid UTF-8.
    static func appendJSONString(text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(34)
        var from = 0
        var i = 0
        let n = text.count
        func flush(_ upTo: Int) {
            if from < upTo { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[from..<upTo])) }
        }
        func unicodeEscape(_ scalar: UInt32) {
            out += [92, UInt8(ascii: "u")]
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hexDigits[Int(scalar >> UInt32(shift) & 15)]) }
        }
        while i < n {
            let b = text[i]
            if b >= 0x20 && b != 34 && b != 92 && b < 0x7F { i += 1; continue }
            if b < 0x80 {
                flush(i)
                switch b {
                case 34: out += [92, 34]
                case 92: out += [92, 92]
                case 10: out += [92, UInt8(ascii: "n")]
                case 13: out += [92, UInt8(ascii: "r")]
                case 9: out += [92, UInt8(ascii: "t")]
                default: unicodeEscape(UInt32(b))
                }
                i += 1
                from = i
                continue
            }
            // Multi-byte: U+0080–U+009F is C2 80–C2 9F; U+2028/9 is E2 80 A8/A9; U+FEFF is EF BB BF.
            if b == 0xC2, i + 1 < n, text[i + 1] < 0xA0 {
                flush(i)
                unicodeEscape(UInt32(text[i + 1]))
                i += 2
                from = i
            } else if b == 0xE2, i + 2 < n, text[i + 1] == 0x80, text[i + 2] == 0xA8 || text[i + 2] == 0xA9 {
                flush(i)
                unicodeEscape(text[i + 2] == 0xA8 ? 0x2028 : 0x2029)
                i += 3
                from = i
            } else if b == 0xEF, i + 2 < n, text[i + 1] == 0xBB, text[i + 2] == 0xBF {
                flush(i)
                unicodeEscape(0xFEFF)
                i += 3
                from = i
            } else {
                i += 1
            }
        }
        flush(n)
        out.append(34)
    }

    static func appendJSONString(text: [UInt8], to out: inout [UInt8]) {
        withValidUTF8(text) { appendJSONString(text: $0, to: &out) }
    }
}
