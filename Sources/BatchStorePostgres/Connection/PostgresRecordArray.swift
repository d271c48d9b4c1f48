import BatchStore
import NIOCore
import PostgresNIO

/// A statement's rows sent as one cell: a binary `record[]`, what a batch fault reads
/// (`SELECT array_agg(ROW(f.*)) FROM (<the fault's statement>) AS f`, see
/// ``PostgresResultSource/fault(_:iterating:)``).
///
/// postgres-nio spends about 2.5 µs of its event loop's time on each row a statement sends,
/// whatever the row holds, and a quarter of a microsecond more on each cell: a 100-row batch of 7
/// columns cost its event loop 0.45–0.48 ms of CPU as rows, 0.18 ms as one `bytea` cell holding
/// the array (`faultline bench-worker <url> --mode pg-cells`, 1M rows), of a fault that takes
/// 1.2–1.5 ms. The server sends each record through the columns' binary send functions, as it
/// would send each row.
///
/// A field of a type read only as text, or of a domain (a record names the domain, where a row's
/// description names its base type), is ``Unreadable``: the fault then reads rows instead.
package enum PostgresRecordArray {
    /// A cell this reader does not take; the caller reads the statement's rows as rows instead.
    package struct Unreadable: Error, CustomStringConvertible {
        package let description: String
    }

    /// The type PostgreSQL names an anonymous record by (`ROW(…)`'s).
    static let recordOID: UInt32 = 2249

    /// Each record of a binary `record[]`, as its fields' values.
    ///
    /// The array as `array_send` writes it: the number of dimensions (0 for an empty array), a
    /// has-NULLs flag and the element type; for each dimension its length and lower bound; then
    /// each element's length (-1: NULL) and bytes. Each record as `record_send` writes it: its
    /// number of fields, then each field's type, length (-1: NULL) and bytes.
    package static func rows(_ cell: ByteBuffer) throws(Unreadable) -> [[SQLValue]] {
        var array = cell
        guard let dimensions = array.readInteger(as: Int32.self), array.readInteger(as: Int32.self) != nil,
              let elementType = array.readInteger(as: UInt32.self) else { throw Unreadable(description: "a record array's header is cut short") }
        if dimensions == 0, array.readableBytes == 0 { return [] }
        guard dimensions == 1, elementType == recordOID, let count = array.readInteger(as: Int32.self), count >= 0,
              array.readInteger(as: Int32.self) != nil else {
            throw Unreadable(description: "not a one-dimensional array of records (\(dimensions) dimensions, elements of type \(elementType))")
        }
        var rows: [[SQLValue]] = []
        // (Counts come from the server: each element takes 4 bytes at least.)
        rows.reserveCapacity(min(Int(count), array.readableBytes / 4))
        for _ in 0..<count {
            guard let length = array.readInteger(as: Int32.self), length >= 0, var record = array.readSlice(length: Int(length)),
                  let fields = record.readInteger(as: Int32.self), fields >= 0 else { throw Unreadable(description: "a record is NULL or cut short") }
            var values: [SQLValue] = []
            values.reserveCapacity(min(Int(fields), record.readableBytes / 8))
            for _ in 0..<fields {
                guard let type = record.readInteger(as: UInt32.self), let size = record.readInteger(as: Int32.self) else {
                    throw Unreadable(description: "a record's field is cut short")
                }
                if size < 0 {
                    values.append(.null)
                    continue
                }
                guard let bytes = record.readSlice(length: Int(size)) else { throw Unreadable(description: "a record's field is cut short") }
                do {
                    values.append(try PostgresSession.binaryValue(PostgresDataType(type), bytes))
                } catch {
                    throw Unreadable(description: "a field of type \(type) is \(error == .unread ? "read only as text" : "malformed")")
                }
            }
            guard record.readableBytes == 0 else { throw Unreadable(description: "a record has bytes after its fields") }
            rows.append(values)
        }
        guard array.readableBytes == 0 else { throw Unreadable(description: "a record array has bytes after its elements") }
        return rows
    }
}
