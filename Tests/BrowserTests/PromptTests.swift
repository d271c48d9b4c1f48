import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// The line editor every prompt uses, its history per prompt kind (kept in a file), the mistyped
/// line brought back at the error's column, and unknown keys.
@Suite("Prompts: line editing, history, mistyped lines, unknown keys")
struct PromptTests {
    func edited(_ text: String, cursor: Int? = nil, _ keys: [Key]) -> LineEditor {
        var line = LineEditor(text, cursor: cursor)
        for key in keys {
            let handled = line.apply(key)
            #expect(handled, "\(key) is an editing key")
        }
        return line
    }

    @Test("the editor: moves, inserts at the cursor, deletes either side, words, kills to either end")
    func editing() {
        #expect(edited("", keys("abc")) == LineEditor("abc", cursor: 3))
        #expect(edited("abc", [.left, .left, .char("X")]) == LineEditor("aXbc", cursor: 2))
        #expect(edited("abc", [.home, .char(">")]) == LineEditor(">abc", cursor: 1))
        #expect(edited("abc", [.ctrl("a"), .ctrl("f"), .ctrl("e"), .ctrl("b")]) == LineEditor("abc", cursor: 2))
        #expect(edited("abc", [.home, .left, .end, .right]) == LineEditor("abc", cursor: 3), "the ends stop the cursor")
        #expect(edited("abc", cursor: 1, [.backspace]) == LineEditor("bc", cursor: 0))
        #expect(edited("abc", cursor: 1, [.delete]) == LineEditor("ac", cursor: 1))
        #expect(edited("abc", cursor: 1, [.ctrl("d")]) == LineEditor("ac", cursor: 1))
        #expect(edited("abc", cursor: 0, [.backspace]) == LineEditor("abc", cursor: 0))
        #expect(edited("abc", [.delete]) == LineEditor("abc", cursor: 3))
        // Ctrl-W: the word before the cursor, and the spaces after it, as the shell does.
        #expect(edited("year > 2000 AND ", [.ctrl("w")]) == LineEditor("year > 2000 ", cursor: 12))
        #expect(edited("title == \"x y\"", cursor: 9, [.ctrl("w")]) == LineEditor("title \"x y\"", cursor: 6))
        #expect(edited("year > 2000", cursor: 6, [.ctrl("k")]) == LineEditor("year >", cursor: 6))
        #expect(edited("year > 2000", cursor: 7, [.ctrl("u")]) == LineEditor("2000", cursor: 0))
        // Alt-B / Alt-F: words of letters, digits and _.
        #expect(edited("rating >= 7.5 AND votes", [.alt("b")]) == LineEditor("rating >= 7.5 AND votes", cursor: 18))
        #expect(edited("rating >= 7.5 AND votes", [.alt("b"), .alt("b"), .alt("b")]) == LineEditor("rating >= 7.5 AND votes", cursor: 12))
        #expect(edited("director_id == 3", cursor: 0, [.alt("f")]) == LineEditor("director_id == 3", cursor: 11))
        #expect(edited("director_id == 3", cursor: 11, [.alt("f")]) == LineEditor("director_id == 3", cursor: 16))
        var line = LineEditor("x")
        let handled = [Key.tab, .up, .enter].map { line.apply($0) }
        #expect(handled == [false, false, false] && line == LineEditor("x"), "not editing keys: the prompt decides")
    }

    @Test("the editor counts Characters: a combining accent, a flag and CJK move and delete as one; a column in scalars lands on its Character")
    func graphemes() {
        let text = "e\u{301}🇫🇷東x"   // é (two scalars), a flag (two scalars), a wide CJK character, x
        #expect(edited(text, [.left, .left, .backspace]) == LineEditor("e\u{301}東x", cursor: 1))
        #expect(edited(text, cursor: 0, [.delete]) == LineEditor("🇫🇷東x", cursor: 0))
        // Scalar columns as the parser counts them: é is 1–2, the flag 3–4, 東 5, x 6.
        #expect(LineEditor(text, scalarColumn: 1).cursor == 0)
        #expect(LineEditor(text, scalarColumn: 3).cursor == 1)
        #expect(LineEditor(text, scalarColumn: 5).cursor == 2)
        #expect(LineEditor(text, scalarColumn: 6).cursor == 3)
        #expect(LineEditor(text, scalarColumn: 60).cursor == 4)
        // Display columns: é 1, the flag 2, 東 2.
        #expect(LineEditor(text, cursor: 3).view(room: 40) == (text: text, cursor: 5) as (text: String, cursor: Int))
        // A control character is shown escaped and counts as its escape's width.
        #expect(LineEditor("a\u{1B}b").view(room: 40) == (text: "a\\eb", cursor: 4) as (text: String, cursor: Int))
    }

