import Foundation

extension FetchPredicate {
    /// The predicate text that tests `key == value` in this language, with the value written as a
    /// literal that parses back to exactly `value`: `genre == "Drama"`, `year == 1999`,
    /// `rating == 7.5`, `genre == nil` for NULL, the key in backticks when it is not a plain name
    /// (a key `release year` is written in backticks before `== 2001`). Text is quoted with `\"`, `\\`, `\n`, `\t`, `\r`, `\0` and
    /// `\uXXXX` escapes, so no value from a file can end the literal or add to the predicate.
    ///
    /// With NSPredicate's semantics (see ``FetchPredicate``): numbers match numbers of equal value
    /// (the integer 1 and the real 1.0 alike, as SQLite's `GROUP BY` groups them), text matches
    /// text, nil matches NULL only.
    ///
    /// Returns nil for a value the language cannot write: a blob, or an infinite real.
    public static func equalityFormat(key: String, value: SQLValue) -> String? {
        guard let literal = literal(value) else { return nil }
        return "\(formatKey(key)) == \(literal)"
    }

    /// `value` as a literal of the predicate language, or nil for a blob or an infinite real.
    public static func literal(_ value: SQLValue) -> String? {
        switch value {
        case .null: return "nil"
        case .integer(let i): return String(i)
        case .real(let d):
            guard d.isFinite else { return nil }
            // Swift's shortest round-trip form; the lexer reads `1e-07` and `1e+300` as reals.
            let text = String(d)
            return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
        case .text(let s): return quoted(s)
        case .blob: return nil
        }
    }

    /// `key` as the predicate language reads one name: bare when it is a plain name that is not a
    /// keyword, else in backticks (a backtick doubled).
    public static func formatKey(_ key: String) -> String {
        let plain = key.first.map { $0.isASCII && ($0.isLetter || $0 == "_") } == true
            && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            && !Lexer.keywords.contains(key.uppercased())
            // A filter whose first word is WHERE is a SQL condition (``init(filter:)``).
            && key.uppercased() != "WHERE"
        return plain ? key : "`" + key.replacingOccurrences(of: "`", with: "``") + "`"
    }

    /// `"…"` with every character the lexer treats specially, and every control character, escaped.
    private static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\0": out += "\\0"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
                    || (0x2066...0x2069).contains(scalar.value) || scalar.value == 0x200E || scalar.value == 0x200F || scalar.value == 0x061C {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
