/// A key press, decoded.
public enum Key: Sendable, Hashable {
    case char(Character)
    case ctrl(Character)
    /// Alt (Meta) with a character: the terminal sends ESC, then the character.
    case alt(Character)
    case up, down, left, right, pageUp, pageDown, home, end
    case enter, escape, backspace, tab, delete
    /// The terminal changed size.
    case resize
    /// A key with no use in the browser, by its name (`F1`, `Insert`, `Shift-Tab`): said to be
    /// unknown, as any other.
    case named(String)
}

/// Where frames go and keys come from: ncurses in the program, ``MemoryTerminal`` in tests and the
/// benchmark. Every system call for the screen lives behind this protocol.
public protocol TerminalBackend: AnyObject {
    /// The current size in cells.
    var size: (width: Int, height: Int) { get }
    /// Whether colours may be used (false under `NO_COLOR` or on a terminal without them).
    var colorsEnabled: Bool { get }
    /// Draws `frame`, sending only the cells that changed since the last frame.
    func present(_ frame: ScreenBuffer)
    /// The next key, waiting at most `timeoutMilliseconds` (nil: forever); nil on timeout.
    func nextKey(timeoutMilliseconds: Int?) -> Key?
    /// Puts text on the terminal's clipboard with OSC 52 (`ESC ] 52 ; c ; base64 BEL`); `base64`
    /// is the payload already base64-encoded, so no byte of it can be a control character.
    func setClipboard(base64: String)
    /// Throws away every key typed but not yet read (ncurses' `flushinp`): a question that has
    /// just appeared must not be answered by a key typed before it.
    func discardTypeAhead()
}

extension TerminalBackend {
    /// The OSC 52 sequence for `base64`, or nil when it holds anything but base64's alphabet.
    public static func osc52(base64: String) -> String? {
        guard base64.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 43 || $0 == 47 || $0 == 61 }) else { return nil }
        return "\u{1B}]52;c;" + base64 + "\u{07}"
    }
}

/// An in-memory terminal: keeps the screen as cells, takes keys from a queue, and counts the
/// cells each frame sends. Used by tests and by `faultline bench`.
public final class MemoryTerminal: TerminalBackend {
    public private(set) var screen: ScreenBuffer
    public var keys: [Key] = []
    public var colorsEnabled = true
    /// Cells sent by the last `present` and in total.
    public private(set) var lastCellsSent = 0
    public private(set) var totalCellsSent = 0
    public private(set) var framesPresented = 0
    /// Every OSC 52 sequence sent (``setClipboard(base64:)``), whole.
    public private(set) var clipboardSequences: [String] = []

    public init(width: Int, height: Int) {
        screen = ScreenBuffer(width: width, height: height)
    }

    public var size: (width: Int, height: Int) { (screen.width, screen.height) }

    /// Changes the size and queues the resize key, as a terminal would.
    public func resize(width: Int, height: Int) {
        screen = ScreenBuffer(width: width, height: height)
        keys.append(.resize)
    }

    private var previous: ScreenBuffer?

    public func present(_ frame: ScreenBuffer) {
        let runs = frame.changes(since: previous)
        lastCellsSent = runs.reduce(0) { $0 + $1.cells.count }
        totalCellsSent += lastCellsSent
        framesPresented += 1
        previous = frame
        screen = frame
    }

    public func nextKey(timeoutMilliseconds: Int?) -> Key? {
        keys.isEmpty ? nil : keys.removeFirst()
    }

    public func setClipboard(base64: String) {
        if let sequence = Self.osc52(base64: base64) { clipboardSequences.append(sequence) }
    }

    /// Keys thrown away by ``discardTypeAhead()``, in order (tests read them).
    public private(set) var discardedKeys: [Key] = []

    public func discardTypeAhead() {
        discardedKeys += keys.filter { $0 != .resize }
        // A resize is the terminal's, not the user's: it stays.
        keys.removeAll { $0 != .resize }
    }

    /// The screen as lines of text.
    public var lines: [String] { screen.lines }
}
