import ArgumentParser
import BatchStore
import Foundation
import TerminalCore

/// The command line. Parsing and wiring only; the work is in BatchStore.
@main
struct Faultline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faultline",
        abstract: "Core Data-style batching for SQLite and PostgreSQL: batch-faulted browsing, bulk edits, export and benchmarks.",
        version: "0.1.0 (unreleased; see CHANGELOG.md)",
        subcommands: [Browse.self, Snapshot.self, Tour.self, Demo.self, Export.self, Import.self, Update.self, Delete.self, Bench.self, BenchWorker.self],
        defaultSubcommand: Browse.self)

    /// Runs the command; errors become one line on stderr: exit 2 for bad usage (arguments,
    /// predicates, sort keys), 1 for everything else.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as BatchStoreError {
            printError("faultline: \(error.message)")
            switch error.code {
            case .syntax, .invalidQuery, .noSuchAttribute, .invalidArgument, .undoRefused, .tooBigToUndo, .nothingToUndo: Foundation.exit(2)
            default: Foundation.exit(1)
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            if error is ExitCode || error is CleanExit { Foundation.exit(code.rawValue) }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            printError("faultline: \(message)")
            Foundation.exit(2)
        }
    }
}

/// Writes one line to stderr, with control characters (from file names, table or column names)
/// escaped so nothing reaches the terminal raw.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((TerminalText.escapingControlCharacters(text) + "\n").utf8))
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
final class ProgressBar {
    let label: String
    let enabled = isatty(2) == 1
    private var lastPercent = -1

    init(_ label: String) { self.label = label }

    func update(_ fraction: Double) {
        guard enabled else { return }
        let percent = Int((fraction * 100).rounded(.down))
        guard percent != lastPercent else { return }
        lastPercent = percent
        let width = 30
        let filled = min(width, percent * width / 100)
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) \(bar) \(percent)%".utf8))
    }

    func finish(_ summary: String) {
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
        printError(summary)
    }
}
