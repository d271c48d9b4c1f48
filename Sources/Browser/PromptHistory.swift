import Foundation
import TerminalCore

/// The lines entered at each kind of prompt, oldest first: what Up and Down walk through.
///
/// One list per kind (filters apart from searches, from `:` commands…), each global rather than
/// per file: a filter written for one copy of a database serves the next, as a shell's history
/// does. Bounded by ``limit`` per kind; no empty entry, no entry equal to the one before it.
public struct PromptHistory: Sendable, Equatable {
    /// Entries kept per kind; older ones are dropped first.
    public static let limit = 500

    /// The entries by ``PromptKind/historyName``, oldest first.
    private(set) var entries: [String: [String]] = [:]

    package init() {}

    /// The entries of `kind`, oldest first (none for a kind without history).
    package func entries(for kind: PromptKind) -> [String] {
        kind.historyName.flatMap { entries[$0] } ?? []
    }

    /// Adds `text` as `kind`'s newest entry; false (and nothing changes) when it is empty, equal to
    /// the newest entry, or `kind` keeps no history.
    /// - Complexity: O(1) amortised; O(``limit``) when the oldest entry is dropped.
    @discardableResult
    package mutating func add(_ text: String, for kind: PromptKind) -> Bool {
        guard let name = kind.historyName else { return false }
        return add(text, named: name)
    }

    fileprivate mutating func add(_ text: String, named name: String) -> Bool {
        guard !text.trimmingCharacters(in: " ").isEmpty, entries[name]?.last != text else { return false }
        entries[name, default: []].append(text)
        if let n = entries[name]?.count, n > Self.limit { entries[name]?.removeFirst(n - Self.limit) }
        return true
    }
}

/// Where Up and Down are in a prompt's history: `index` into the kind's entries (their count:
/// the line being typed), and that line, which comes back after the newest entry.
struct HistoryWalk: Sendable, Equatable {
    var index: Int
    var draft: String
}

/// The history file: one JSON object per line, `{"kind":"filter","text":"year > 2000"}`, oldest
/// first, in the state folder (`$XDG_STATE_HOME/faultline/history`). Read at start; written
/// whole (a temporary file renamed over it) when an entry is added, after reading it again, so
/// two browsers open at once both keep their entries.
package struct HistoryFile {
    package let path: String

    package init(path: String) { self.path = path }

    private struct Line: Codable {
        var kind: String
        var text: String
    }

    /// The history in the file, and what was wrong with it if anything (a missing file is empty
    /// history, not a problem; unreadable lines are skipped and counted).
    package func load() -> (history: PromptHistory, problem: String?) {
        guard FileManager.default.fileExists(atPath: path) else { return (PromptHistory(), nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return (PromptHistory(), "cannot read the prompt history \(TerminalText.escapingControlCharacters(path)): Up and Down recall this session only")
        }
        var history = PromptHistory()
        var bad = 0
        let decoder = JSONDecoder()
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let entry = try? decoder.decode(Line.self, from: Data(line)) else { bad += 1; continue }
            _ = history.add(entry.text, named: entry.kind)
        }
        let problem = bad == 0 ? nil
            : "the prompt history \(TerminalText.escapingControlCharacters(path)) has \(group(bad)) unreadable \(bad == 1 ? "line" : "lines"): skipped"
        return (history, problem)
    }

    /// Adds `text` to `kind`'s entries in the file (made, with its folder, if need be).
    /// - Throws: when the folder or the file cannot be written.
    package func add(_ text: String, for kind: PromptKind) throws {
        var history = load().history
        guard history.add(text, for: kind) else { return }
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = Data()
        for name in history.entries.keys.sorted() {
            for entry in history.entries[name] ?? [] {
                data.append(try encoder.encode(Line(kind: name, text: entry)))
                data.append(UInt8(ascii: "\n"))
            }
        }
        let temporary = folder + "/.history-\(ProcessInfo.processInfo.processIdentifier).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw HistoryFileError("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let why = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw HistoryFileError("cannot replace \(path): \(why)")
        }
    }
}

/// A failure to save the history, as one line.
struct HistoryFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
