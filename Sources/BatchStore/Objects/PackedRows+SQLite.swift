import Foundation
import GRDBSQLite

extension PackedRows {
    /// Appends the current row of `stmt` (columns `first ..< first + columns`, read with the C API)
    /// and returns its row index.
    @inline(__always)
    func appendRow(_ stmt: OpaquePointer?, from first: Int32) -> Int {
        precondition(rowCount < capacity, "PackedRows overflow")
        let row = rowCount
        var cell = row * columns
        var column = first
        let end = first + Int32(columns)
        while column < end {
            // One sqlite3_column_value per cell, then the value accessors: the connection is used
            // by one thread at a time (GRDB serialises it), which is what the unprotected value
            // returned here requires. Half the API calls of column_type + column_int64.
            let value = sqlite3_column_value(stmt, column)
            switch sqlite3_value_type(value) {
            case SQLITE_INTEGER:
                tags[cell] = Self.integer
                words[cell] = sqlite3_value_int64(value)
            case SQLITE_FLOAT:
                tags[cell] = Self.real
                words[cell] = Int64(bitPattern: sqlite3_value_double(value).bitPattern)
            case SQLITE_TEXT:
                tags[cell] = Self.text
                let bytes = UnsafeRawPointer(sqlite3_value_text(value))
                store(bytes, count: Int(sqlite3_value_bytes(value)), cell: cell)
            case SQLITE_BLOB:
                tags[cell] = Self.blob
                let bytes = sqlite3_value_blob(value)
                store(bytes, count: Int(sqlite3_value_bytes(value)), cell: cell)
            default:
                tags[cell] = Self.null
            }
            cell += 1
            column += 1
        }
        rowCount += 1
        return row
    }
}
