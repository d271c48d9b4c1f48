import BatchStore
import Foundation
import TerminalCore

/// One named value of a text sheet: a column of a record, or a statement or a bound value.
public struct TextField: Sendable, Equatable {
    /// What the value is: a column's name (and declared type), `ID fetch`, `?1`.
    public var name: String
    public var value: SQLValue

    package init(name: String, value: SQLValue) {
        self.name = name
        self.value = value
    }
}

/// A sheet of named values, each shown whole: text wrapped at the screen's edge (a line break
/// after each newline, every control character as its visible escape), a blob as a hex dump with
/// its size, NULL as the grid's `∅`; j/k and the page keys scroll, Esc or q goes back.
public struct TextSheet: Sendable, Equatable {
    /// What the sheet shows.
    public enum Purpose: Sendable, Equatable {
        /// Enter: the record at `row` of the sheet below.
        case record(row: Int)
        /// `Q`: the SQL the sheet below runs.
        case sql
    }

    public var purpose: Purpose
    /// The top line.
    public var title: String
    public var fields: [TextField]
    /// The first line shown.
    public internal(set) var scroll = 0
    /// The lines for the screen's width (made again when it changes).
    var layout = TextLayout(fields: [], width: 0)

    package init(purpose: Purpose, title: String, fields: [TextField]) {
        self.purpose = purpose
        self.title = title
        self.fields = fields
    }

    /// Lines at the screen's width.
    package var lineCount: Int { layout.lineCount }

    /// Its name in the status line's path: `row 12`, `SQL`.
    var pathTitle: String {
        switch purpose {
        case .record(let row): return "row \(group(row + 1))"
        case .sql: return "SQL"
        }
    }

    /// Lays the fields out for a text area `width` columns wide (nothing when it is already).
    mutating func layOut(width: Int) {
        guard layout.width != width || layout.fieldCount != fields.count else { return }
        layout = TextLayout(fields: fields, width: width)
        scroll = min(scroll, max(0, layout.lineCount - 1))
    }
}

/// Where each line of a text sheet comes from, for one width: per field its first line, per text
/// field where each of its lines starts, per blob the bytes per hex line. A blob's lines are
/// made only when drawn (a 10 MB blob is 655,360 lines, none of them stored).
struct TextLayout: Sendable, Equatable {
    /// The text area's width it was made for.
    let width: Int
    let fieldCount: Int
    /// Columns for the names, left of ` │ `.
    let nameWidth: Int
    /// Columns for the values, right of it.
    let valueWidth: Int
    /// Bytes per line of a hex dump.
    let bytesPerLine: Int
    /// Field `i`'s lines are `firstLine[i] ..< firstLine[i + 1]` (one more entry than fields).
    let firstLine: [Int]
    /// For text values, the start of each line in its unicode scalars; nil for other values.
    let breaks: [[String.UnicodeScalarView.Index]?]

    var lineCount: Int { firstLine.last ?? 0 }

    /// - Complexity: O(n) in the unicode scalars of the text values; O(1) per blob.
    init(fields: [TextField], width: Int) {
        self.width = width
        fieldCount = fields.count
        nameWidth = min(24, max(4, width / 3), fields.map { TerminalText.width(of: $0.name) }.max() ?? 0)
        valueWidth = max(1, width - nameWidth - 3)
        // The offset (8), two spaces, 3 per byte, a space, then the bytes as text between bars: 13 + 4 per byte.
        bytesPerLine = max(1, min(16, (valueWidth - 13) / 4))
        var first = [0]
        var breaks: [[String.UnicodeScalarView.Index]?] = []
        for field in fields {
            var lines = 1
            var fieldBreaks: [String.UnicodeScalarView.Index]?
            switch field.value {
            case .text(let s):
                let b = Self.wrap(s, width: valueWidth)
                lines = b.count
                fieldBreaks = b
            case .blob(let data):
                // The size, then the dump.
                lines = 1 + (data.count + bytesPerLine - 1) / bytesPerLine
            default:
                break
            }
            breaks.append(fieldBreaks)
            first.append((first.last ?? 0) + lines)
        }
        firstLine = first
        self.breaks = breaks
    }

    /// Where each line of `s` starts when wrapped at `width` columns as drawn (control characters
    /// as their escapes): after the line's last space when it has one, else where the width runs
    /// out; and after each newline.
    /// - Complexity: O(n) in the unicode scalars of `s`.
    static func wrap(_ s: String, width: Int) -> [String.UnicodeScalarView.Index] {
        let scalars = s.unicodeScalars
        var starts = [scalars.startIndex]
        var used = 0
        // Just after the current line's last space, and the width up to there.
        var afterSpace: (index: String.UnicodeScalarView.Index, used: Int)?
        var i = scalars.startIndex
        while i < scalars.endIndex {
            let c = scalars[i]
            let w: Int
            if c.value < 0x80 {
                w = c.value < 0x20 || c.value == 0x7F ? (c == "\n" || c == "\t" || c == "\r" || c.value == 0x1B ? 2 : 4) : 1
            } else {
                w = TerminalText.needsEscape(c) ? TerminalText.escapingControlCharacters(String(c)).count : TerminalText.width(of: c)
            }
            if used + w > width, used > 0, c != " " {
                if let space = afterSpace {
                    starts.append(space.index)
                    used -= space.used
                } else {
                    starts.append(i)
                    used = 0
                }
                afterSpace = nil
            }
            used += w
            i = scalars.index(after: i)
            if c == " " { afterSpace = (i, used) }
            if c == "\n", i < scalars.endIndex {
                starts.append(i)
                used = 0
                afterSpace = nil
            }
        }
        return starts
    }

