import Foundation

/// The one error type BatchStore throws for anything a user or the environment can cause.
///
/// Match on ``code`` in code; show ``description`` (one line) to people.
public struct BatchStoreError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What went wrong, coarse enough to match on.
    public enum Code: Equatable, Sendable {
        /// The path does not exist (and creating it was not asked for).
        case fileNotFound
        /// The path exists but is not a file SQLite can open (a directory, not a database, corrupt).
        case notADatabase
        /// A write was attempted on a read-only store or file.
        case readOnly
        /// No table or view has that name.
        case noSuchEntity
        /// The entity has no attribute or relationship with that name.
        case noSuchAttribute
        /// A predicate, sort or expression did not parse; the message names the position.
        case syntax
        /// A predicate, sort or expression parsed but cannot be applied (wrong arity, bad regex…).
        case invalidQuery
        /// The row behind an object ID is gone.
        case objectNotFound
        /// The operation was cancelled by its progress handler.
        case cancelled
        /// The caller passed something unusable (a batch size of zero, a foreign object ID…).
        case invalidArgument
        /// Undo was asked for, but this change could not be undone exactly (foreign-key actions or
        /// delete rules change other tables that the undo journal does not record); nothing was
        /// changed. Running it without undo is possible.
        case undoRefused
        /// Undo was asked for, but the change touches more rows than the context's `undoLimit`;
        /// nothing was changed. Running it without undo, or with a higher limit, is possible.
        case tooBigToUndo
        /// ``ManagedObjectContext/undo()`` was called with no recorded operation left.
        case nothingToUndo
        /// The database is locked by another connection and the busy timeout ran out.
        case busy
        /// A constraint (UNIQUE, NOT NULL, CHECK, FOREIGN KEY) failed; nothing was written.
        case constraint
        /// Any other SQLite failure; the message carries SQLite's own text.
        case sqlite(Int32)
        /// A database server could not be reached: nothing listens at the socket or address, the
        /// host is unknown, or the server closed the connection.
        case serverUnavailable
        /// The server refused the credentials (wrong or missing password, unknown role, no
        /// `pg_hba.conf` entry).
        case authenticationFailed
        /// The server has no database of that name.
        case noSuchDatabase
        /// The server refused the role the privilege it needs (to connect, read or write).
        case permissionDenied
        /// Any other PostgreSQL failure, with its SQLSTATE (`42P01`); the message carries the server's text.
        case postgres(String)
    }

    /// What went wrong.
    public let code: Code
    /// One line for a person, naming the thing at fault.
    public let message: String
    /// Where in the text given (a predicate, sort, expression or assignments) the problem is: a
    /// 1-based column counted in Unicode scalars, as the message names it; nil when the error is
    /// not about a position.
    public let column: Int?

    public init(_ code: Code, _ message: String, column: Int? = nil) {
        self.code = code
        self.message = message
        self.column = column
    }

    public var description: String { message }
}

/// An engine's error that knows its one-line BatchStore form (SQLite's `DatabaseError`).
package protocol BatchStoreErrorConvertible: Error {
    /// The error as BatchStore says it, its message after `prefix` (`"context: "` or empty).
    func batchStoreError(prefix: String) -> BatchStoreError
}

extension BatchStoreError {
    /// Converts an engine's failure into a one-line BatchStore error; passes our own through.
    static func wrap(_ error: any Error, context: String? = nil) -> BatchStoreError {
        if let error = error as? BatchStoreError { return error }
        let prefix = context.map { "\($0): " } ?? ""
        if let error = error as? any BatchStoreErrorConvertible { return error.batchStoreError(prefix: prefix) }
        return BatchStoreError(.sqlite(-1), "\(prefix)\(error)")
    }
}

/// `1234567` as `1,234,567`, for counts in messages.
package func grouped(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return n < 0 ? "-" + out : out
}
