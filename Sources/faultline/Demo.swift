import ArgumentParser
import BatchStore
import FaultlineDemo
import Foundation

/// `faultline demo`: the demo database at a path of the user's.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the deterministic demo database (movies and directors).")

    @Option(help: "How many movies to create.")
    var rows: Int = 1_000_000

    @Option(help: "Where to write the new database (must not exist).")
    var output: String

    func validate() throws {
        guard rows >= 0 else { throw ValidationError("--rows must not be negative") }
    }

    func run() throws {
        try createDemoDatabase(at: output, rows: rows, label: "creating \(output)") { seconds in
            String(format: "created %@: %d movies, %d directors in %.1f s", output, rows, DemoDatabase.directorCount(forMovies: rows), seconds)
        }
    }
}

/// Creates the demo database at `path` behind a progress bar labelled `label`, then prints
/// `summary(seconds it took)` in the bar's place (what `demo`, `bench` and the first browse share).
func createDemoDatabase(at path: String, rows: Int, label: String, summary: (Double) -> String) throws {
    let bar = ProgressBar(label)
    let start = Date()
    try DemoDatabase.create(at: path, rows: rows) { bar.update($0) }
    bar.finish(summary(Date().timeIntervalSince(start)))
}

extension DemoDatabase {
    /// The demo database in the user's cache directory (`$XDG_CACHE_HOME/faultline` or
    /// `~/.cache/faultline`), created with a progress bar on first use.
    static func ensureInCache(rows: Int) throws -> String {
        let env = ProcessInfo.processInfo.environment
        // As the environment says: $XDG_CACHE_HOME, else $HOME/.cache (the account's home only
        // when HOME is unset).
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let base = env["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (home + "/.cache")
        let path = base + "/faultline/demo.sqlite"
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw BatchStoreError(.readOnly, "cannot create the folder \(folder) for the demo database; set XDG_CACHE_HOME to a folder you can write")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw BatchStoreError(.readOnly, "cannot create the demo database in \(folder): the folder is not writable; set XDG_CACHE_HOME to a folder you can write")
        }
        printError("first run: creating the demo database at \(path)")
        let partial = path + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        try createDemoDatabase(at: partial, rows: rows, label: "creating \(formatCount(rows)) movies") { _ in "created \(path)" }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        return path
    }
}