    /// The field that line `line` belongs to, and the line's number within it.
    func locate(_ line: Int) -> (field: Int, line: Int)? {
        guard line >= 0, line < lineCount else { return nil }
        // The last field whose first line is at or before `line` (binary search).
        var low = 0, high = fieldCount - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if firstLine[mid] <= line { low = mid } else { high = mid - 1 }
        }
        return (low, line - firstLine[low])
    }
}

/// A line of a text sheet as drawn: the name (on a field's first line), then the value's part.
struct TextLine: Equatable {
    enum Part: Equatable {
        case null
        case text(String)
        /// A blob's size, or a line of its hex dump.
        case note(String)
    }
    var name: String?
    var part: Part
}

extension TextSheet {
    /// Line `line` as drawn (nil past the end).
    func line(_ line: Int) -> TextLine? {
        guard let (index, local) = layout.locate(line), index < fields.count else { return nil }
        let field = fields[index]
        let name = local == 0 ? field.name : nil
        switch field.value {
        case .null:
            return TextLine(name: name, part: .null)
        case .integer, .real:
            return TextLine(name: name, part: .text(DisplayValue(field.value, limit: Int.max).shown))
        case .text(let s):
            guard let starts = layout.breaks[index], local < starts.count else { return TextLine(name: name, part: .text("")) }
            let end = local + 1 < starts.count ? starts[local + 1] : s.unicodeScalars.endIndex
            return TextLine(name: name, part: .text(String(s.unicodeScalars[starts[local]..<end])))
        case .blob(let data):
            guard local > 0 else { return TextLine(name: name, part: .note("blob, \(group(data.count)) \(data.count == 1 ? "byte" : "bytes")")) }
            return TextLine(name: nil, part: .note(Self.hexLine(data, offset: (local - 1) * layout.bytesPerLine, count: layout.bytesPerLine)))
        }
    }

    /// `00000010  de ad be ef …  |....|`: the offset, the bytes in hex, and as ASCII (`.` for the rest).
    static func hexLine(_ data: Data, offset: Int, count: Int) -> String {
        let start = data.startIndex + offset
        let bytes = data[start..<min(start + count, data.endIndex)]
        let offsetText = String(offset, radix: 16)
        var line = String(repeating: "0", count: max(0, 8 - offsetText.count)) + offsetText + "  "
        for b in bytes { line += (b < 16 ? "0" : "") + String(b, radix: 16) + " " }
        line += String(repeating: "   ", count: count - bytes.count) + " |"
        for b in bytes { line.append(b >= 0x20 && b < 0x7F ? Character(Unicode.Scalar(b)) : ".") }
        return line + "|"
    }
}

extension BrowserState {
    /// The text sheet on screen, if it is one.
    public var textSheet: TextSheet? {
        if case .text(let t) = sheet { return t }
        return nil
    }

    /// Columns a text sheet's lines may use (the screen less a margin).
    var textWidth: Int { max(1, layout.body.width - 1) }

    /// A record or the SQL came back: it goes on top of the sheet it was asked on.
    mutating func pushTextSheet(_ text: TextSheet) {
        sheets.append(SavedSheet(self))
        var text = text
        text.layOut(width: textWidth)
        sheet = .text(text)
        mode = .grid
        switch text.purpose {
        case .record: say("Esc or q goes back; j/k, Space and b scroll; g and G go to the first and last line")
        case .sql: say("the SQL this sheet runs, with its bound values; Esc or q goes back")
        }
    }

    /// The text sheet laid out again for the screen's width (after a resize).
    mutating func layOutTextSheet() {
        guard var text = textSheet else { return }
        text.layOut(width: textWidth)
        sheet = .text(text)
    }

    /// Keys on a text sheet: scrolling, Esc or q back, `?` help, `m` memory; the rest say what it takes.
    mutating func textSheetKey(_ key: Key) -> [Effect] {
        guard var text = textSheet else { return [] }
        message = nil
        let page = max(1, layout.body.height)
        let last = max(0, text.layout.lineCount - page)
        switch key {
        case .char("j"), .down: text.scroll += 1
        case .char("k"), .up: text.scroll -= 1
        case .pageDown, .char(" "), .ctrl("f"): text.scroll += page
        case .pageUp, .char("b"), .ctrl("b"): text.scroll -= page
        case .ctrl("d"): text.scroll += page / 2
        case .ctrl("u"): text.scroll -= page / 2
        case .char("g"), .home: text.scroll = 0
        case .char("G"), .end: text.scroll = last
        case .char("q"), .escape, .ctrl("c"):
            return popSheet()
        case .char("?"):
            mode = .help(scroll: 0)
        default:
            let what = text.purpose == .sql ? "the SQL" : "a record"
            say("\(KeyNotation.displayName(key)) does nothing on \(what): j/k and the page keys scroll, Esc or q goes back; ? lists the keys", error: true)
        }
        text.scroll = max(0, min(text.scroll, last))
        sheet = .text(text)
        return []
    }

    /// `Q`: the SQL of the sheet on screen, as a text sheet.
    mutating func sqlKey() -> [Effect] {
        switch sheet {
        case .table:
            if eagerLoaded != nil { say("Q shows the batched result's SQL: M goes back to it first", error: true); return [] }
            guard let resultID else { say("no result yet: r loads it", error: true); return [] }
            return [.loadSQL(result: resultID, row: cursorRow)]
        case .frequency:
            guard let resultID else { return [] }
            return [.loadSQL(result: resultID, row: topRow)]
        case .summary:
            say("Q shows the SQL of a table or a frequency sheet: Esc goes back to the table", error: true)
            return []
        case .text:
            return []
        }
    }
}
