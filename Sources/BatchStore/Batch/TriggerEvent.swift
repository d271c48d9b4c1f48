import Foundation

/// The event a SQLite trigger fires on, read from its `CREATE TRIGGER` text: `DELETE`, `INSERT`,
/// or `UPDATE` (with the columns of `UPDATE OF`, empty for any column).
enum TriggerEvent: Equatable {
    case delete, insert
    case update(columns: [String])

    /// True when the trigger's body holds a statement that writes (INSERT, UPDATE, DELETE,
    /// REPLACE); false for one that only checks (`SELECT RAISE(…)`). True when unreadable.
    static func bodyWrites(sql: String) -> Bool {
        let tokens = Self.tokens(sql)
        guard let begin = tokens.firstIndex(where: { !$0.quoted && $0.text.uppercased() == "BEGIN" }) else { return true }
        return tokens[begin...].contains { !$0.quoted && ["INSERT", "UPDATE", "DELETE", "REPLACE"].contains($0.text.uppercased()) }
    }

    /// Reads `CREATE [TEMP|TEMPORARY] TRIGGER [IF NOT EXISTS] [schema.]name [BEFORE|AFTER|INSTEAD OF]
    /// event ON …`; nil when the text does not have that shape.
    init?(sql: String) {
        var tokens = Self.tokens(sql).makeIterator()
        func next() -> String? { tokens.next()?.text }
        func word(_ token: String?) -> String? { token.map { $0.uppercased() } }
        guard word(next()) == "CREATE" else { return nil }
        var token = word(next())
        if token == "TEMP" || token == "TEMPORARY" { token = word(next()) }
        guard token == "TRIGGER" else { return nil }
        var name = next()
        if word(name) == "IF" {
            guard word(next()) == "NOT", word(next()) == "EXISTS" else { return nil }
            name = next()
        }
        guard name != nil else { return nil }
        token = next()
        if token == "." { _ = next(); token = next() }
        var event = word(token)
        switch event {
        case "BEFORE", "AFTER": event = word(next())
        case "INSTEAD":
            guard word(next()) == "OF" else { return nil }
            event = word(next())
        default: break
        }
        switch event {
        case "DELETE": self = .delete
        case "INSERT": self = .insert
        case "UPDATE":
            var columns: [String] = []
            if word(next()) == "OF" {
                while let column = next() {
                    columns.append(column)
                    let separator = next()
                    if separator != "," { break }
                }
                guard !columns.isEmpty else { return nil }
            }
            self = .update(columns: columns)
        default: return nil
        }
    }

    /// The text's tokens: words (quoted names and strings unquoted, and marked), and single
    /// punctuation characters; comments and white space skipped.
    static func tokens(_ sql: String) -> [(text: String, quoted: Bool)] {
        let chars = Array(sql)
        var tokens: [(text: String, quoted: Bool)] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            if c == "-", i + 1 < chars.count, chars[i + 1] == "-" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
                continue
            }
            if c == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                i += 2
                while i + 1 < chars.count, !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                i += 2
                continue
            }
            if let close = ["\"": "\"", "`": "`", "[": "]", "'": "'"][String(c)] {
                var text = ""
                i += 1
                while i < chars.count {
                    if String(chars[i]) == close {
                        // A doubled quote is one quote character (not in [brackets]).
                        if close != "]", i + 1 < chars.count, String(chars[i + 1]) == close { text.append(chars[i]); i += 2; continue }
                        break
                    }
                    text.append(chars[i])
                    i += 1
                }
                i += 1
                tokens.append((text, true))
                continue
            }
            if c.isLetter || c.isNumber || c == "_" || c == "$" || !c.isASCII {
                var text = ""
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "$" || !chars[i].isASCII { text.append(chars[i]); i += 1 }
                tokens.append((text, false))
                continue
            }
            tokens.append((String(c), false))
            i += 1
        }
        return tokens
    }
}
