/// Text from a database made safe to show on a terminal.
///
/// Values and names are untrusted: a title can hold ESC sequences that recolour, retitle or
/// rewrite the screen, or bidi overrides that disguise text. Everything that is not printable is
/// shown as a visible escape instead of being sent.
public enum TerminalText {
    /// Replaces C0 and C1 control characters, DEL, and bidi embedding/override/isolate characters
    /// with visible escapes: `\n`, `\t`, `\r`, `\e` for ESC, `\xNN` for other controls,
    /// `\u{202E}` for bidi controls. Printable text (including CJK, emoji, combining marks) is kept.
    /// - Complexity: O(n) in the unicode scalars of `s`.
    /// Rows of tab-separated or comma-separated output for a terminal: control characters in each
    /// line escaped, the line ends themselves (LF, or CRLF) and tabs kept. Lines are split on the
    /// scalar LF, not the Character: `"\r\n"` is one Character, which a split on `"\n"` never finds.
    public static func escapingControlCharactersKeepingLines(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for (i, line) in s.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if i > 0 { out.append("\n") }
            let crlf = line.last == "\r"
            let body = crlf ? line.dropLast() : line[...]
            for (j, field) in body.split(separator: "\t", omittingEmptySubsequences: false).enumerated() {
                if j > 0 { out.append("\t") }
                out.append(contentsOf: escapingControlCharacters(String(String.UnicodeScalarView(field))).unicodeScalars)
            }
            if crlf { out.append("\r") }
        }
        return String(out)
    }

    public static func escapingControlCharacters(_ s: String) -> String {
        // Fast path: nothing to escape.
        if !s.unicodeScalars.contains(where: needsEscape) { return s }
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            guard needsEscape(scalar) else { out.append(scalar); continue }
            let visible: String
            switch scalar.value {
            case 0x0A: visible = "\\n"
            case 0x09: visible = "\\t"
            case 0x0D: visible = "\\r"
            case 0x1B: visible = "\\e"
            case 0x00...0x1F, 0x7F...0x9F: visible = "\\x" + hex(scalar.value, width: 2)
            default: visible = "\\u{" + hex(scalar.value, width: 4) + "}"
            }
            out.append(contentsOf: visible.unicodeScalars)
        }
        return String(out)
    }

    /// True for scalars that must never reach a terminal as they are.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        default: return false
        }
    }

    private static func hex(_ v: UInt32, width: Int) -> String {
        let digits = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension TerminalText {
    /// True when any scalar of `c` must be escaped.
    public static func needsEscape(_ c: Character) -> Bool {
        if let v = c.asciiValue { return v < 0x20 || v == 0x7F }
        return c.unicodeScalars.contains(where: { needsEscape($0) })
    }
}
