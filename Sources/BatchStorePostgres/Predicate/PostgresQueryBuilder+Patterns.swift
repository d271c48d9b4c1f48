import BatchStore
import Foundation

/// LIKE and MATCHES over PostgreSQL: NSPredicate's patterns (ICU's regular expressions) as
/// PostgreSQL's, or a refusal naming what would read differently.
extension PostgresQueryBuilder {
    /// An NSPredicate LIKE pattern (`*` any run, `?` one character, `\` makes the next one
    /// literal) as a PostgreSQL LIKE pattern with `\` as its escape; nil for a pattern that
    /// matches nothing (a `\` at its end).
    static func likePattern(_ pattern: String) -> String? {
        var out = ""
        var escaped = false
        for c in pattern.unicodeScalars {
            if escaped {
                if c == "%" || c == "_" || c == "\\" { out += "\\" }
                out.unicodeScalars.append(c)
                escaped = false
                continue
            }
            switch c {
            case "\\": escaped = true
            case "*": out += "%"
            case "?": out += "_"
            case "%", "_": out += "\\" + String(c)
            default: out.unicodeScalars.append(c)
            }
        }
        return escaped ? nil : out
    }

    /// MATCHES: the whole text matches the regular expression. The pattern must be a constant in
    /// the part of ICU's syntax (NSPredicate's) that PostgreSQL's regular expressions read the same
    /// way; see ``postgresRegex(_:)``.
    func matches(_ l: ExpressionNode, _ flags: Int, _ r: ExpressionNode) throws -> String {
        guard case .value(.text(let pattern)) = r else {
            throw BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL needs its pattern as a constant")
        }
        if let problem = SQLFunctions.validateRegex(pattern) { throw BatchStoreError(.invalidQuery, problem) }
        let folded = flags & 2 != 0 ? SQLFunctions.fold(pattern, flags: 2) : pattern
        if flags & 1 != 0, asciiCharacterClasses {
            throw BatchStoreError(.invalidQuery, "MATCHES[c] on PostgreSQL folds case by the database's locale, which is C (ASCII only) here; write the pattern for both cases, as in [Ee]lan, or compare lowercase(x)")
        }
        let regex = try Self.postgresRegex(folded, asciiCharacterClasses: asciiCharacterClasses)
        let lo = try operand(l)
        guard lo.kind == .text else { return "FALSE" }
        let subject = flags & 2 != 0 ? "pg_temp.bs_fold_d(\(lo.sql))" : lo.sql
        return "(\(subject) \(flags & 1 != 0 ? "~*" : "~") \(bind(.text(regex))))"
    }

    /// An ICU regular expression as a PostgreSQL one (ARE) that matches the same whole strings:
    /// wrapped in `^(?:…)$`, and `.` written as "any character but a line end", as ICU reads it
    /// (ARE's `.` matches a newline). Constructs the two read differently are refused by name:
    /// `\b` (a word boundary in ICU, a backspace in ARE), `\B`, `\A`, `\z`, `\Z`, `\G`, `\p{…}`,
    /// `\P{…}`, `\Q…\E`, `\h`, `\R`, `\X`, `\N`, possessive quantifiers, atomic groups, named
    /// groups and inline options. Where the database's character classes are ASCII only, so are
    /// `\w`, `\W`, `\d`, `\D`, `\s`, `\S` and `[:class:]`, which ICU reads over all of Unicode.
    static func postgresRegex(_ pattern: String, asciiCharacterClasses: Bool = false) throws -> String {
        let scalars = Array(pattern.unicodeScalars)
        var out = ""
        var i = 0
        var inBracket = false
        func refuseClass(_ what: String) -> BatchStoreError {
            BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL: \(what) in \(pattern.debugDescription) would match ASCII only (the database's character type is C); write the characters out, as in [0-9] or [A-Za-z]")
        }
        func refuse(_ what: String) -> BatchStoreError {
            BatchStoreError(.invalidQuery, "MATCHES on PostgreSQL: \(what) in \(pattern.debugDescription) means something else to PostgreSQL's regular expressions; write the pattern without it")
        }
        while i < scalars.count {
            let c = scalars[i]
            if c == "\\", i + 1 < scalars.count {
                let next = scalars[i + 1]
                if "bBAzZGpPQEhHRXNkvVx".unicodeScalars.contains(next) { throw refuse("\\\(next)") }
                if asciiCharacterClasses, "wWdDsS".unicodeScalars.contains(next) { throw refuseClass("\\\(next)") }
                out.unicodeScalars.append(c)
                out.unicodeScalars.append(next)
                i += 2
                continue
            }
            if inBracket {
                if c == "]" { inBracket = false }
                if c == "[" {
                    // A POSIX class, [:alpha:], reads the same in both; set operations do not.
                    guard i + 1 < scalars.count, scalars[i + 1] == ":",
                          let end = (i + 2..<scalars.count).first(where: { scalars[$0] == ":" && $0 + 1 < scalars.count && scalars[$0 + 1] == "]" }) else {
                        throw refuse("a nested character class")
                    }
                    let name = String(String.UnicodeScalarView(scalars[i...(end + 1)]))
                    if asciiCharacterClasses { throw refuseClass(name) }
                    out += name
                    i = end + 2
                    continue
                }
                out.unicodeScalars.append(c)
                i += 1
                continue
            }
            switch c {
            case "[":
                // ICU reads a top-level [:alpha:] as a class; PostgreSQL as the characters in it.
                if i + 1 < scalars.count, scalars[i + 1] == ":" { throw refuse("a [:class:] outside brackets") }
                inBracket = true
                out.unicodeScalars.append(c)
                // A ']' first in the class is a literal in both syntaxes; so is a '^' before it.
                if i + 1 < scalars.count, scalars[i + 1] == "^" { out += "^"; i += 1 }
                if i + 1 < scalars.count, scalars[i + 1] == "]" { out += "]"; i += 1 }
            case ".":
                out += "[^\\n\\v\\f\\r\\u0085\\u2028\\u2029]"
            case "(":
                if i + 1 < scalars.count, scalars[i + 1] == "?" {
                    let rest = String(String.UnicodeScalarView(scalars[(i + 2)...].prefix(2)))
                    if !(rest.hasPrefix(":") || rest.hasPrefix("=") || rest.hasPrefix("!") || rest == "<=" || rest == "<!") {
                        throw refuse("(?\(rest.prefix(1))")
                    }
                }
                out.unicodeScalars.append(c)
            case "$":
                // ICU's $ also matches before a final line end; PostgreSQL's only at the end.
                if i + 1 < scalars.count { throw refuse("a $ before the end of the pattern") }
                out.unicodeScalars.append(c)
            case "*", "+", "?", "}":
                out.unicodeScalars.append(c)
                if i + 1 < scalars.count, scalars[i + 1] == "+" { throw refuse("a possessive quantifier") }
            default:
                out.unicodeScalars.append(c)
            }
            i += 1
        }
        return "^(?:\(out))$"
    }
}
