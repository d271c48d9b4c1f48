extension TerminalText {
    /// How many terminal columns `c` takes: 0 for combining marks and zero-width characters, 2 for
    /// East Asian wide and fullwidth characters and emoji shown as emoji, 1 otherwise. Control
    /// characters count as the width of their visible escape.
    /// - Complexity: O(scalars in `c`).
    public static func width(of c: Character) -> Int {
        if c.isASCII {
            guard let v = c.asciiValue else { return 2 }   // "\r\n" is one Character
            return v < 0x20 || v == 0x7F ? escapingControlCharacters(String(c)).count : 1
        }
        var scalars = c.unicodeScalars.makeIterator()
        guard let first = scalars.next() else { return 0 }
        if needsEscape(first) { return escapingControlCharacters(String(c)).count }
        var width = width(of: first)
        while let s = scalars.next() {
            if s.value == 0xFE0F, width == 1, first.properties.isEmoji { width = 2 }  // emoji presentation selector
            if needsEscape(s) { width += escapingControlCharacters(String(s)).count }
        }
        return width
    }

    /// Columns taken by `s` as shown (after escaping).
    public static func width(of s: String) -> Int {
        var total = 0
        for c in s { total += width(of: c) }
        return total
    }

    /// The width of one scalar on its own, as wcwidth(3) would answer for a UTF-8 locale.
    public static func width(of s: Unicode.Scalar) -> Int {
        let v = s.value
        if v < 0x300 { return 1 }
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if v == 0x200B || (0x1160...0x11FF).contains(v) { return 0 }
        if s.properties.isEmojiPresentation { return 2 }
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// `s` in lines of at most `width` columns, broken at spaces where it can be (a word wider
    /// than a line is broken where the line ends); the spaces at a break are dropped.
    public static func wrapWords(_ s: String, width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        var line = ""
        var used = 0
        for word in s.split(separator: " ", omittingEmptySubsequences: false) {
            let w = word.reduce(0) { $0 + self.width(of: $1) }
            if used > 0, used + 1 + w <= width {
                line += " " + word
                used += 1 + w
                continue
            }
            if used > 0 || !line.isEmpty { lines.append(line) }
            line = ""
            used = 0
            for c in word {
                let cw = self.width(of: c)
                if used + cw > width, used > 0 { lines.append(line); line = ""; used = 0 }
                line.append(c)
                used += cw
            }
        }
        lines.append(line)
        return lines
    }

    /// `s` cut to at most `width` columns; when cut, its last column is an ellipsis.
    public static func truncate(_ s: String, toWidth width: Int) -> String {
        guard width > 0 else { return "" }
        var used = 0
        var out = ""
        for c in s {
            let w = self.width(of: c)
            if used + w > width {
                while used + 1 > width, let last = out.popLast() { used -= self.width(of: last) }
                return out + "…"
            }
            out.append(c)
            used += w
        }
        return out
    }
}
