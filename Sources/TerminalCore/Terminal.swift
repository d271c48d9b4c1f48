/// A key press, decoded.
public enum Key: Sendable, Hashable {
    case char(Character)
    case ctrl(Character)
    case up, down, left, right, pageUp, pageDown, home, end
    case enter, escape, backspace, tab, delete
    /// The terminal changed size.
    case resize
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

    /// The screen as lines of text.
    public var lines: [String] { screen.lines }
}
