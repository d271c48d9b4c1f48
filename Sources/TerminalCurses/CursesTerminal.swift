import CNCurses
import Glibc
import TerminalCore

/// The ncurses backend: the real terminal, through ncursesw's wide-character API.
///
/// It keeps the previous frame and sends only the cells that changed (ncurses then optimises the
/// bytes). The terminal is restored on ``close()``, and by signal handlers on SIGINT, SIGTERM,
/// SIGHUP and crash signals, which restore the saved terminal modes with async-signal-safe calls
/// and then let the signal take its default course.
public final class CursesTerminal: TerminalBackend {
    public let colorsEnabled: Bool
    private var previous: ScreenBuffer?
    private var pairs: [UInt16: Int16] = [:]
    private var closed = false

    /// Why the browser cannot start on this terminal.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Takes over the terminal (alternate screen, raw keys, no echo).
    /// - Throws: ``Unavailable`` when stdin or stdout is not a terminal or TERM is unknown.
    public init(environment: [String: String]) throws {
        guard isatty(0) == 1, isatty(1) == 1 else {
            throw Unavailable(description: "the browser needs a terminal (stdin and stdout must be a tty); use `faultline export` in scripts")
        }
        setlocale(LC_ALL, "")
        if let codeset = nl_langinfo(nl_item(CODESET)), String(cString: codeset) != "UTF-8" {
            _ = setlocale(LC_CTYPE, "C.UTF-8")
        }
        SignalRestore.install()
        guard let screen = fl_newterm_stdio() else {
            SignalRestore.uninstall()
            throw Unavailable(description: "cannot start the terminal (TERM=\(environment["TERM"] ?? "unset") is unknown?)")
        }
        set_term(screen)
        raw()
        noecho()
        nonl()
        keypad(fl_stdscr(), true)
        set_escdelay(25)
        curs_set(0)
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
        if !noColor && has_colors() {
            start_color()
            use_default_colors()
            colorsEnabled = true
        } else {
            colorsEnabled = false
        }
        SignalRestore.installCrashHandlers()
    }

    deinit { close() }

    /// Gives the terminal back (leaves the alternate screen, restores modes).
    public func close() {
        guard !closed else { return }
        closed = true
        endwin()
        SignalRestore.uninstall()
    }

    public var size: (width: Int, height: Int) { (Int(fl_cols()), Int(fl_lines())) }

