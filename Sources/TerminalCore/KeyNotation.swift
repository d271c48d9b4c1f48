/// Keys written as text, for scripts and pictures (`faultline snapshot --keys`): each character is
/// its key, and a name in angle brackets is a special key.
///
///     jjj<Enter>        three rows down, then Enter
///     fyear <lt> 2000<Enter>   a filter with a literal `<`
///     <C-d><PgDn><Esc>  Ctrl-D, Page Down, Escape
///     <M-b><C-w>        Alt-B (a word left in a prompt), Ctrl-W
///
/// Names (case-insensitive): `<Enter>` `<Esc>` `<Tab>` `<Space>` `<BS>` (Backspace) `<Del>`
/// `<Up>` `<Down>` `<Left>` `<Right>` `<PgUp>` `<PgDn>` `<Home>` `<End>` `<lt>` (a literal `<`)
/// `<C-x>` for Ctrl with a letter and `<M-x>` (or `<A-x>`) for Alt with a letter or digit. A `<` that does not open such a name (`a < b`) is itself.
public enum KeyNotation {
    /// What ``parse(_:)`` throws: an unknown name in angle brackets.
    public struct UnknownKey: Error, CustomStringConvertible, Equatable {
        public let name: String
        package init(name: String) { self.name = name }
        public var description: String {
            "unknown key <\(TerminalText.escapingControlCharacters(name))>; known: \(KeyNotation.names)"
        }
    }

    /// The names, as `--help` lists them.
    public static let names = "<Enter> <Esc> <Tab> <Space> <BS> <Del> <Up> <Down> <Left> <Right> <PgUp> <PgDn> <Home> <End> <lt> <C-x> <M-x>"

    private static let named: [String: Key] = [
        "enter": .enter, "return": .enter, "cr": .enter, "esc": .escape, "escape": .escape, "tab": .tab,
        "space": .char(" "), "bs": .backspace, "backspace": .backspace, "del": .delete, "delete": .delete,
        "up": .up, "down": .down, "left": .left, "right": .right,
        "pgup": .pageUp, "pageup": .pageUp, "pgdn": .pageDown, "pagedown": .pageDown,
        "home": .home, "end": .end, "lt": .char("<"),
    ]

    /// The keys `text` stands for.
    /// - Throws: ``UnknownKey`` for `<name>` with a name not in the list.
    /// - Complexity: O(n) in the characters of `text`.
    public static func parse(_ text: String) throws -> [Key] {
        let chars = Array(text)
        var keys: [Key] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == "<", let close = nameEnd(chars, from: i + 1) {
                let name = String(chars[(i + 1)..<close])
                keys.append(try key(named: name))
                i = close + 1
                continue
            }
            keys.append(.char(c))
            i += 1
        }
        return keys
    }

    /// The index of the `>` closing a name that starts at `start` (letters, digits and `-`), or nil.
    private static func nameEnd(_ chars: [Character], from start: Int) -> Int? {
        var j = start
        while j < chars.count, chars[j].isASCII, chars[j].isLetter || chars[j].isNumber || chars[j] == "-" { j += 1 }
        guard j > start, j < chars.count, chars[j] == ">" else { return nil }
        return j
    }

    private static func key(named name: String) throws -> Key {
        let lower = name.lowercased()
        if let key = named[lower] { return key }
        if lower.hasPrefix("c-"), lower.count == 3, let letter = lower.last, letter.isASCII, letter.isLetter {
            return .ctrl(letter)
        }
        if lower.hasPrefix("m-") || lower.hasPrefix("a-"), name.count == 3, let c = name.last, c.isASCII, c.isLetter || c.isNumber {
            return .alt(c)
        }
        throw UnknownKey(name: name)
    }

    /// `key` as messages and the help name it: `x`, `Ctrl-T`, `Alt-b`, `PgDn`; a control character
    /// typed as itself is escaped (`\e`), so the name is always safe to show.
    public static func displayName(_ key: Key) -> String {
        switch key {
        case .char(" "): return "Space"
        case .char(let c): return TerminalText.escapingControlCharacters(String(c))
        case .ctrl(let c): return "Ctrl-" + TerminalText.escapingControlCharacters(c.uppercased())
        case .alt(let c): return "Alt-" + TerminalText.escapingControlCharacters(String(c))
        case .up: return "Up"
        case .down: return "Down"
        case .left: return "Left"
        case .right: return "Right"
        case .pageUp: return "PgUp"
        case .pageDown: return "PgDn"
        case .home: return "Home"
        case .end: return "End"
        case .enter: return "Enter"
        case .escape: return "Esc"
        case .backspace: return "Backspace"
        case .tab: return "Tab"
        case .delete: return "Del"
        case .resize: return "resize"
        case .named(let name): return TerminalText.escapingControlCharacters(name)
        }
    }
}
