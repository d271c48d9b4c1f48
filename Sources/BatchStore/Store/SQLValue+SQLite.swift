import Foundation
import GRDB
import GRDBSQLite

// SQLite's side of ``SQLValue``: GRDB's values, statement arguments, and reading and binding
// with the C API.

extension SQLValue {
    @inline(__always)
    init(_ dbValue: DatabaseValue) {
        switch dbValue.storage {
        case .null: self = .null
        case .int64(let v): self = .integer(v)
        case .double(let v): self = .real(v)
        case .string(let v): self = .text(v)
        case .blob(let v): self = .blob(v)
        }
    }

    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let v): return v.databaseValue
        case .real(let v): return v.databaseValue
        case .text(let v): return v.databaseValue
        case .blob(let v): return v.databaseValue
        }
    }
}

extension Array where Element == SQLValue {
    var statementArguments: StatementArguments {
        StatementArguments(map { $0.databaseValue })
    }
}

extension SQLValue {
    /// Reads column `index` of the current row of `statement` with the C API: no `Row`, no generic
    /// dispatch. Text is decoded with its byte length, so embedded NULs survive.
    @inline(__always)
    init(statement: OpaquePointer?, column index: Int32) {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            self = .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            let bytes = sqlite3_column_text(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            if let bytes {
                self = .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
            } else {
                self = .text("")
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            if let bytes = sqlite3_column_blob(statement, index), count > 0 {
                self = .blob(Data(bytes: bytes, count: count))
            } else {
                self = .blob(Data())
            }
        default:
            self = .null
        }
    }
}

extension SQLValue {
    /// Binds the value to parameter `index` of `statement` with the C API (text and blobs copied
    /// by SQLite, with their byte lengths, so embedded NULs survive).
    @inline(__always)
    func bind(to statement: OpaquePointer?, at index: Int32) {
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        switch self {
        case .null: sqlite3_bind_null(statement, index)
        case .integer(let i): sqlite3_bind_int64(statement, index, i)
        case .real(let d): sqlite3_bind_double(statement, index, d)
        case .text(var s):
            s.withUTF8 { buffer in
                if let base = buffer.baseAddress, buffer.count > 0 {
                    _ = base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { sqlite3_bind_text(statement, index, $0, Int32(buffer.count), transient) }
                } else {
                    sqlite3_bind_text(statement, index, "", 0, nil)
                }
            }
        case .blob(let d):
            if d.isEmpty {
                sqlite3_bind_zeroblob(statement, index, 0)
            } else {
                _ = d.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), transient) }
            }
        }
    }
}

/// `expr` for one expression, `(a, b, …)` for several: the left side of `IN (SELECT …)` and key
/// comparisons on composite keys.
func sqlTuple(_ expressions: [String]) -> String {
    expressions.count == 1 ? expressions[0] : "(" + expressions.joined(separator: ", ") + ")"
}

extension SQLValue {
    /// True for text that holds a NUL, which GRDB would bind and read only up to that NUL.
    var isTextWithNUL: Bool {
        if case .text(let s) = self { return s.utf8.contains(0) }
        return false
    }

    /// Column `index` of a row read from a live statement (a cursor's row), exactly: text keeps
    /// every byte, NULs included (`row[index] as DatabaseValue` stops text at a NUL).
    init(row: Row, at index: Int) {
        let value: DatabaseValue = row[index]
        if case .string = value.storage, let exact = try? row.withUnsafeData(atIndex: index, { $0.map { String(decoding: $0, as: UTF8.self) } }) {
            self = .text(exact)
        } else {
            self.init(value)
        }
    }
}

extension Statement {
    /// Sets `values` as the arguments of the next run without arguments (`execute()`,
    /// `Row.fetchCursor(statement)`, `Int.fetchOne(statement)`), binding text that holds a NUL
    /// with its byte length through SQLite's C API: GRDB binds text only up to its first NUL.
    /// - Throws: when the number of values does not match the statement's parameters.
    @discardableResult
    func bound(_ values: [SQLValue]) throws -> Statement {
        try setArguments(values.statementArguments)
        for (i, v) in values.enumerated() where v.isTextWithNUL { v.bind(to: sqliteStatement, at: Int32(i + 1)) }
        return self
    }
}
