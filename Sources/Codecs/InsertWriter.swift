import BatchStore
import Foundation

/// Formats rows as SQL `INSERT` statements, one a line, that SQLite reads back to the same
/// values: `INSERT INTO "movie" ("id", "title") VALUES (1, 'Ran');`. Identifiers are quoted
/// (a `"` doubled), text is a quoted literal (a `'` doubled; text holding NUL or invalid UTF-8 as
/// `CAST(X'…' AS TEXT)`, so no byte is lost or changes meaning), blobs are `X'…'`, reals are
/// written to round-trip (infinities as `9e999` / `-9e999`, NaN as NULL, as SQLite stores it).
public struct InsertWriter: Sendable {
    /// The table the statements insert into, and its columns in order.
    public let table: String
    public let columns: [String]
    private let prefix: [UInt8]

    public init(table: String, columns: [String]) {
        self.table = table
        self.columns = columns
        prefix = Array("INSERT INTO \(quoteIdentifier(table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) VALUES (".utf8)
    }

    /// Appends one statement and its line end to `out`.
    @inline(__always)
    public func append(_ row: StreamedRow, to out: inout [UInt8]) {
        out += prefix
        for i in 0..<min(row.count, columns.count) {
            if i > 0 { out += [44, 32] }
            Self.appendLiteral(row[i], to: &out)
        }
        out += [41, 59, 10]
    }

    /// Appends one statement from values in column order.
    public func append(_ values: [SQLValue], to out: inout [UInt8]) {
        out += prefix
        for (i, value) in values.prefix(columns.count).enumerated() {
            if i > 0 { out += [44, 32] }
            RowWriter.withStreamed(value) { Self.appendLiteral($0, to: &out) }
        }
        out += [41, 59, 10]
    }

    /// One value as an SQL literal.
    static func appendLiteral(_ value: StreamedValue, to out: inout [UInt8]) {
        switch value {
        case .null: out += Array("NULL".utf8)
        case .integer(let v): RowWriter.appendInteger(v, to: &out)
        case .real(let v):
            if v.isNaN { out += Array("NULL".utf8) } else if v.isInfinite { out += Array((v < 0 ? "-9e999" : "9e999").utf8) } else {
                let text = "\(v)"
                out += Array(text.utf8)
                // A real stays a real when read back (`1.0`, not `1`).
                if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { out += [46, 48] }
            }
        case .text(let bytes):
            if bytes.contains(0) || String(validating: bytes, as: UTF8.self) == nil {
                out += Array("CAST(".utf8)
                appendBlob(UnsafeRawBufferPointer(bytes), to: &out)
                out += Array(" AS TEXT)".utf8)
            } else {
                out.append(39)
                for b in bytes {
                    out.append(b)
                    if b == 39 { out.append(39) }
                }
                out.append(39)
            }
        case .blob(let bytes): appendBlob(bytes, to: &out)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func appendBlob(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out += [88, 39]
        for b in bytes {
            out.append(hexDigits[Int(b >> 4)])
            out.append(hexDigits[Int(b & 15)])
        }
        out.append(39)
    }
}