    @Test("a line longer than the prompt scrolls by half a line; the cursor stays on screen; … marks the cut ends")
    func scrolling() {
        let text = String(repeating: "abcdefghij", count: 5)   // 50 columns
        let end = LineEditor(text).view(room: 20)
        #expect(end.cursor < 20 && end.text.hasPrefix("…") && end.text.hasSuffix("hij"))
        #expect(TerminalText.width(of: end.text) <= 20)
        let home = LineEditor(text, cursor: 0).view(room: 20)
        #expect(home.cursor == 0 && home.text.hasSuffix("…") && home.text.hasPrefix("abcdefghij") && TerminalText.width(of: home.text) == 20)
        for cursor in 0...50 {
            let view = LineEditor(text, cursor: cursor).view(room: 20)
            #expect(view.cursor >= 0 && view.cursor <= 18 && TerminalText.width(of: view.text) <= 20, "cursor \(cursor): \(view)")
            // The character under the cursor is the one shown at the cursor's column.
            if cursor < 50 {
                let shown = Array(view.text)
                #expect(view.cursor < shown.count && shown[view.cursor] == Array(text)[cursor], "cursor \(cursor): \(view)")
            }
        }
        let wide = LineEditor(String(repeating: "東", count: 30)).view(room: 21)
        #expect(wide.cursor <= 19 && TerminalText.width(of: wide.text) <= 21)
    }

    func opened(width: Int = 60, height: Int = 8) -> BrowserState {
        var s = BrowserState(width: width, height: height)
        _ = s.reduce(.opened(table: "movie", columns: ["id", "title", "year"], filter: "", sort: nil, count: 10, cursor: 0, readOnly: nil, message: nil))
        _ = s.reduce(.windowLoaded(start: 0, rows: (0..<10).map { RowSnapshot(id: nil, values: [.text("\($0 + 1)"), .text("t\($0)"), .text("2000")], exists: true) }))
        return s
    }

    func press(_ s: inout BrowserState, _ keys: [Key]) -> [Effect] {
        var effects: [Effect] = []
        for key in keys { effects += s.reduce(.key(key)) }
        return effects
    }

    @Test("every editing key works in a prompt; the terminal's cursor sits on the editor's; Ctrl-D on an empty line closes it")
    func promptKeys() {
        var s = opened()
        _ = press(&s, [.char("f")] + keys("year > 2000") + [.alt("b"), .ctrl("k"), .backspace, .backspace] + keys("<= 1999"))
        #expect(s.mode == .prompt(.filter, line: LineEditor("year <= 1999", cursor: 12)))
        _ = press(&s, [.home, .alt("f"), .ctrl("w")] + keys("rating") + [.ctrl("e"), .backspace, .backspace, .backspace, .backspace] + keys("7.5"))
        #expect(s.mode == .prompt(.filter, text: "rating <= 7.5"))
        _ = press(&s, [.left, .left, .left])
        let screen = render(s, colors: false)
        #expect(screen.lines.last?.hasPrefix("filter: rating <= 7.5") == true)
        #expect(screen.cursor?.x == "filter: rating <= ".count && screen.cursor?.y == 7, "the cursor on the 7")
        _ = press(&s, [.ctrl("u")])
        #expect(s.mode == .prompt(.filter, line: LineEditor("7.5", cursor: 0)))
        _ = press(&s, [.ctrl("k"), .ctrl("d")])
        #expect(s.mode == .grid, "Ctrl-D on an empty line closes the prompt, as Esc does")
        // Every prompt that takes a line edits it: the search and the column prompts too.
        _ = press(&s, [.char("/")] + keys("t3") + [.home, .delete] + keys("T"))
        #expect(s.mode == .prompt(.search, line: LineEditor("T3", cursor: 1)))
        _ = press(&s, [.escape, .char("c")] + keys("yr") + [.left] + keys("ea"))
        #expect(s.mode == .prompt(.column, line: LineEditor("year", cursor: 3)))
        // A key no prompt uses is named, and the prompt stays as it was.
        _ = press(&s, [.pageDown])
        #expect(s.mode == .prompt(.column, line: LineEditor("year", cursor: 3)))
        #expect(s.messageIsError && s.message == "unknown key PgDn in a prompt: Enter runs the line, Esc cancels (then ? lists the keys)")
    }

