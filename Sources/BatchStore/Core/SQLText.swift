import Foundation

/// One lexeme of SQL text, as SQLite reads it: a word (a keyword, a name or a number), a quoted
/// name, a string, a comment, a parameter or one byte of punctuation. White space is not a lexeme;
/// the text between two lexemes' ranges is white space.
package struct SQLLexeme: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// Letters, digits, `_`, `$` and any non-ASCII byte: `SELECT`, `year`, `1990`, `1e3`.
        case word
        /// `"name"`, `` `name` `` or `[name]`.
        case quotedName
        /// `'text'` (`''` inside it is one quote).
        case string
        /// `-- …` to the line's end, or `/* … */`.
        case comment
        /// `?`, `?NNN`, `:name`, `@name`, `#name`, `$name` (a `$` inside a word is a letter).
        case parameter
        /// Any other byte that is not white space: `(`, `)`, `;`, `=`, `.`, `,` ….
        case symbol
    }

    package var kind: Kind
    /// The lexeme's UTF-8 bytes in the text, quotes included.
    package var range: Range<Int>
    /// False for a string, quoted name or `/*` comment that runs to the end of the text unclosed.
    package var isClosed: Bool
}

/// The one reading of SQL text's lexemes that every check of a query or condition shares (which
/// words a query holds, where its `?` parameters are, where a condition's parentheses close).
package struct SQLText: Sendable {
    package let bytes: [UInt8]
    package let lexemes: [SQLLexeme]

    package init(_ text: String) {
        self.init(bytes: Array(text.utf8))
    }

    package init(bytes: [UInt8]) {
        self.bytes = bytes
        self.lexemes = Self.read(bytes)
    }

    /// SQLite's white space: space, tab, line feed, form feed, carriage return.
    package static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) && b != 0x0B }

    /// A byte of a word: ASCII letters and digits, `_`, `$`, and every byte of a non-ASCII character.
    package static func isWordByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x5F || b == 0x24 || b >= 0x80
    }

    /// The lexeme's text as written (quotes included).
    package func text(of lexeme: SQLLexeme) -> String {
        String(decoding: bytes[lexeme.range], as: UTF8.self)
    }

    /// A quoted name's name (its quotes removed, a doubled quote inside read as one); a word's text.
    package func name(of lexeme: SQLLexeme) -> String {
        guard lexeme.kind == .quotedName, lexeme.range.count >= 1 else { return text(of: lexeme) }
        let open = bytes[lexeme.range.lowerBound]
        let close: UInt8 = open == 0x5B ? 0x5D : open
        let end = lexeme.isClosed ? lexeme.range.upperBound - 1 : lexeme.range.upperBound
        var name: [UInt8] = []
        var i = lexeme.range.lowerBound + 1
        while i < end {
            name.append(bytes[i])
            i += close != 0x5D && bytes[i] == close ? 2 : 1
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// The character (not byte) index of UTF-8 byte `byte`, counted from 0.
    package func characterOffset(ofByte byte: Int) -> Int {
        String(decoding: bytes[..<min(byte, bytes.count)], as: UTF8.self).count
    }

    /// Where a variable starting at `start` (`$`, `#`, `:` or `@`) ends, as SQLite's tokenizer
    /// reads it; nil when no name follows (then SQLite reads no variable there either).
    private static func variableEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var i = start + 1, n = 0
        while i < bytes.count {
            let c = bytes[i]
            if isWordByte(c) {
                n += 1
                i += 1
            } else if c == 0x28, n > 0 {
                repeat { i += 1 } while i < bytes.count && !isSpace(bytes[i]) && bytes[i] != 0x29
                if i < bytes.count, bytes[i] == 0x29 { i += 1 }
                break
            } else if c == 0x3A, i + 1 < bytes.count, bytes[i + 1] == 0x3A {
                i += 2
            } else {
                break
            }
        }
        return n > 0 ? i : nil
    }

    private static func read(_ bytes: [UInt8]) -> [SQLLexeme] {
        var out: [SQLLexeme] = []
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            let start = i
            var kind = SQLLexeme.Kind.symbol
            var closed = true
            if isSpace(b) {
                i += 1
                continue
            } else if b == 0x2D, i + 1 < n, bytes[i + 1] == 0x2D {
                kind = .comment
                while i < n, bytes[i] != 0x0A { i += 1 }
            } else if b == 0x2F, i + 1 < n, bytes[i + 1] == 0x2A {
                kind = .comment
                i += 2
                while i + 1 < n, !(bytes[i] == 0x2A && bytes[i + 1] == 0x2F) { i += 1 }
                closed = i + 1 < n
                i = min(n, i + 2)
            } else if b == 0x27 || b == 0x22 || b == 0x60 || b == 0x5B {
                kind = b == 0x27 ? .string : .quotedName
                let close: UInt8 = b == 0x5B ? 0x5D : b
                i += 1
                closed = false
                while i < n {
                    if bytes[i] == close {
                        if close != 0x5D, i + 1 < n, bytes[i + 1] == close { i += 2; continue }
                        i += 1
                        closed = true
                        break
                    }
                    i += 1
                }
            } else if b == 0x24 || b == 0x23 || b == 0x3A || b == 0x40, let end = variableEnd(bytes, from: i) {
                // SQLite's `$name`, `#name`, `:name`, `@name`, with its Tcl forms `$a::b` and
                // `$a(…)` (to the first `)` or white space: a quote inside is no quote).
                kind = .parameter
                i = end
            } else if isWordByte(b) {
                kind = .word
                while i < n, isWordByte(bytes[i]) { i += 1 }
            } else if b == 0x3F {
                kind = .parameter
                i += 1
                while i < n, (0x30...0x39).contains(bytes[i]) { i += 1 }
            } else {
                i += 1
            }
            out.append(SQLLexeme(kind: kind, range: start..<i, isClosed: closed))
        }
        return out
    }
}
