import Foundation
import TerminalCore
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads an SVG with Foundation's XML parser: its texts (element by element) and every `fill`.
final class SVGReader: NSObject, XMLParserDelegate {
    private(set) var texts: [String] = []
    private(set) var fills: Set<String> = []
    private(set) var boldTexts: [String] = []
    private var inText = false
    private var bold = false
    private var current = ""

    /// Parses `svg`; nil when it is not well-formed XML.
    static func read(_ svg: String) -> SVGReader? {
        let reader = SVGReader()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = reader
        return parser.parse() ? reader : nil
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        if let fill = attributes["fill"] { fills.insert(fill) }
        if name == "text" { inText = true; current = ""; bold = attributes["font-weight"] == "bold" }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inText { current += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard name == "text" else { return }
        texts.append(current)
        if bold { boldTexts.append(current) }
        inText = false
    }
}

@Suite("The screen as an SVG picture")
struct SVGTests {
    @Test("well-formed, with each run's text, its colours, bold and reverse as the cells hold them")
    func cellsAndColours() throws {
        var screen = ScreenBuffer(width: 30, height: 3)
        screen.put("plain text", x: 0, y: 0)
        screen.put("red bold", x: 0, y: 1, style: Style(foreground: .red, bold: true))
        screen.put("reversed", x: 10, y: 1, style: Style(foreground: .green, reverse: true))
        screen.put("東京 é", x: 0, y: 2, style: Style(background: .blue))
        let svg = screen.svg(title: "a <title> & more")
        let reader = try #require(SVGReader.read(svg), "not well-formed:\n\(svg)")
        #expect(reader.texts.contains("plain text"))
        #expect(reader.texts.contains("red bold"))
        #expect(reader.boldTexts == ["red bold"])
        #expect(reader.texts.contains("reversed"))
        #expect(reader.texts.contains { $0.hasPrefix("東京 é") })
        // Red text; reverse puts green behind the text; blue behind the third line.
        #expect(reader.fills.isSuperset(of: ["#cd3131", "#0dbc79", "#2472c8", "#1c1c1c", "#d0d0d0"]), "\(reader.fills)")
        #expect(svg.contains("<title>a &lt;title&gt; &amp; more</title>"))
        // 30 x 3 cells of 8.4 x 17 pixels.
        #expect(svg.contains("width=\"252\" height=\"51\""))
    }

    @Test("hostile cell text: markup is escaped and no control character or ESC is written raw")
    func hostileText() throws {
        var screen = ScreenBuffer(width: 60, height: 2)
        screen.put("<script>&amp;\"'</svg>", x: 0, y: 0)
        screen.put("esc \u{1B}[31m bell \u{07} nul \u{0} c1 \u{9B} \u{202E}rtl", x: 0, y: 1)
        let svg = screen.svg()
        let reader = try #require(SVGReader.read(svg), "not well-formed:\n\(svg)")
        #expect(reader.texts.contains { $0.hasPrefix("<script>&amp;\"'</svg>") }, "\(reader.texts)")
        #expect(!svg.contains("<script>"))
        #expect(reader.texts.contains { $0.hasPrefix("esc \\e[31m bell \\x07 nul \\x00 c1 \\x9B \\u{202E}rtl") }, "\(reader.texts)")
        for scalar in svg.unicodeScalars where scalar != "\n" {
            #expect(!TerminalText.needsEscape(scalar), "raw \(scalar.value) in the SVG")
        }
    }

    @Test("a cell holding a control character (never stored by put) is still written as its escape")
    func rawCellStillEscaped() throws {
        // Combining text is appended to a cell as it comes; a control scalar there would be a bug
        // elsewhere, and the picture must not pass it on.
        var screen = ScreenBuffer(width: 10, height: 1)
        screen.put("a\u{301}", x: 0, y: 0)
        let svg = screen.svg()
        #expect(SVGReader.read(svg)?.texts == ["a\u{301}"])
        #expect(xmlEscaped("x\u{1B}\u{FFFE}&") == "x\\e\\u{FFFE}&amp;")
    }
}

@Suite("Keys written as text")
struct KeyNotationTests {
    @Test("characters, named keys in any case, Ctrl letters, and literal <")
    func parse() throws {
        #expect(try KeyNotation.parse("jk") == [.char("j"), .char("k")])
        #expect(try KeyNotation.parse("<Enter><esc><DOWN><Up><PgDn><PgUp><Home><End><Tab><Left><Right>")
                == [.enter, .escape, .down, .up, .pageDown, .pageUp, .home, .end, .tab, .left, .right])
        #expect(try KeyNotation.parse("<C-d><c-U>") == [.ctrl("d"), .ctrl("u")])
        #expect(try KeyNotation.parse("fa < b<Enter>") == [.char("f"), .char("a"), .char(" "), .char("<"), .char(" "), .char("b"), .enter])
        #expect(try KeyNotation.parse("<lt>x>") == [.char("<"), .char("x"), .char(">")])
        #expect(try KeyNotation.parse("<>") == [.char("<"), .char(">")])
        #expect(try KeyNotation.parse("<Space><BS>") == [.char(" "), .backspace])
        #expect(try KeyNotation.parse("") == [])
    }

    @Test("an unknown name is an error that names it")
    func unknown() {
        #expect(throws: KeyNotation.UnknownKey(name: "Entr")) { try KeyNotation.parse("j<Entr>") }
        #expect(throws: KeyNotation.UnknownKey(name: "C-1")) { try KeyNotation.parse("<C-1>") }
        #expect("\(KeyNotation.UnknownKey(name: "Entr"))".contains("<Enter>"))
    }
}
