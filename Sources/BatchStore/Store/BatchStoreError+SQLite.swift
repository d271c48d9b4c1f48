import Foundation
import GRDB

extension BatchStoreError {
    /// A failed call of SQLite's C API (extended result `code`, `sqlite3_errmsg` text), classified
    /// as ``wrap(_:context:)`` classifies GRDB's errors: for code outside the engine that talks to
    /// SQLite directly (the demo generator).
    package static func sqlite(_ code: Int32, message: String, context: String? = nil) -> BatchStoreError {
        wrap(DatabaseError(resultCode: ResultCode(rawValue: code), message: message), context: context)
    }

    /// The starts of SQLite's messages for a statement past one of its limits (expression depth,
    /// bound variables, statement length, parser stack, columns).
    static let sqliteLimits = ["Expression tree is too large", "too many SQL variables", "string or blob too big", "parser stack overflow",
                               "too many columns", "too many terms", "statement too long"]
}

/// SQLite's failures (through GRDB) as one-line BatchStore errors.
extension DatabaseError: BatchStoreErrorConvertible {
    package func batchStoreError(prefix: String) -> BatchStoreError {
        let error = self
        let text = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return BatchStoreError(.notADatabase, "\(prefix)not a usable SQLite database (\(text))")
        case .SQLITE_READONLY:
            return BatchStoreError(.readOnly, "\(prefix)the database is read-only (\(text))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return BatchStoreError(.busy, "\(prefix)the database is locked by another connection (\(text))")
        case .SQLITE_INTERRUPT:
            return BatchStoreError(.cancelled, "\(prefix)cancelled")
        case .SQLITE_CONSTRAINT:
            // Every write here is one transaction: a constraint failure rolls it all back.
            let why = error.resultCode == .SQLITE_CONSTRAINT_FOREIGNKEY
                ? " (a row refers through a foreign key to one the change would remove, or the change would refer to a row that is not there)" : ""
            return BatchStoreError(.constraint, "\(prefix)constraint failed: \(text)\(why); nothing was changed")
        case .SQLITE_FULL:
            return BatchStoreError(.sqlite(error.resultCode.rawValue), "\(prefix)the disk is full or the database reached its size limit; the change was rolled back (\(text))")
        case .SQLITE_IOERR:
            return BatchStoreError(.sqlite(error.resultCode.rawValue), "\(prefix)an I/O error; the change was rolled back (\(text))")
        case .SQLITE_CANTOPEN:
            return BatchStoreError(.notADatabase, "\(prefix)cannot open the database (\(text))")
        case .SQLITE_ERROR where BatchStoreError.sqliteLimits.contains { text.hasPrefix($0) }:
            // A statement past one of SQLite's limits: what the user wrote is too large.
            return BatchStoreError(.invalidQuery, "\(prefix)too large for SQLite: \(text); split it into smaller parts")
        default:
            return BatchStoreError(.sqlite(error.resultCode.rawValue), "\(prefix)\(text)")
        }
    }
}