    /// Writes the OSC 52 sequence straight to the terminal (base64 only: nothing else is sent).
    public func setClipboard(base64: String) {
        guard let sequence = Self.osc52(base64: base64) else { return }
        // After the frame (ncurses flushes its own output in present): the sequence alone.
        let bytes = Array(sequence.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress.map { $0 + written }, bytes.count - written) }
            if n < 0 { if errno == EINTR { continue } else { return } }
            written += n
        }
    }

    /// Drops the key read ahead and everything the terminal has queued (`flushinp`).
    public func discardTypeAhead() {
        pending = nil
        flushinp()
    }

    public func present(_ frame: ScreenBuffer) {
        if previous?.width != frame.width || previous?.height != frame.height { clearok(fl_stdscr(), true) }
        var buffer: [wchar_t] = []
        buffer.reserveCapacity(frame.width * 2)
        for run in frame.changes(since: previous) {
            var x = run.x
            var i = 0
            while i < run.cells.count {
                let style = run.cells[i].style
                buffer.removeAll(keepingCapacity: true)
                let startX = x
                while i < run.cells.count, run.cells[i].style == style {
                    for s in run.cells[i].text.unicodeScalars { buffer.append(wchar_t(bitPattern: s.value)) }
                    x += 1
                    i += 1
                }
                apply(style)
                buffer.append(0)
                _ = buffer.withUnsafeBufferPointer { mvaddnwstr(Int32(run.y), Int32(startX), $0.baseAddress, Int32(buffer.count - 1)) }
            }
        }
        attrset(Int32(fl_a_normal()))
        if let c = frame.cursor {
            curs_set(1)
            move(Int32(c.y), Int32(c.x))
        } else {
            curs_set(0)
        }
        refresh()
        previous = frame
    }

    private func apply(_ style: Style) {
        var attrs = fl_a_normal()
        if style.bold { attrs |= fl_a_bold() }
        if style.reverse { attrs |= fl_a_reverse() }
        if style.underline { attrs |= fl_a_underline() }
        if style.dim { attrs |= fl_a_dim() }
        var pair: Int16 = 0
        if colorsEnabled, style.foreground != .default || style.background != .default {
            let key = UInt16(style.foreground.rawValue) << 8 | UInt16(style.background.rawValue)
            if let p = pairs[key] {
                pair = p
            } else if pairs.count + 1 < Int(fl_color_pairs()) {
                pair = Int16(pairs.count + 1)
                init_pair(pair, Self.curses(style.foreground), Self.curses(style.background))
                pairs[key] = pair
            }
        }
        attr_set(attrs, pair, nil)
    }

    private static func curses(_ c: Color) -> Int16 {
        switch c {
        case .default: return -1
        case .black: return Int16(COLOR_BLACK)
        case .red: return Int16(COLOR_RED)
        case .green: return Int16(COLOR_GREEN)
        case .yellow: return Int16(COLOR_YELLOW)
        case .blue: return Int16(COLOR_BLUE)
        case .magenta: return Int16(COLOR_MAGENTA)
        case .cyan: return Int16(COLOR_CYAN)
        case .white: return Int16(COLOR_WHITE)
        }
    }

    /// A key read after an ESC that was not Alt's second half: the next call returns it.
    private var pending: Key?

    /// The next key. ESC followed at once by a printable character (the bytes an Alt key sends,
    /// which arrive together) is ``Key/alt(_:)``; a lone Esc is Esc after ncurses' own ESCDELAY
    /// (25 ms) and no more: the character after it is looked for without waiting.
    public func nextKey(timeoutMilliseconds: Int?) -> Key? {
        if let key = pending {
            pending = nil
            return key
        }
        timeout(Int32(timeoutMilliseconds ?? -1))
        let key = readKey()
        guard key == .escape else { return key }
        timeout(0)
        switch readKey() {
        case nil:
            return .escape
        case .char(let c)? where !TerminalText.needsEscape(c):
            return .alt(c)
        case let other?:
            // Esc, then another key (Esc Esc, Esc then an arrow): both, in order.
            pending = other
            return .escape
        }
    }

    private func readKey() -> Key? {
        var ch: wint_t = 0
        let r = wget_wch(fl_stdscr(), &ch)
        if r == ERR { return nil }
        if r == fl_key_code_yes() {
            switch Int32(ch) {
            case KEY_UP: return .up
            case KEY_DOWN: return .down
            case KEY_LEFT: return .left
            case KEY_RIGHT: return .right
            case KEY_NPAGE: return .pageDown
            case KEY_PPAGE: return .pageUp
            case KEY_HOME: return .home
            case KEY_END: return .end
            case KEY_ENTER: return .enter
            case KEY_BACKSPACE: return .backspace
            case KEY_DC: return .delete
            case KEY_RESIZE:
                previous = nil
                return .resize
            case KEY_IC: return .named("Insert")
            case KEY_BTAB: return .named("Shift-Tab")
            case KEY_F0 + 1...KEY_F0 + 63: return .named("F\(Int32(ch) - KEY_F0)")
            default: return .named("key \(ch)")
            }
        }
        switch ch {
        case 13, 10: return .enter
        case 27: return .escape
        case 127, 8: return .backspace
        case 9: return .tab
        case 1...26: return .ctrl(Character(Unicode.Scalar(UInt8(ch) + 0x60)))
        default:
            guard let scalar = Unicode.Scalar(UInt32(ch)) else { return nil }
            return .char(Character(scalar))
        }
    }
}

/// Terminal restoration from signal handlers, using only async-signal-safe calls.
enum SignalRestore {
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var haveSaved = false
    static let fatalSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP]
    static let endSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func install() {
        haveSaved = tcgetattr(0, &saved) == 0
    }

    static func installCrashHandlers() {
        for sig in fatalSignals + endSignals {
            signal(sig) { sig in
                SignalRestore.restoreNow()
                signal(sig, SIG_DFL)
                raise(sig)
            }
        }
    }

    static func uninstall() {
        for sig in fatalSignals + endSignals { signal(sig, SIG_DFL) }
    }

    /// Leaves the alternate screen, shows the cursor, resets attributes, restores terminal modes.
    static func restoreNow() {
        let reset: StaticString = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l\r\n"
        _ = write(1, reset.utf8Start, reset.utf8CodeUnitCount)
        if haveSaved { _ = tcsetattr(0, TCSANOW, &saved) }
    }
}
