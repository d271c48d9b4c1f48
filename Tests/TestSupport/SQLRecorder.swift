import BatchStore
import Foundation

/// One statement a context ran, read as far as a test needs: its verb and whether, and where, it
/// writes. Reading skips comments, string literals and quoted names, so the shape is recognised
/// however the SQL is spaced or cased.
public struct SQLStatement: CustomStringConvertible, Sendable {
    /// The SQL as traced (arguments as `?`).
    public let sql: String
    /// The statement's first keyword, upper-cased (`SELECT`, `INSERT`, `BEGIN`, `PRAGMA`…); for
    /// `WITH …` the keyword after the common table expressions.
    public let verb: String
    /// True for INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP and ALTER.
    public let isWrite: Bool
    /// True when a write goes to the temp schema only: `CREATE TEMP…`, or a target named
    /// `temp.…` (quoted or not).
    public let isTempWrite: Bool

    public init(_ sql: String) {
        self.sql = sql
        let words = Self.words(sql)
        var verb = words.first ?? ""
        if verb == "WITH" {
            verb = words.dropFirst().first { ["SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "VALUES"].contains($0) } ?? "WITH"
        }
        self.verb = verb
        isWrite = ["INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER"].contains(verb)
        guard isWrite else { isTempWrite = false; return }
        if verb == "CREATE" && (words.dropFirst().first == "TEMP" || words.dropFirst().first == "TEMPORARY") {
            isTempWrite = true
            return
        }
        // The target is the first name after the clause words (INTO, FROM, TABLE, IF NOT EXISTS, OR …).
        let clause: Set<String> = ["INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "INTO", "FROM", "TABLE",
                                   "INDEX", "VIEW", "TRIGGER", "UNIQUE", "IF", "NOT", "EXISTS", "OR", "ABORT", "FAIL", "IGNORE", "ROLLBACK"]
        let afterVerb = words.drop { $0 != verb }.dropFirst()
        let target = afterVerb.first { !clause.contains($0) } ?? ""
        isTempWrite = target == "TEMP" || target.hasPrefix("TEMP.") || target == "\"TEMP\"" || target.hasPrefix("\"TEMP\".")
    }

    public var description: String { sql }

    /// Top-level words of `sql`, upper-cased: comments dropped, a string literal as `'…'`, a
    /// quoted name kept with its quotes, `schema.name` as one word, parenthesised text skipped.
    static func words(_ sql: String) -> [String] {
        var words: [String] = []
        var current = ""
        var depth = 0
        let chars = Array(sql.unicodeScalars)
        var i = 0
        func flush() { if !current.isEmpty { words.append(current.uppercased()); current = "" } }
        while i < chars.count {
            let c = chars[i]
            let next = i + 1 < chars.count ? chars[i + 1] : " "
            if c == "-" && next == "-" {
                while i < chars.count && chars[i] != "\n" { i += 1 }
                flush(); continue
            }
            if c == "/" && next == "*" {
                i += 2
                while i + 1 < chars.count && !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                i += 2; flush(); continue
            }
            if c == "'" || c == "\"" || c == "`" || c == "[" {
                // A literal or a quoted name, with doubled quotes inside.
                let close: Unicode.Scalar = c == "[" ? "]" : c
                var quoted = String(c)
                i += 1
                while i < chars.count {
                    if chars[i] == close {
                        if close != "]" && i + 1 < chars.count && chars[i + 1] == close { quoted.unicodeScalars.append(close); i += 2; continue }
                        break
                    }
                    quoted.unicodeScalars.append(chars[i]); i += 1
                }
                quoted.unicodeScalars.append(close)
                i += 1
                if depth == 0 { current += c == "'" ? "'…'" : quoted }
                continue
            }
            if c == "(" { flush(); depth += 1; i += 1; continue }
            if c == ")" { depth = max(0, depth - 1); i += 1; continue }
            if depth == 0 {
                if c.properties.isWhitespace || c == "," || c == ";" || c == "=" {
                    flush()
                } else {
                    current.unicodeScalars.append(c)
                }
            }
            i += 1
        }
        flush()
        return words
    }
}

/// The statements recorded while some code ran.
public struct SQLRecording: Sendable {
    public let statements: [SQLStatement]

    /// The statements whose verb is `verb` (`"SELECT"`, `"BEGIN"`…; any case).
    public func with(verb: String) -> [SQLStatement] { statements.filter { $0.verb == verb.uppercased() } }

    /// How many statements have the verb `verb`.
    public func count(_ verb: String) -> Int { with(verb: verb).count }

    /// Every write statement (INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP, ALTER).
    public var writes: [SQLStatement] { statements.filter(\.isWrite) }

    /// The writes that reach the main database (or an attached one), not just the temp schema.
    public var writesOutsideTemp: [SQLStatement] { statements.filter { $0.isWrite && !$0.isTempWrite } }

    /// The verbs in order, for a message.
    public var verbs: [String] { statements.map(\.verb) }
}

/// Runs `body` and records every statement it runs on `context`'s connection (through
/// ``ManagedObjectContext/traceSQL(_:)``); tracing stops when `body` returns or throws.
public func recordSQL<T>(on context: ManagedObjectContext, _ body: () throws -> T) throws -> (T, SQLRecording) {
    let box = StatementBox()
    try context.traceSQL { box.statements.append(SQLStatement($0)) }
    defer { try? context.traceSQL(nil) }
    let value = try body()
    return (value, SQLRecording(statements: box.statements))
}

private final class StatementBox: @unchecked Sendable {
    var statements: [SQLStatement] = []
}
