import BatchStore

// PostgreSQL is the `PostgreSQL` package trait: `make install`, `make test` and
// `swift build --traits PostgreSQL` build it in; `make run` (`swift build --product faultline`) leaves
// it out, so that a SQLite user does not compile postgres-nio's TLS stack (about four of a cold
// release build's seven minutes on two cores).
// A build without it still knows a PostgreSQL URL when it sees one and says how to get a build with it.

/// Whether `string` is a PostgreSQL URL, as `PostgresStoreURL.isStoreURL` says, in either build.
func isPostgresURL(_ string: String) -> Bool {
    let lowered = string.lowercased()
    return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
}

#if !PostgreSQL
/// What a build without PostgreSQL knows of its URLs: enough to refuse them with one clear line.
enum PostgresStoreURL {
    static func isStoreURL(_ string: String) -> Bool { isPostgresURL(string) }
}
#endif

/// The error of a PostgreSQL URL given to a build without PostgreSQL.
func postgresNotBuilt() -> BatchStoreError {
    BatchStoreError(.invalidArgument, "this faultline was built without PostgreSQL (as `make run` builds it); "
        + "`make install` builds and installs one with it")
}
