import Foundation
import Testing
import TestSupport

/// Prompts in the real binary in a real terminal: editing with Alt keys, the mistyped filter
/// kept at its error's column, the history kept across two runs in the state folder.
@Suite("Prompts end to end, in tmux", .serialized, .tags(.tmux, .slow), .timeLimit(slowTestLimit))
struct PromptEndToEndTests {
    @Test("a mistyped filter comes back with the cursor on the typo, Alt-F and Ctrl-W fix it; the next run recalls both filters with Up")
    func historyAcrossRuns() throws {
        let scratch = TempDir()
        let db = try makeNumbers(scratch, count: 200)
        let state = scratch.path("state")
        let command = "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table n"
        do {
            let t = try Tmux(command: command, width: 80, height: 12, environment: ["XDG_STATE_HOME": state])
            try t.waitFor("row 1 of 200")
            try t.type("f")
            try t.type("v >= 10 AND nmae == 'row 7'")
            try t.send("Enter")
            var screen = try t.waitFor("n has no column named \"nmae\"")
            #expect(screen.contains { $0.hasPrefix("filter: v >= 10 AND nmae == 'row 7'") }, "the mistyped line is still on the prompt")
            #expect(try t.value("#{cursor_x} #{cursor_y}") == "\("filter: v >= 10 AND ".count) 11", "the cursor on the typo")
            // Alt-F past the word, Ctrl-W deletes it, the right name typed in its place.
            try t.send("M-f")
            try t.send("C-w")
            try t.type("name")
            try t.waitFor("filter: v >= 10 AND name == 'row 7'")
            try t.send("Enter")
            screen = try t.waitFor("row 1 of 1 │")
            #expect(screen.contains { $0.contains("filter: v >= 10 AND name == 'row 7'") })
            // A key with no meaning says so.
            try t.send("C-t")
            try t.waitFor("unknown key Ctrl-T: ? lists the keys")
            try t.type("q")
            #expect(try t.waitForExit().status == 0)
        }
        let history = try String(contentsOfFile: state + "/faultline/history", encoding: .utf8)
        #expect(history == """
            {"kind":"filter","text":"v >= 10 AND nmae == 'row 7'"}
            {"kind":"filter","text":"v >= 10 AND name == 'row 7'"}

            """)
        let t = try Tmux(command: command, width: 80, height: 12, environment: ["XDG_STATE_HOME": state])
        try t.waitFor("row 1 of 200")
        try t.type("f")
        try t.send("Up")
        try t.waitFor("filter: v >= 10 AND name == 'row 7'")
        try t.send("Up")
        try t.waitFor("filter: v >= 10 AND nmae == 'row 7'")
        try t.send("Down")
        try t.waitFor("filter: v >= 10 AND name == 'row 7'")
        try t.send("Enter")
        try t.waitFor("row 1 of 1 │")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }

    @Test("a lone Esc still closes a prompt at once; Esc then a key a moment later is not Alt")
    func loneEscape() throws {
        let scratch = TempDir()
        let db = try makeNumbers(scratch, count: 50)
        let t = try Tmux(command: "\(shellQuote(CLI.binary)) \(shellQuote(db)) --table n", width: 80, height: 12)
        try t.waitFor("row 1 of 50")
        try t.type("fv > 100")
        try t.waitFor("filter: v > 100")
        let started = Date()
        try t.send("Escape")
        var open = true
        while open, Date().timeIntervalSince(started) < 5 {
            open = try t.screen().contains { $0.hasPrefix("filter: v > 100") }
            if open { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(!open, "Esc closed the prompt")
        #expect(Date().timeIntervalSince(started) < 2, "at once, not after a long wait for a second key")
        try t.type("j")
        try t.waitFor("row 2 of 50")
        try t.type("q")
        #expect(try t.waitForExit().status == 0)
    }
}
