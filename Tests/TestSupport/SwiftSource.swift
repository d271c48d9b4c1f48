import Foundation

/// Swift source read just far enough for rules about its code: comments and the text of string
/// literals are blanked out (interpolated code stays), so a rule never fires on prose.
public struct SwiftSource {
    /// One place a rule fired.
    public struct Finding: Equatable, CustomStringConvertible, Sendable {
        public let line: Int
        public let column: Int
        public let what: String
        public var description: String { "\(line):\(column): \(what)" }
    }

    /// The code with every comment and literal character replaced by a space; line breaks kept,
    /// so lines and columns match the original.
    public let code: [Unicode.Scalar]

    public init(_ text: String) {
        var scanner = Scanner(Array(text.unicodeScalars))
        scanner.scanCode(until: nil)
        code = scanner.out
    }

    /// Force unwraps (`x!`, `f()!`, `a[i]!`), `try!`, `as!` and implicitly unwrapped optionals
    /// (`Int!`): a `!` right after a name, a closing bracket, `>` or `?`, not followed by `=`.
    /// Prefix `!` (negation) follows white space or an operator and `!=` is followed by `=`, so
    /// neither fires.
    public func forceUnwraps() -> [Finding] {
        var findings: [Finding] = []
        var line = 1, column = 0
        for (i, c) in code.enumerated() {
            column += 1
            if c == "\n" { line += 1; column = 0; continue }
            guard c == "!", i > 0 else { continue }
            let before = code[i - 1]
            let after: Unicode.Scalar = i + 1 < code.count ? code[i + 1] : " "
            guard after != "=" else { continue }
            guard Self.isNameScalar(before) || ")]}>?".unicodeScalars.contains(before) else { continue }
            var start = i
            while start > 0 && Self.isNameScalar(code[start - 1]) { start -= 1 }
            let word = String(String.UnicodeScalarView(code[start..<i]))
            let what: String
            switch word {
            case "try": what = "try!"
            case "as": what = "as!"
            default: what = "force unwrap or implicitly unwrapped optional"
            }
            findings.append(Finding(line: line, column: column, what: what))
        }
        return findings
    }

    static func isNameScalar(_ c: Unicode.Scalar) -> Bool {
        c == "_" || c.properties.isAlphabetic || ("0"..."9").contains(c)
    }

    private struct Scanner {
        let text: [Unicode.Scalar]
        var i = 0
        var out: [Unicode.Scalar] = []

        init(_ text: [Unicode.Scalar]) {
            self.text = text
            out.reserveCapacity(text.count)
        }

        func peek(_ offset: Int = 0) -> Unicode.Scalar? { i + offset < text.count ? text[i + offset] : nil }

        /// Copies one scalar as blank (a line break stays a line break).
        mutating func blank() {
            out.append(text[i] == "\n" ? "\n" : " ")
            i += 1
        }

        mutating func keep() {
            out.append(text[i])
            i += 1
        }

        /// Code up to `closer` (an interpolation's `)`) or the end, minding nested parentheses.
        mutating func scanCode(until closer: Unicode.Scalar?) {
            var depth = 0
            while let c = peek() {
                if c == "/" && peek(1) == "/" {
                    while let d = peek(), d != "\n" { _ = d; blank() }
                    continue
                }
                if c == "/" && peek(1) == "*" {
                    scanBlockComment()
                    continue
                }
                if c == "#" || c == "\"" {
                    var hashes = 0
                    while peek(hashes) == "#" { hashes += 1 }
                    if peek(hashes) == "\"" {
                        scanString(hashes: hashes)
                        continue
                    }
                }
                if let closer, c == closer && depth == 0 { return }
                if c == "(" { depth += 1 }
                if c == ")" { depth -= 1 }
                keep()
            }
        }

        mutating func scanBlockComment() {
            var depth = 0
            while peek() != nil {
                if peek() == "/" && peek(1) == "*" { depth += 1; blank(); blank(); continue }
                if peek() == "*" && peek(1) == "/" {
                    depth -= 1; blank(); blank()
                    if depth == 0 { return }
                    continue
                }
                blank()
            }
        }

        /// A string literal opened by `hashes` `#` and `"` or `"""`: its text blanked, the code of
        /// its interpolations (`\(…)`, `\#(…)` in raw strings) kept and scanned.
        mutating func scanString(hashes: Int) {
            for _ in 0..<hashes { keep() }
            let multiline = peek() == "\"" && peek(1) == "\"" && peek(2) == "\""
            let quotes = multiline ? 3 : 1
            for _ in 0..<quotes { keep() }
            while let c = peek() {
                if c == "\\" && (0..<hashes).allSatisfy({ peek(1 + $0) == "#" }) {
                    let afterHashes = peek(1 + hashes)
                    if afterHashes == "(" {
                        for _ in 0..<(1 + hashes) { blank() }
                        keep()   // (
                        scanCode(until: ")")
                        if peek() != nil { keep() }   // )
                        continue
                    }
                    // An escape: the backslash, its hashes and the escaped character are text.
                    for _ in 0..<(2 + hashes) where peek() != nil { blank() }
                    continue
                }
                if c == "\"" && (0..<quotes).allSatisfy({ peek($0) == "\"" }) && (0..<hashes).allSatisfy({ peek(quotes + $0) == "#" }) {
                    for _ in 0..<(quotes + hashes) { keep() }
                    return
                }
                if c == "\n" && !multiline { return }   // an unterminated literal: stop at the line end
                blank()
            }
        }
    }
}
