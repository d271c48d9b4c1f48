import BatchStore
#if PostgreSQL
import BatchStorePostgres
#endif

// PostgreSQL is the `PostgreSQL` package trait: `make install`, `make test` and
// `swift build --traits PostgreSQL` build it in; `make run` (`swift build --product faultline`) leaves
// it out, so that a SQLite user does not compile postgres-nio's TLS stack (about four of a cold
// release build's seven minutes on two cores).
// A build without it still knows a PostgreSQL URL when it sees one and says how to get a build with it.
//
// This file is the one place the program names the engine: a verb opens a URL here and from then
// on asks the context what it can do (stream values, count an insert, stream changed IDs).

/// Whether `string` is a PostgreSQL URL (`postgres://…`, `postgresql://…`), in either build.
func isPostgresURL(_ string: String) -> Bool {
    let lowered = string.lowercased()
    return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
}

/// The context of the database a PostgreSQL URL names (its schema read at once, so a bad URL,
/// password or database fails here with one line).
func serverContext(_ url: String) throws -> any InsertingContext {
    #if PostgreSQL
    return PostgresContext(store: try PostgresStore(url: url))
    #else
    throw postgresNotBuilt()
    #endif
}

/// The error of a PostgreSQL URL given to a build without PostgreSQL.
func postgresNotBuilt() -> BatchStoreError {
    BatchStoreError(.invalidArgument, "this faultline was built without PostgreSQL (as `make run` builds it); "
        + "`make install` builds and installs one with it")
}
