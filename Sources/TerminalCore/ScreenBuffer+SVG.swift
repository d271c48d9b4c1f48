/// A screen as a picture: an SVG document of its cells, for the README's screenshots
/// (`faultline snapshot`).
extension ScreenBuffer {
    /// Pixels per cell and font size of ``svg(title:)``.
    public static let svgCellWidth = 8.4
    public static let svgCellHeight = 17.0
    public static let svgFontSize = 14.0

    /// The screen as an SVG document: a dark terminal background, one `<rect>` per run of cells
    /// with a background of their own, and one `<text>` per run of cells in the same style (its
    /// colours, bold, underline, dim and reverse as the cells hold them), stretched to its cells'
    /// width so columns line up whatever the font.
    ///
    /// Cell text is XML-escaped, and any scalar a terminal or an XML parser must not get raw (C0 and
    /// C1 controls, ESC, DEL, bidi overrides, noncharacters) is written as its visible escape
    /// (`\e`, `\x07`), though ``put(_:x:y:style:maxWidth:)`` never stores one.
    /// - Complexity: O(width × height).
    public func svg(title: String? = nil) -> String {
        let cw = Self.svgCellWidth, ch = Self.svgCellHeight
        let w = Double(width) * cw, h = Double(height) * ch
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(number(w))" height="\(number(h))" viewBox="0 0 \(number(w)) \(number(h))" \
            font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="\(number(Self.svgFontSize))">

            """
        if let title { out += "<title>\(xmlEscaped(title))</title>\n" }
        out += "<rect width=\"100%\" height=\"100%\" fill=\"\(SVGPalette.background)\"/>\n"
        for y in 0..<height {
            // Backgrounds: runs of cells with the same colour other than the terminal's.
            var x = 0
            while x < width {
                let fill = SVGPalette.colors(of: self[x, y].style).background
                var end = x + 1
                while end < width, SVGPalette.colors(of: self[end, y].style).background == fill { end += 1 }
                if fill != SVGPalette.background {
                    out += "<rect x=\"\(number(Double(x) * cw))\" y=\"\(number(Double(y) * ch))\" width=\"\(number(Double(end - x) * cw))\" height=\"\(number(ch))\" fill=\"\(fill)\"/>\n"
                }
                x = end
            }
            // Text: runs of cells in one style; blank runs are left out.
            x = 0
            while x < width {
                let style = self[x, y].style
                var end = x + 1
                while end < width, self[end, y].style == style { end += 1 }
                // Trailing blanks draw nothing: the run ends at its last visible cell.
                var last = end
                while last > x, self[last - 1, y].text == " " { last -= 1 }
                if last > x {
                    let text = (x..<last).map { self[$0, y].text }.joined()
                    out += textElement(text, x: x, y: y, cells: last - x, style: style)
                }
                x = end
            }
        }
        out += "</svg>\n"
        return out
    }

    private func textElement(_ text: String, x: Int, y: Int, cells: Int, style: Style) -> String {
        let cw = Self.svgCellWidth, ch = Self.svgCellHeight
        var attributes = "x=\"\(number(Double(x) * cw))\" y=\"\(number(Double(y) * ch + ch * 0.78))\" fill=\"\(SVGPalette.colors(of: style).foreground)\""
        attributes += " textLength=\"\(number(Double(cells) * cw))\" lengthAdjust=\"spacingAndGlyphs\""
        if style.bold { attributes += " font-weight=\"bold\"" }
        if style.underline { attributes += " text-decoration=\"underline\"" }
        if style.dim { attributes += " opacity=\"0.6\"" }
        return "<text \(attributes) xml:space=\"preserve\">\(xmlEscaped(text))</text>\n"
    }
}

/// `12.6`, `17` (no trailing `.0`).
private func number(_ d: Double) -> String {
    let rounded = (d * 100).rounded() / 100
    return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
}

/// `text` safe inside an XML element or attribute: markup characters as entities, and scalars XML
/// or a terminal must not get (controls, noncharacters) as visible escapes.
package func xmlEscaped(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default:
            let v = scalar.value
            if TerminalText.needsEscape(scalar) {
                out += TerminalText.escapingControlCharacters(String(scalar))
            } else if (0xFDD0...0xFDEF).contains(v) || v & 0xFFFE == 0xFFFE {
                out += "\\u{\(String(v, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out
}

/// The terminal's colours in the picture: xterm's palette on a dark background.
enum SVGPalette {
    static let background = "#1c1c1c"
    static let foreground = "#d0d0d0"

    static func hex(_ color: Color) -> String? {
        switch color {
        case .default: return nil
        case .black: return "#000000"
        case .red: return "#cd3131"
        case .green: return "#0dbc79"
        case .yellow: return "#e5e510"
        case .blue: return "#2472c8"
        case .magenta: return "#bc3fbc"
        case .cyan: return "#11a8cd"
        case .white: return "#e5e5e5"
        }
    }

    /// The foreground and background a cell in `style` shows, reverse applied.
    static func colors(of style: Style) -> (foreground: String, background: String) {
        let fg = hex(style.foreground) ?? foreground
        let bg = hex(style.background) ?? background
        return style.reverse ? (bg, fg) : (fg, bg)
    }
}
