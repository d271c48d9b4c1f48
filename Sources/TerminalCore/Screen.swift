/// A colour from the terminal's 8-colour palette, or its default.
public enum Color: UInt8, Sendable, Hashable {
    case `default`, black, red, green, yellow, blue, magenta, cyan, white
}

/// How a cell looks.
public struct Style: Sendable, Hashable {
    public var foreground: Color
    public var background: Color
    public var bold: Bool
    public var reverse: Bool
    public var underline: Bool
    public var dim: Bool

    public init(foreground: Color = .default, background: Color = .default, bold: Bool = false,
                reverse: Bool = false, underline: Bool = false, dim: Bool = false) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.reverse = reverse
        self.underline = underline
        self.dim = dim
    }

    public static let plain = Style()
    public static let reversed = Style(reverse: true)

    /// The same style without colours (for `NO_COLOR`): attributes stay.
    public var withoutColor: Style { Style(bold: bold, reverse: reverse, underline: underline, dim: dim) }
}

/// One terminal cell: one grapheme (already sanitised) or the right half of a wide one.
public struct Cell: Sendable, Hashable {
    /// The grapheme shown; empty for the continuation of a wide grapheme.
    public var text: String
    public var style: Style
    public init(_ text: String = " ", style: Style = .plain) {
        self.text = text
        self.style = style
    }
    public static let blank = Cell()
    public var isContinuation: Bool { text.isEmpty }
}

/// A rectangle on the screen, in cells.
public struct Rect: Sendable, Hashable {
    public var x, y, width, height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = max(0, width)
        self.height = max(0, height)
    }
    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
}

/// A grid of cells that widgets draw into; the terminal gets only the cells that differ from the
/// previous frame (see ``ScreenBuffer/changes(since:)``).
public struct ScreenBuffer: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]
    /// Where the terminal cursor is left (nil: hidden).
    public var cursor: (x: Int, y: Int)?

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        self.cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public static func == (a: ScreenBuffer, b: ScreenBuffer) -> Bool {
        a.width == b.width && a.height == b.height && a.cells == b.cells && a.cursor?.x == b.cursor?.x && a.cursor?.y == b.cursor?.y
    }

    public var bounds: Rect { Rect(x: 0, y: 0, width: width, height: height) }

    public subscript(x: Int, y: Int) -> Cell {
        get { cells[y * width + x] }
    }

    /// Fills `rect` (clipped to the screen) with blanks in `style`.
    public mutating func fill(_ rect: Rect, style: Style = .plain) {
        let x0 = max(0, rect.x), x1 = min(width, rect.maxX)
        let y0 = max(0, rect.y), y1 = min(height, rect.maxY)
        guard x0 < x1, y0 < y1 else { return }
        for y in y0..<y1 { for x in x0..<x1 { cells[y * width + x] = Cell(" ", style: style) } }
    }

    /// Writes `text` at (x, y) in `style`, at most `maxWidth` columns (and never past the right
    /// edge). Control characters become visible escapes; a wide grapheme that does not fit is
    /// replaced by a space. Returns the number of columns written.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: Style = .plain, maxWidth: Int? = nil) -> Int {
        guard y >= 0, y < height, x < width else { return 0 }
        let limit = min(width, x + (maxWidth ?? width))
        var col = x
        for c in text {
            let w = TerminalText.width(of: c)
            if col >= limit { break }
            if TerminalText.needsEscape(c) {
                for e in TerminalText.escapingControlCharacters(String(c)) {
                    guard col < limit else { break }
                    if col >= 0 { cells[y * width + col] = Cell(String(e), style: style) }
                    col += 1
                }
                continue
            }
            if w == 0 {
                // A lone combining mark or zero-width scalar: attach to the previous cell.
                if col > x, col - 1 >= 0 { cells[y * width + col - 1].text.append(c) }
                continue
            }
            if col + w > limit {
                while col < limit { if col >= 0 { cells[y * width + col] = Cell(" ", style: style) }; col += 1 }
                break
            }
            if col >= 0 { cells[y * width + col] = Cell(String(c), style: style) }
            if w == 2, col + 1 >= 0 { cells[y * width + col + 1] = Cell("", style: style) }
            col += w
        }
        return col - x
    }

    /// The screen as lines of text (wide graphemes once, trailing spaces kept), for tests.
    public var lines: [String] {
        (0..<height).map { line($0) }
    }

    /// Row `y` as text.
    public func line(_ y: Int) -> String {
        var s = ""
        for x in 0..<width { s += cells[y * width + x].text }
        return s
    }

    /// A run of changed cells on one row.
    public struct Run: Sendable, Equatable {
        public var x: Int
        public var y: Int
        public var cells: [Cell]
    }

    /// The cells that differ from `previous`, as runs per row; everything when the size changed.
    /// - Complexity: O(width × height).
    public func changes(since previous: ScreenBuffer?) -> [Run] {
        let full = previous == nil || previous?.width != width || previous?.height != height
        var runs: [Run] = []
        for y in 0..<height {
            var x = 0
            while x < width {
                let i = y * width + x
                if !full, let previous, previous.cells[i] == cells[i] { x += 1; continue }
                var start = x
                // A changed continuation cell redraws from its wide grapheme.
                if cells[i].isContinuation, start > 0 { start -= 1 }
                var end = x + 1
                while end < width {
                    let j = y * width + end
                    if !full, let previous, previous.cells[j] == cells[j], !cells[j].isContinuation { break }
                    end += 1
                }
                runs.append(Run(x: start, y: y, cells: Array(cells[(y * width + start)..<(y * width + end)])))
                x = end
            }
        }
        return runs
    }
}
