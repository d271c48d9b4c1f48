import Foundation

/// One value of a ``StreamedRow``, read in place: text and blob bytes point into SQLite's own
/// buffer and are valid only while the row is (during the body of the call that gave the row).
public enum StreamedValue {
    case null
    case integer(Int64)
    case real(Double)
    /// The text's bytes as SQLite stores them (UTF-8, not checked: a file may hold invalid
    /// sequences, and NULs are kept).
    case text(UnsafeBufferPointer<UInt8>)
    case blob(UnsafeRawBufferPointer)

    /// The value copied out as an ``SQLValue`` (text decoded as UTF-8, invalid sequences replaced).
    public var sqlValue: SQLValue {
        switch self {
        case .null: return .null
        case .integer(let v): return .integer(v)
        case .real(let v): return .real(v)
        case .text(let bytes): return .text(String(decoding: bytes, as: UTF8.self))
        case .blob(let bytes): return .blob(Data(bytes))
        }
    }
}
