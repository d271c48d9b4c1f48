import TerminalCore

/// The line a prompt edits, readline-style: its text and a cursor, both in Characters (grapheme
/// clusters), so `é` written with a combining accent or a flag emoji moves and deletes as one.
///
/// Pure: keys change it (``apply(_:)``), ``view(room:)`` says what a line of some width shows
/// and where the terminal's cursor goes, measured in display columns.
public struct LineEditor: Sendable, Equatable {
    /// The text typed so far.
    public private(set) var text: String
    /// Characters before the cursor: `0...text.count`.
    public private(set) var cursor: Int

    /// `text` with the cursor after `cursor` characters (nil: at the end).
    public init(_ text: String = "", cursor: Int? = nil) {
        self.text = text
        self.cursor = min(max(0, cursor ?? text.count), text.count)
    }

    /// `text` with the cursor on the character that starts at 1-based Unicode-scalar `column`
    /// (how the predicate parser names a position); past the end, at the end.
    /// - Complexity: O(n) in the characters of `text`.
    public init(_ text: String, scalarColumn column: Int) {
        var scalars = 0
        var characters = 0
        for c in text {
            if scalars + c.unicodeScalars.count >= column { break }
            scalars += c.unicodeScalars.count
            characters += 1
        }
        self.init(text, cursor: characters)
    }

    private var characters: [Character] { Array(text) }

    /// Applies an editing key; false when `key` is not one (the prompt decides what it means).
    ///
    /// Left/Right, Ctrl-B/F: a character; Home/End, Ctrl-A/E: the ends; Alt-B/F: a word left /
    /// right; Backspace; Delete and Ctrl-D: the character under the cursor; Ctrl-W: the word
    /// before the cursor; Ctrl-K: to the end; Ctrl-U: to the start; a character is inserted.
    /// - Complexity: O(n) in the characters of the text.
    public mutating func apply(_ key: Key) -> Bool {
        switch key {
        case .left, .ctrl("b"): cursor = max(0, cursor - 1)
        case .right, .ctrl("f"): cursor = min(text.count, cursor + 1)
        case .home, .ctrl("a"): cursor = 0
        case .end, .ctrl("e"): cursor = text.count
        case .alt("b"), .alt("B"): cursor = wordStart(before: cursor)
        case .alt("f"), .alt("F"): cursor = wordEnd(after: cursor)
        case .backspace, .ctrl("h"):
            guard cursor > 0 else { return true }
            replace(cursor - 1..<cursor, with: "")
        case .delete, .ctrl("d"):
            guard cursor < text.count else { return true }
            replace(cursor..<cursor + 1, with: "")
        case .ctrl("w"):
            // As the shell's Ctrl-W: back over spaces, then over everything up to a space.
            let chars = characters
            var start = cursor
            while start > 0, chars[start - 1].isWhitespace { start -= 1 }
            while start > 0, !chars[start - 1].isWhitespace { start -= 1 }
            replace(start..<cursor, with: "")
        case .ctrl("k"): replace(cursor..<text.count, with: "")
        case .ctrl("u"): replace(0..<cursor, with: "")
        case .char(let c): insert(String(c))
        default: return false
        }
        return true
    }

    /// Inserts `s` at the cursor and puts the cursor after it.
    public mutating func insert(_ s: String) {
        replace(cursor..<cursor, with: s)
    }

    /// Replaces the characters in `range` with `s`; the cursor goes after `s`.
    private mutating func replace(_ range: Range<Int>, with s: String) {
        var chars = characters
        chars.replaceSubrange(range, with: Array(s))
        let before = String(chars[..<(range.lowerBound)]) + s
        text = String(chars)
        // A combining mark typed after a letter joins it: count what the text holds now.
        cursor = min(before.count, text.count)
    }

    /// A word is letters, digits and `_` (readline's Alt-B / Alt-F).
    private static func isWord(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }

    private func wordStart(before i: Int) -> Int {
        let chars = characters
        var j = i
        while j > 0, !Self.isWord(chars[j - 1]) { j -= 1 }
        while j > 0, Self.isWord(chars[j - 1]) { j -= 1 }
        return j
    }

    private func wordEnd(after i: Int) -> Int {
        let chars = characters
        var j = i
        while j < chars.count, !Self.isWord(chars[j]) { j += 1 }
        while j < chars.count, Self.isWord(chars[j]) { j += 1 }
        return j
    }

    /// What a line `room` columns wide shows of the text (control characters escaped) and the
    /// column of the cursor in it. A text longer than the line scrolls by half a line at a time
    /// so the cursor stays on screen; `…` at either end marks text that is cut off.
    /// - Complexity: O(n) in the characters of the text (times the pages scrolled).
    public func view(room: Int) -> (text: String, cursor: Int) {
        guard room >= 3 else { return ("", 0) }
        let cells = characters.map { (shown: TerminalText.escapingControlCharacters(String($0)), width: TerminalText.width(of: $0)) }
        var prefix = [0]
        for cell in cells { prefix.append(prefix[prefix.count - 1] + cell.width) }
        let total = prefix[cells.count]
        // Everything fits, with a cell for the cursor after the last character.
        if total < room { return (cells.map(\.shown).joined(), prefix[cursor]) }
        // The first character shown: the first past a multiple of half the line.
        let step = max(1, room / 2)
        var first = 0
        var page = 0
        while first < cursor, (first > 0 ? 1 : 0) + prefix[cursor] - prefix[first] > room - 2 {
            page += 1
            while first < cursor, prefix[first] < page * step { first += 1 }
        }
        var out = first > 0 ? "…" : ""
        var used = first > 0 ? 1 : 0
        var i = first
        while i < cells.count, used + cells[i].width <= room - (i + 1 < cells.count ? 1 : 0) {
            out += cells[i].shown
            used += cells[i].width
            i += 1
        }
        if i < cells.count { out += "…" }
        return (out, (first > 0 ? 1 : 0) + prefix[cursor] - prefix[first])
    }
}
