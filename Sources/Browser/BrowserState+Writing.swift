import BatchStore
import Foundation
import TerminalCore

extension BrowserState {
    /// `:w FILE` or `:w! FILE` typed at the `:` prompt: the result on screen written to FILE (nil
    /// when the text is not a write command, e.g. a row number).
    mutating func writeCommand(_ text: String) -> [Effect]? {
        let trimmed = text.trimmingCharacters(in: " ")
        let overwrite: Bool
        let rest: Substring
        if trimmed == "w" || trimmed == "w!" {
            say("usage: :w FILE (its extension names the format: .tsv .csv .json .ndjson .sql); :w! FILE overwrites", error: true)
            return []
        } else if trimmed.hasPrefix("w! ") {
            overwrite = true
            rest = trimmed.dropFirst(3)
        } else if trimmed.hasPrefix("w ") {
            overwrite = false
            rest = trimmed.dropFirst(2)
        } else {
            return nil
        }
        let path = Self.expandingTilde(String(rest).trimmingCharacters(in: " "), home: ProcessInfo.processInfo.environment["HOME"])
        guard sheet == .table else { say(":w writes a table's result: Esc goes back to it", error: true); return [] }
        guard let resultID else { say("no result to write yet: r loads it", error: true); return [] }
        say("writing \(TerminalText.escapingControlCharacters(path))…")
        return [.write(path: path, overwrite: overwrite, result: resultID)]
    }

    /// `:SELECT …` (or `WITH`, `VALUES`): the query's result as a new sheet over this one; nil
    /// for any other command.
    mutating func queryCommand(_ text: String) -> [Effect]? {
        let first = text.drop { $0 == " " }.prefix { $0.isLetter }.uppercased()
        guard ["SELECT", "WITH", "VALUES"].contains(first) else { return nil }
        say("running the query…")
        return [.openQuery(text)]
    }

    /// `~` and `~/…` from `home` (the `HOME` the user runs with, as the shell reads it; Foundation's
    /// `expandingTildeInPath` takes the account's home from the user database instead, so a
    /// `:w ~/x.csv` under another `HOME` wrote elsewhere); `~user/…` as Foundation expands it.
    package static func expandingTilde(_ path: String, home: String?) -> String {
        if let home, !home.isEmpty, path == "~" || path.hasPrefix("~/") {
            return home + path.dropFirst()
        }
        return (path as NSString).expandingTildeInPath
    }
}
