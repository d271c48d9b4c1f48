import TerminalCore
import Testing

@Suite struct TerminalTextTests {
    /// Export's rows on a terminal: CSV's CRLF and TSV's LF line ends and tabs stay, controls inside
    /// values are escaped.
    @Test func rowsKeepTheirLineEndsAndTabs() {
        #expect(TerminalText.escapingControlCharactersKeepingLines("id,v\r\n1,\u{1B}[31m\r\n") == "id,v\r\n1,\\e[31m\r\n")
        #expect(TerminalText.escapingControlCharactersKeepingLines("a\tb\u{7}\nc\t\n") == "a\tb\\x07\nc\t\n")
        #expect(TerminalText.escapingControlCharactersKeepingLines("x\ry\n") == "x\\ry\n", "a CR inside a line is a value's")
        #expect(TerminalText.escapingControlCharactersKeepingLines("") == "")
    }

    @Test func controlSequencesBecomeVisible() {
        #expect(TerminalText.escapingControlCharacters("plain 東京 🎬 e\u{301}") == "plain 東京 🎬 e\u{301}")
        #expect(TerminalText.escapingControlCharacters("\u{1B}[2J\u{1B}]0;pwned\u{07}") == "\\e[2J\\e]0;pwned\\x07")
        #expect(TerminalText.escapingControlCharacters("a\nb\tc\r") == "a\\nb\\tc\\r")
        #expect(TerminalText.escapingControlCharacters("c1 \u{9B}31m del \u{7F} nul \u{0}") == "c1 \\x9B31m del \\x7F nul \\x00")
        #expect(TerminalText.escapingControlCharacters("abc\u{202E}fdp.exe") == "abc\\u{202E}fdp.exe")
        let escaped = TerminalText.escapingControlCharacters("\u{1B}\u{9B}\u{07}\u{90}\u{9D}\u{9C}")
        #expect(!escaped.unicodeScalars.contains(where: TerminalText.needsEscape))
    }
}
