// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Faultline",
    products: [
        .library(name: "BatchStore", targets: ["BatchStore"]),
        .executable(name: "faultline", targets: ["faultline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
        // Screen-independent terminal pieces: sanitising, display width (and, with the browser, the screen buffer).
        .target(name: "TerminalCore"),
        .executableTarget(
            name: "faultline",
            dependencies: [
                "BatchStore",
                "TerminalCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "BatchStoreTests",
            dependencies: ["BatchStore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "TerminalCoreTests",
            dependencies: ["TerminalCore"]
        ),
        .testTarget(
            name: "FaultlineTests",
            dependencies: ["BatchStore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
