import BatchStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresSession {
    // MARK: - Values

    static func query(_ sql: String, _ arguments: [SQLValue]) -> PostgresQuery {
        var binds = PostgresBindings(capacity: arguments.count)
        for value in arguments {
            switch value {
            case .null: binds.appendNull()
            case .integer(let v): binds.append(v)
            case .real(let v): binds.append(v)
            case .text(let v): binds.append(v)
            case .blob(let v): binds.append(ByteBuffer(bytes: v))
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    static func values(of result: PostgresQueryResult) throws -> [[SQLValue]] {
        try result.rows.map { row in try row.map(value(of:)) }
    }

    /// One cell as a value (see ``query(_:_:)`` for which types read as what).
    static func value(of cell: PostgresCell) throws -> SQLValue {
        try value(of: cell, binary: cell.format != .text)
    }

    /// A prepared statement's cell: its rows are asked for in binary, but postgres-nio (1.33)
    /// describes its columns as text.
    static func binaryValue(of cell: PostgresCell) throws -> SQLValue {
        try value(of: cell, binary: true)
    }

    @inline(__always)
    static func value(of cell: PostgresCell, binary: Bool) throws -> SQLValue {
        guard let bytes = cell.bytes else { return .null }
        if !binary { return .text(String(buffer: bytes)) }
        do {
            return try binaryValue(cell.dataType, bytes)
        } catch .unread {
            throw BatchStoreError(.invalidQuery, "column \(cell.columnName.debugDescription) has a type (OID \(cell.dataType.rawValue)) that is read only as text: select it with ::text")
        } catch .malformed {
            throw BatchStoreError(.postgres("XX000"), "column \(cell.columnName.debugDescription): the server sent a malformed \(cell.dataType) value")
        }
    }

    /// Why a binary value was not read: a type read only as text, or bytes not of its binary form.
    enum CellProblem: Error { case unread, malformed }

    /// The value of a type's binary form (the types a statement's cells or a record's fields are
    /// read as; any other is read as text, `::text`, or is ``CellProblem/unread``).
    @inline(__always)
    static func binaryValue(_ type: PostgresDataType, _ bytes: ByteBuffer) throws(CellProblem) -> SQLValue {
        var bytes = bytes
        switch type {
        case .int2: if let v = bytes.readInteger(as: Int16.self), bytes.readableBytes == 0 { return .integer(Int64(v)) }
        case .int4: if let v = bytes.readInteger(as: Int32.self), bytes.readableBytes == 0 { return .integer(Int64(v)) }
        case .int8: if let v = bytes.readInteger(as: Int64.self), bytes.readableBytes == 0 { return .integer(v) }
        case .oid: if let v = bytes.readInteger(as: UInt32.self), bytes.readableBytes == 0 { return .integer(Int64(v)) }
        case .float4: if let v = bytes.readInteger(as: UInt32.self), bytes.readableBytes == 0 { return .real(Double(Float(bitPattern: v))) }
        case .float8: if let v = bytes.readInteger(as: UInt64.self), bytes.readableBytes == 0 { return .real(Double(bitPattern: v)) }
        case .bool: if let v = bytes.readInteger(as: UInt8.self), bytes.readableBytes == 0 { return .integer(v == 0 ? 0 : 1) }
        case .bytea: return .blob(Data(bytes.readableBytesView))
        case .text, .varchar, .bpchar, .name, .unknown, .json: return .text(String(buffer: bytes))
        case .jsonb:
            // Version 1 of jsonb's binary form: one version byte, then the text.
            if bytes.readInteger(as: UInt8.self) == 1 { return .text(String(buffer: bytes)) }
        case .uuid:
            if bytes.readableBytes == 16, let raw = bytes.readBytes(length: 16) {
                let hex = raw.map { String(format: "%02x", $0) }
                return .text([hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-"))
            }
        default:
            throw .unread
        }
        throw .malformed
    }

    // MARK: - Waiting

    /// The future's value, blocking this thread, which must not be an event loop (it would wait for itself).
    static func waitOffLoop<T: Sendable>(_ future: EventLoopFuture<T>) throws -> T {
        precondition(!future.eventLoop.inEventLoop,
                     "PostgresSession: a synchronous call on the connection's event loop would wait for itself; use the async API there")
        return try future.wait()
    }
}
