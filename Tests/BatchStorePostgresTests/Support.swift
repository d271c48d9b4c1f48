import BatchStore
import BatchStorePostgres
import Foundation
import TestSupport

/// An environment with no libpq variable of the machine running the tests, and no password file.
let noPasswordFile: [String: String] = ["PGPASSFILE": "/nonexistent/.pgpass"]

extension PostgresServer {
    /// A session on `database` as the superuser (or `user` with `password`), with `environment` as libpq's.
    func session(_ database: String, user: String? = nil, password: String? = nil,
                 environment: [String: String] = noPasswordFile) throws -> PostgresSession {
        try PostgresSession.open(PostgresStoreURL(url(database: database, user: user, password: password), environment: environment),
                                 environment: environment)
    }

    /// The error opening a session throws, or nil when it opens.
    func openingError(_ url: String, environment: [String: String] = noPasswordFile) -> BatchStoreError? {
        do {
            let session = try PostgresSession.open(PostgresStoreURL(url, environment: environment), environment: environment)
            session.close()
            return nil
        } catch {
            return error as? BatchStoreError ?? BatchStoreError(.invalidArgument, "not a BatchStoreError: \(error)")
        }
    }

    /// A role that logs in with `password`, named uniquely.
    func makeRole(_ prefix: String, password: String) throws -> String {
        let role = uniqueRoleName(prefix)
        try psql("CREATE ROLE \(role) LOGIN PASSWORD '\(password)'")
        return role
    }
}