    @Test("a whole screen with a prompt: the wide text placed by display width, the cursor where the editor's is, an error above the prompt")
    func wholeScreen() {
        var s = opened(width: 40, height: 6)
        _ = press(&s, [.char("f")] + keys("title == \"東京\" AND yaer > 1") + [.enter])
        _ = s.reduce(.failedAt("movie has no column named \"yaer\" (column 19)", column: 19))
        let screen = render(s, colors: false)
        let lines = screen.lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
        #expect(lines == [
            "  #  id title year",
            "  1  1  t0    2000",
            "  2  2  t1    2000",
            "  3  3  t2    2000",
            " movie has no column named \"yaer\" (colum",
            "filter: title == \"東京\" AND yaer > 1",
        ], "\(lines)")
        // 東京 are two columns each: the cursor is on the y of yaer.
        #expect(screen.cursor?.x == "filter: title == \"".count + 4 + "\" AND ".count && screen.cursor?.y == 5)
        #expect(s.mode == .prompt(.filter, line: LineEditor("title == \"東京\" AND yaer > 1", cursor: 18)))
    }

    @Test("Up and Down walk the kind's own history; the line being typed comes back after the newest; Enter adds without repeats")
    func historyWalk() {
        var s = opened()
        var effects = press(&s, [.char("f")] + keys("year > 1") + [.enter])
        #expect(effects.last == .saveHistory(kind: .filter, text: "year > 1"))
        _ = s.reduce(.opened(table: "movie", columns: ["id", "title", "year"], filter: "year > 1", sort: nil, count: 10, cursor: 0, readOnly: nil, message: nil))
        effects = press(&s, [.char("f"), .ctrl("u")] + keys("year > 2") + [.enter])
        #expect(effects.contains(.saveHistory(kind: .filter, text: "year > 2")))
        effects = press(&s, [.char("f"), .ctrl("u")] + keys("year > 2") + [.enter])
        #expect(!effects.contains(.saveHistory(kind: .filter, text: "year > 2")), "the same entry twice in a row is kept once")
        effects = press(&s, [.char("f"), .ctrl("u"), .enter])
        #expect(!effects.contains { if case .saveHistory = $0 { return true } else { return false } }, "an empty line is not kept")
        _ = press(&s, [.char("/")] + keys("t4") + [.enter])
        #expect(s.history.entries(for: .filter) == ["year > 1", "year > 2"])
        #expect(s.history.entries(for: .search) == ["t4"])
        // Walking: Up, Up, past the oldest (stays), Down, Down back to the draft.
        _ = press(&s, [.char("f"), .ctrl("u")] + keys("draft"))
        _ = press(&s, [.up])
        #expect(s.mode == .prompt(.filter, text: "year > 2"))
        _ = press(&s, [.up, .up])
        #expect(s.mode == .prompt(.filter, text: "year > 1") && s.message == "no earlier filter in the history")
        _ = press(&s, [.down])
        #expect(s.mode == .prompt(.filter, text: "year > 2"))
        _ = press(&s, [.down])
        #expect(s.mode == .prompt(.filter, text: "draft"), "the line being typed comes back")
        _ = press(&s, [.escape, .char("/"), .up])
        #expect(s.mode == .prompt(.search, text: "t4"), "the search prompt walks the searches only")
        // The one-key prompts keep none.
        var one = PromptHistory()
        let added = [one.add("1", for: .referencing), one.add("t", for: .copyRows)]
        #expect(added == [false, false] && one.entries(for: .referencing).isEmpty)
    }

    @Test("each kind keeps at most 500 entries, the oldest dropped first")
    func historyBound() {
        var h = PromptHistory()
        var added = 0
        for i in 0..<(PromptHistory.limit + 20) where h.add("id == \(i)", for: .filter) { added += 1 }
        #expect(added == PromptHistory.limit + 20)
        let entries = h.entries(for: .filter)
        #expect(entries.count == PromptHistory.limit && entries.first == "id == 20" && entries.last == "id == \(PromptHistory.limit + 19)")
    }

    @Test("the history file: one JSON line per entry, written by renaming a whole new file, read back; control characters stay data")
    func historyFile() throws {
        let dir = TempDir()
        let path = dir.path("state/faultline/history")
        let file = HistoryFile(path: path)
        #expect(file.load().history == PromptHistory() && file.load().problem == nil, "no file: empty, not a problem")
        #expect(!FileManager.default.fileExists(atPath: path), "reading never creates it")
        try file.add("year > 2000", for: .filter)
        try file.add("title == \"a\u{1B}[31mb\"", for: .filter)
        try file.add("t", for: .search)
        try file.add("t", for: .search)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 3)
        #expect(text.contains(#"{"kind":"filter","text":"year > 2000"}"#))
        #expect(!text.unicodeScalars.contains("\u{1B}"), "escaped in JSON")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("state/faultline")) == ["history"], "no temporary file left")
        let (history, problem) = file.load()
        #expect(problem == nil)
        #expect(history.entries(for: .filter) == ["year > 2000", "title == \"a\u{1B}[31mb\""])
        #expect(history.entries(for: .search) == ["t"])
    }

    @Test("a corrupt history file is read as far as it goes, said once, and never stops the browser")
    func corruptHistory() throws {
        let dir = TempDir()
        let db = try makeNumbers(dir, count: 5)
        let path = dir.path("history")
        try Data("{\"kind\":\"filter\",\"text\":\"v > 10\"}\nnot json\n\u{00}\u{FF}garbage\n{\"kind\":\"filter\"}\n".utf8).write(to: URL(fileURLWithPath: path))
        var options = BrowserOptions(table: "n")
        options.historyPath = path
        let (b, term) = try makeBrowser(db, options: options)
        #expect(b.state.count == 5)
        #expect(b.state.messageIsError && b.state.message == "the prompt history \(path) has 3 unreadable lines: skipped")
        b.send([.char("f"), .up])
        #expect(b.state.mode == .prompt(.filter, text: "v > 10"))
        #expect(term.text.last == "filter: v > 10")
        // A history path that is a folder: said, and the browser works.
        let folder = dir.path("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        options.historyPath = folder
        let (c, _) = try makeBrowser(db, options: options)
        #expect(c.state.count == 5 && c.state.message?.hasPrefix("cannot read the prompt history") == true)
        c.send([.char("f")] + keys("v > 20") + [.enter])
        #expect(c.state.count == 3)
        #expect(c.state.message?.hasPrefix("the prompt history was not saved") == true)
    }

    @Test("two browsers on one history file: what the first entered, the second recalls with Up")
    func historyAcrossRuns() throws {
        let dir = TempDir()
        let db = try makeNumbers(dir, count: 50)
        var options = BrowserOptions(table: "n")
        options.historyPath = dir.path("state/faultline/history")
        do {
            let (b, _) = try makeBrowser(db, options: options)
            b.send([.char("f")] + keys("v >= 400") + [.enter])
            #expect(b.state.count == 11)
            b.send([.char(":")] + keys("7") + [.enter])
            b.send(.char("q"))
        }
        let (b, term) = try makeBrowser(db, options: options)
        b.send([.char("f"), .up])
        #expect(term.text.last == "filter: v >= 400")
        b.send([.escape, .char(":"), .up])
        #expect(term.text.last == ":7")
        // Without a history path nothing is read or written.
        let (c, _) = try makeBrowser(db, options: BrowserOptions(table: "n"))
        c.send([.char("f"), .up])
        #expect(c.state.mode == .prompt(.filter, text: ""))
    }

    @Test("a filter, assignments or :w that fail come back to fix: the text kept, the cursor at the error's column, the error shown")
    func mistypedKept() throws {
        let dir = TempDir()
        let db = try makeNumbers(dir, count: 20)
        let (b, term) = try makeBrowser(db, options: BrowserOptions(table: "n"))
        b.send([.char("f")] + keys("v > 10 AND nmae == 'x'") + [.enter])
        #expect(b.state.mode == .prompt(.filter, line: LineEditor("v > 10 AND nmae == 'x'", cursor: 11)))
        #expect(term.text[term.text.count - 2].contains("n has no column named \"nmae\""), "\(term.text)")
        #expect(term.text.last == "filter: v > 10 AND nmae == 'x'")
        #expect(term.screen.cursor?.x == "filter: v > 10 AND ".count)
        // Fixed in place: the typo gone, Enter runs it.
        b.send([.delete, .delete, .delete, .delete] + keys("name") + [.enter])
        #expect(b.state.mode == .grid && b.state.count == 0 && b.state.filter == "v > 10 AND name == 'x'")
        // A syntax error: the cursor at the column the parser names.
        b.send([.char("f"), .ctrl("u")] + keys("v > > 3") + [.enter])
        #expect(b.state.mode == .prompt(.filter, line: LineEditor("v > > 3", cursor: 4)), "\(b.state.message ?? "")")
        b.send(.escape)
        #expect(b.state.mode == .grid && b.state.filter == "v > 10 AND name == 'x'", "Esc leaves the result as it was")
        // Assignments.
        b.send([.char("f"), .ctrl("u"), .enter])
        b.send([.char("U")] + keys("v = v +* 2") + [.enter])
        #expect(b.state.mode == .prompt(.assignments, line: LineEditor("v = v +* 2", cursor: 7)), "\(b.state.message ?? "")")
        #expect(b.state.messageIsError)
        b.send(.escape)
        // :w to a folder that does not exist.
        b.send([.char(":")] + keys("w \(dir.path("no/such/x.csv"))") + [.enter])
        #expect(b.state.mode == .prompt(.goToRow, text: "w \(dir.path("no/such/x.csv"))") && b.state.messageIsError)
        // A not-found search is not a typo: the prompt closes.
        b.send([.escape, .char("l"), .char("/")] + keys("nothing like it") + [.enter])
        #expect(b.state.mode == .grid)
    }

    @Test("unknown keys say so, name the key escaped, and point to ?; keys refused on a sheet keep their reason")
    func unknownKeys() {
        var s = opened()
        _ = press(&s, [.ctrl("t")])
        #expect(s.messageIsError && s.message == "unknown key Ctrl-T: ? lists the keys")
        _ = press(&s, [.alt("x")])
        #expect(s.message == "unknown key Alt-x: ? lists the keys")
        // Function keys and the like, by name (they cleared the message line and said nothing).
        for name in ["F1", "F5", "Insert", "Shift-Tab"] {
            _ = press(&s, [.named(name)])
            #expect(s.messageIsError && s.message == "unknown key \(name): ? lists the keys", "\(s.message ?? "")")
        }
        _ = press(&s, [.char("/")])
        _ = press(&s, [.named("F1")])
        #expect(s.mode == .prompt(.search, text: "") && s.message?.hasPrefix("unknown key F1 in a prompt") == true, "\(s.message ?? "")")
        _ = press(&s, [.escape])
        _ = press(&s, [.char("\u{1B}")])
        #expect(s.message == "unknown key \\e: ? lists the keys")
        _ = press(&s, [.tab])
        #expect(s.message == "unknown key Tab: ? lists the keys")
        _ = press(&s, [.char("j")])
        #expect(s.message == nil && s.cursorRow == 1, "a known key still moves, and clears the message")
        // The table list.
        var picker = BrowserState(width: 60, height: 8)
        _ = picker.reduce(.tablesListed([TableEntry(name: "movie", isView: false, count: 3)]))
        _ = picker.reduce(.key(.char("z")))
        #expect(picker.message == "unknown key z: ? lists the keys")
        // A record.
        _ = s.reduce(.textLoaded(TextSheet(purpose: .record(row: 1), title: "Row 2", fields: [TextField(name: "id", value: .integer(2))])))
        _ = press(&s, [.ctrl("t")])
        #expect(s.message == "Ctrl-T does nothing on a record: j/k and the page keys scroll, Esc or q goes back; ? lists the keys")
    }

    @Test("key notation: <M-x> and <A-x> are Alt; names for messages")
    func notation() throws {
        #expect(try KeyNotation.parse("<M-b><A-f><C-w>x") == [.alt("b"), .alt("f"), .ctrl("w"), .char("x")])
        #expect(throws: KeyNotation.UnknownKey.self) { try KeyNotation.parse("<M-bb>") }
        #expect(KeyNotation.displayName(.alt("b")) == "Alt-b")
        #expect(KeyNotation.displayName(.ctrl("w")) == "Ctrl-W")
        #expect(KeyNotation.displayName(.pageDown) == "PgDn")
        #expect(KeyNotation.displayName(.char("\u{7F}")) == "\\x7F")
        #expect(KeyNotation.names.contains("<M-x>"))
    }
}
