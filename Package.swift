// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Faultline",
    products: [
        .library(name: "BatchStore", targets: ["BatchStore"]),
        .library(name: "BatchStorePostgres", targets: ["BatchStorePostgres"]),
        .executable(name: "faultline", targets: ["faultline"]),
    ],
    // PostgreSQL in the `faultline` program is a trait, off unless asked for: a SQLite user's build
    // (`make run`: `swift build --product faultline`) does not compile postgres-nio and its TLS stack
    // (a cold release build on two cores: 165 s against 404 s). `make install` and `make test` ask
    // for it (`--traits PostgreSQL`). The BatchStorePostgres library builds whenever it is asked for.
    traits: [
        .trait(name: "PostgreSQL", description: "PostgreSQL URLs in the faultline program (browse, snapshot, export, import, update, delete, bench)."),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `make docs`: the DocC catalogs of BatchStore and BatchStorePostgres (a plugin: nothing of it is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Wrappers for sqlite3_db_config(), which is variadic and cannot be called from Swift.
        .target(
            name: "CSQLiteShims",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .target(
            name: "BatchStore",
            dependencies: [
                "CSQLiteShims",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // PostgreSQL stores: URLs, passwords, the connection (postgres-nio) and the schema from the catalogs.
        // Its own target so that BatchStore and the SQLite path never depend on postgres-nio.
        .target(
            name: "BatchStorePostgres",
            dependencies: [
                "BatchStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Screen-independent terminal pieces: sanitising, display width, the screen buffer, keys, the backend protocol.
        .target(name: "TerminalCore"),
        // ncursesw, through its wide-character API; imported by TerminalCurses only.
        .systemLibrary(
            name: "CNCurses",
            pkgConfig: "ncursesw",
            providers: [.apt(["libncurses-dev"])]
        ),
        // The real terminal: the ncurses backend of TerminalCore's protocol.
        .target(name: "TerminalCurses", dependencies: ["CNCurses", "TerminalCore"]),
        // The browser: state, actions, reducer, rendering, and the session that runs effects.
        .target(name: "Browser", dependencies: ["BatchStore", "TerminalCore", "FaultlineCodecs"]),
        // CSV, TSV and NDJSON readers and writers (what import reads and export writes); no terminal.
        .target(name: "FaultlineCodecs", dependencies: ["BatchStore"], path: "Sources/Codecs"),
        // The deterministic demo database (movies and directors) that `demo`, `bench` and a first browse create;
        // written through SQLite's C API (GRDBSQLite is SQLite itself; GRDB stays in BatchStore).
        .target(
            name: "FaultlineDemo",
            dependencies: ["BatchStore", .product(name: "GRDBSQLite", package: "GRDB.swift")],
            path: "Sources/Demo"
        ),
        // What `faultline bench` measures, beside raw sqlite3 baselines (SQLite's C API), and its report;
        // public API of BatchStore and Browser only (plus `package` hooks), never the engine's internals.
        .target(
            name: "FaultlineBench",
            dependencies: [
                "BatchStore",
                .target(name: "BatchStorePostgres", condition: .when(traits: ["PostgreSQL"])),
                "Browser",
                "TerminalCore",
                "FaultlineDemo",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/Bench"
        ),
        .executableTarget(
            name: "faultline",
            dependencies: [
                "BatchStore",
                .target(name: "BatchStorePostgres", condition: .when(traits: ["PostgreSQL"])),
                "FaultlineCodecs",
                "FaultlineDemo",
                "FaultlineBench",
                "Browser",
                "TerminalCore",
                "TerminalCurses",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Fuzz harnesses, one per input kind: with `-sanitize=fuzzer,address -DFUZZING` (make fuzz)
        // libFuzzer drives them; a plain build replays a corpus (`FuzzCSV Tests/FuzzCorpus/csv`).
        .target(name: "FuzzDriver", path: "Sources/Fuzz/Driver"),
        .target(name: "FuzzSupport", dependencies: ["FuzzDriver"], path: "Sources/Fuzz/Support"),
        .executableTarget(name: "FuzzPredicate", dependencies: ["BatchStore", "FuzzSupport"], path: "Sources/Fuzz/Predicate"),
        .executableTarget(name: "FuzzAssignments", dependencies: ["BatchStore", "FuzzSupport"], path: "Sources/Fuzz/Assignments"),
        .executableTarget(name: "FuzzCSV", dependencies: ["FaultlineCodecs", "FuzzSupport"], path: "Sources/Fuzz/CSV"),
        .executableTarget(name: "FuzzNDJSON", dependencies: ["FaultlineCodecs", "FuzzSupport"], path: "Sources/Fuzz/NDJSON"),
        // Temporary folders, databases made with GRDB directly, fuzz text, the SQL recorder, the batched-result
        // conformance checker, processes,
        // the faultline binary and tmux: shared by the test targets.
        .target(
            name: "TestSupport",
            dependencies: ["BatchStore", "Browser", "TerminalCore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "BatchStoreTests",
            dependencies: ["BatchStore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "BatchStorePostgresTests",
            dependencies: ["BatchStorePostgres", "BatchStore", "Browser", "TerminalCore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "TerminalCoreTests",
            dependencies: ["TerminalCore"]
        ),
        .testTarget(
            name: "BrowserTests",
            dependencies: ["Browser", "BatchStore", "TerminalCore", "FaultlineCodecs", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "CodecsTests",
            dependencies: ["FaultlineCodecs", "BatchStore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "FaultlineTests",
            dependencies: ["BatchStore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
