import BatchStore

// PostgreSQL is the `PostgreSQL` package trait: `make install`, `make test` and
// `swift build --traits PostgreSQL` build it in; `make run` and a plain `swift build` leave it out, so
// that a SQLite user does not compile postgres-nio's TLS stack (about ten minutes on two cores).
// A build without it still knows a PostgreSQL URL when it sees one and says how to get a build with it.

#if !PostgreSQL
/// What a build without PostgreSQL knows of its URLs: enough to refuse them with one clear line.
enum PostgresStoreURL {
    static func isStoreURL(_ string: String) -> Bool {
        let lowered = string.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }
}
#endif

/// The error of a PostgreSQL URL given to a build without PostgreSQL.
func postgresNotBuilt() -> BatchStoreError {
    BatchStoreError(.invalidArgument, "this faultline was built without PostgreSQL; `make install` builds one with it "
        + "(or `swift build -c release --traits PostgreSQL`)")
}
