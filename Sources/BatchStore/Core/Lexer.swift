import Foundation

/// A token of the predicate and expression language, with its 1-based column.
struct Token: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        case string(String)
        case integer(Int64)
        case real(Double)
        case symbol(String)
        case keyword(String) // uppercased
        case modifier(Int) // [c] = 1, [d] = 2, [cd] = 3
        case objectPlaceholder // %@
        case keyPlaceholder // %K
        case end
    }
    let kind: Kind
    let column: Int

    var text: String {
        switch kind {
        case .identifier(let s): return s
        case .string(let s): return "\"\(s)\""
        case .integer(let v): return String(v)
        case .real(let v): return String(v)
        case .symbol(let s): return s
        case .keyword(let s): return s
        case .modifier(let f): return ["[]", "[c]", "[d]", "[cd]"][f & 3]
        case .objectPlaceholder: return "%@"
        case .keyPlaceholder: return "%K"
        case .end: return "end of input"
        }
    }
}

/// Splits predicate or expression text into tokens. Never traps: bad input becomes a `.syntax` error
/// naming the column.
///
/// The text is read as Unicode scalars, not grapheme clusters (as NSPredicate's parser reads
/// UTF-16 units): a quote followed by a combining mark still opens a string literal, and columns
/// count scalars.
struct Lexer {
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "BETWEEN", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES",
        "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "TRUE", "FALSE", "YES", "NO",
        "ANY", "ALL", "SOME", "NONE", "SUBQUERY",
    ]

    static func tokenize(_ text: String, what: String = "predicate") throws -> [Token] {
        let chars = Array(text.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        func fail(_ column: Int, _ message: String) -> BatchStoreError {
            BatchStoreError(.syntax, "\(what) error at column \(column): \(message)", column: column)
        }
        while i < chars.count {
            let c = chars[i]
            let column = i + 1
            if c.properties.isWhitespace { i += 1; continue }
            // Strings
            if c == "\"" || c == "'" {
                var s = String.UnicodeScalarView()
                var j = i + 1
                var closed = false
                while j < chars.count {
                    let d = chars[j]
                    if d == c { closed = true; j += 1; break }
                    if d == "\\" {
                        guard j + 1 < chars.count else { break }
                        let e = chars[j + 1]
                        switch e {
                        case "n": s.append("\n")
                        case "t": s.append("\t")
                        case "r": s.append("\r")
                        case "0": s.append("\0")
                        case "u":
                            let hex = String(String.UnicodeScalarView(chars[min(j + 2, chars.count)..<min(j + 6, chars.count)]))
                            guard hex.unicodeScalars.count == 4, hex.allSatisfy(\.isHexDigit), let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else {
                                throw fail(j + 1, "expected four hex digits after \\u")
                            }
                            s.append(scalar)
                            j += 4
                        default: s.append(e)
                        }
                        j += 2
                        continue
                    }
                    s.append(d)
                    j += 1
                }
                if !closed { throw fail(column, "unterminated string starting here") }
                tokens.append(Token(kind: .string(String(s)), column: column))
                i = j
                continue
            }
            // Numbers
            if c.isDigit || (c == "." && i + 1 < chars.count && chars[i + 1].isDigit) {
                var j = i
                if c == "0", i + 1 < chars.count, chars[i + 1] == "x" || chars[i + 1] == "X" {
                    j = i + 2
                    while j < chars.count, chars[j].isHexDigit { j += 1 }
                    guard let v = Int64(string(chars, (i + 2)..<j), radix: 16) else { throw fail(column, "bad hexadecimal number") }
                    tokens.append(Token(kind: .integer(v), column: column))
                    i = j
                    continue
                }
                var isReal = false
                while j < chars.count, chars[j].isDigit { j += 1 }
                if j < chars.count, chars[j] == "." , j + 1 >= chars.count || chars[j + 1] != "." {
                    isReal = true
                    j += 1
                    while j < chars.count, chars[j].isDigit { j += 1 }
                }
                if j < chars.count, chars[j] == "e" || chars[j] == "E" {
                    var k = j + 1
                    if k < chars.count, chars[k] == "+" || chars[k] == "-" { k += 1 }
                    if k < chars.count, chars[k].isDigit {
                        isReal = true
                        j = k
                        while j < chars.count, chars[j].isDigit { j += 1 }
                    }
                }
                let literal = string(chars, i..<j)
                if !isReal, let v = Int64(literal) {
                    tokens.append(Token(kind: .integer(v), column: column))
                } else if let v = Double(literal), v.isFinite {
                    tokens.append(Token(kind: .real(v), column: column))
                } else {
                    throw fail(column, "number \(literal) is out of range")
                }
                if j < chars.count, chars[j].isLetter || chars[j].isDigit { throw fail(j + 1, "unexpected '\(chars[j])' after a number") }
                i = j
                continue
            }
            // Backtick-quoted identifier: any spelling, `` doubles a backtick.
            if c == "`" {
                var s = String.UnicodeScalarView()
                var j = i + 1
                var closed = false
                while j < chars.count {
                    if chars[j] == "`" {
                        if j + 1 < chars.count, chars[j + 1] == "`" { s.append("`"); j += 2; continue }
                        closed = true
                        j += 1
                        break
                    }
                    s.append(chars[j])
                    j += 1
                }
                if !closed { throw fail(column, "unterminated `quoted name` starting here") }
                tokens.append(Token(kind: .identifier(String(s)), column: column))
                i = j
                continue
            }
            // Identifiers and keywords; '#' escapes a keyword used as a name (NSPredicate's rule).
            if c.isLetter || c == "_" || c == "#" || c == "$" {
                var j = c == "#" ? i + 1 : i
                let start = j
                while j < chars.count, chars[j].continuesName { j += 1 }
                let word = string(chars, start..<j)
                if word.isEmpty { throw fail(column, "expected a name after '#'") }
                if c != "#", keywords.contains(word.uppercased()) {
                    tokens.append(Token(kind: .keyword(word.uppercased()), column: column))
                } else {
                    tokens.append(Token(kind: .identifier(word), column: column))
                }
                i = j
                continue
            }
            if c == "%" {
                if i + 1 < chars.count, chars[i + 1] == "@" { tokens.append(Token(kind: .objectPlaceholder, column: column)); i += 2; continue }
                if i + 1 < chars.count, chars[i + 1] == "K" { tokens.append(Token(kind: .keyPlaceholder, column: column)); i += 2; continue }
                tokens.append(Token(kind: .symbol("%"), column: column))
                i += 1
                continue
            }
            if c == "[" {
                var j = i + 1
                var flags = 0
                while j < chars.count, chars[j] != "]" {
                    switch chars[j] {
                    case "c", "C": flags |= 1
                    case "d", "D": flags |= 2
                    case "n", "N", "l", "L": break
                    default: throw fail(j + 1, "expected c, d or cd inside [ ]")
                    }
                    j += 1
                }
                if j >= chars.count { throw fail(column, "unterminated [ modifier") }
                tokens.append(Token(kind: .modifier(flags), column: column))
                i = j + 1
                continue
            }
            let two = i + 1 < chars.count ? string(chars, i..<(i + 2)) : ""
            if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||", "**"].contains(two) {
                let normalized = ["=<": "<=", "=>": ">="][two] ?? two
                tokens.append(Token(kind: .symbol(normalized), column: column))
                i += 2
                continue
            }
            if "=<>!+-*/(){},.".unicodeScalars.contains(c) {
                tokens.append(Token(kind: .symbol(String(c)), column: column))
                i += 1
                continue
            }
            throw fail(column, "unexpected character \(String(c).debugDescription)")
        }
        tokens.append(Token(kind: .end, column: chars.count + 1))
        return tokens
    }
}

private func string(_ scalars: [Unicode.Scalar], _ range: Range<Int>) -> String {
    String(String.UnicodeScalarView(scalars[range]))
}

private extension Unicode.Scalar {
    var isDigit: Bool { ("0"..."9").contains(self) }
    var isHexDigit: Bool { isDigit || ("a"..."f").contains(self) || ("A"..."F").contains(self) }
    var isLetter: Bool { properties.isAlphabetic }
    /// Letters, digits, `_`, `$` and combining marks continue a name.
    var continuesName: Bool {
        if isLetter || self == "_" || self == "$" || properties.numericType != nil { return true }
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }
}
