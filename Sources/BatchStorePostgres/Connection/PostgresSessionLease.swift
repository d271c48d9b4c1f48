import Foundation

/// A session that several owners share: a result (its ID table lives there), and the undo
/// journals and change tables made in it, which outlive the result. The last owner to let go
/// closes it, and the server drops its temp tables with it.
final class PostgresSessionLease: Sendable {
    let session: PostgresSession

    init(_ session: PostgresSession) { self.session = session }

    deinit { session.close() }
}
