import BatchStore
import FaultlineCodecs
import Foundation
import Testing

/// Every storage class with its edges, and text chosen to break writers: what each format gives
/// back, as its documentation promises. NDJSON keeps storage classes; CSV and TSV are untyped, so
/// numbers come back as their text; no format has NaN or the infinities, which come back as the
/// text `nan`, `inf`, `-inf`.
enum Values {
    static let integers: [Int64] = [0, 1, -1, .min, .min + 1, .max, .max - 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1, 1_000_000_000_000]
    static let reals: [Double] = [
        0.0, -0.0, 1.5, -2.0, 2.0, 1e308, -1e308, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 2.2250738585072009e-308,
        // Values whose shortest round-trip form needs all 17 significant digits.
        0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0, 0.30000000000000004, 123456789.12345679, 9007199254740993.0, 1.2345678901234567e-300,
        .pi, -.ulpOfOne, 1e15, 1e16, 1e-7, 123456789012345680.0,
    ]
    static let nonFinite: [Double] = [.nan, .infinity, -.infinity]
    static let texts: [String] = [
        "", " ", "  padded  ", "\0", "a\0b", "\0\0\0", "\r\n", "\r", "\n", "\n\n", "x\ry", "\t", "a\tb\t", "\"", "\"\"", "'", "\"quoted\"",
        "\\", "\\\\", "\\N", "\\n", "\\t", "\\x41", "\\x", "\\xzz", "\\X41", "x\\", "NULL", "null", "nan", "inf",
        // Invalid UTF-8 spelled out as text, and the scalars that stand in for it.
        "\\xC3\\x28", "\\xFF\\xFE", "\\ud800", "\u{FFFD}", "\u{FFFE}", "\u{FEFF}bom", "\u{10FFFF}",
        // Emoji, flags, RTL and bidi controls, combining marks, CJK.
        "😀", "👩‍👩‍👧‍👦", "🇯🇵🇫🇷", "👍🏽", "שלום עולם", "مرحبا بالعالم", "\u{202E}evil\u{202C}", "\u{200F}\u{200E}", "e\u{301}", "日本語",
        // Control characters and line separators.
        "\u{1B}[31mred\u{1B}[0m", "\u{7}", "\u{7F}", "\u{85}", "\u{9B}31m", "\u{2028}\u{2029}", "\u{0B}\u{0C}",
        // Text that looks like something else in one of the formats.
        ",", "a,b", ",,", "=cmd|' /C calc'!A0", "@SUM(1)", "+1", "-1", "1", "1.0", "-0.0", "1e308", "0x10",
        "{\"$blob\":\"AA==\"}", "[1,2]", "{}", "true", "\"\\u0000\"", "#comment", "line\nbreak,\"q\"\r\n,end",
        String(repeating: "\"", count: 100), String(repeating: "\\", count: 99),
    ]
    static let blobs: [Data] = [Data(), Data([0]), Data((0...255).map { UInt8($0) }), Data((0...255).reversed().map { UInt8($0) }),
                                Data("\\x41".utf8), Data("text".utf8), Data([0xFF, 0xFE, 0xC3, 0x28]), Data("\0blob:".utf8)]

    static var all: [SQLValue] {
        [.null] + integers.map(SQLValue.integer) + reals.map(SQLValue.real) + nonFinite.map(SQLValue.real)
            + texts.map(SQLValue.text) + blobs.map(SQLValue.blob)
    }

    /// What an untyped format (CSV, TSV) gives back for `value`: numbers as the text the writer
    /// printed, everything else as it was.
    static func untyped(_ value: SQLValue) -> SQLValue {
        switch value {
        case .integer(let n): return .text(String(n))
        case .real(let d): return .text("\(d)")
        default: return value
        }
    }

    /// What NDJSON gives back: every value as it was, NaN and the infinities as text.
    static func ndjson(_ value: SQLValue) -> SQLValue {
        if case .real(let d) = value, !d.isFinite { return .text("\(d)") }
        return value
    }
}

/// Reads TSV as `export --format tsv` documents it, independently of the writer: a header line,
/// tab-separated fields, `\N` for NULL, `\t \n \r \\` escaped, blobs as `\x` and lowercase hex.
/// (Faultline reads no TSV; this is the promise a reader can rely on.)
func decodeTSV(_ text: String) -> (header: [String], rows: [[SQLValue]]) {
    // Split by scalars, not Characters: a field may begin with a combining mark.
    typealias Scalars = ArraySlice<Unicode.Scalar>
    func unescape(_ field: Scalars) -> String {
        var out = String.UnicodeScalarView()
        var escaped = false
        for c in field {
            if escaped {
                switch c {
                case "t": out.append("\t")
                case "n": out.append("\n")
                case "r": out.append("\r")
                default: out.append(c)
                }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        return String(out)
    }
    func value(_ field: Scalars) -> SQLValue {
        if Array(field) == ["\\", "N"] { return .null }
        if field.starts(with: ["\\", "x"]) {
            let digits = Array(field.dropFirst(2))
            var data = Data()
            var i = 0
            while i + 1 < digits.count, let b = UInt8(String(String.UnicodeScalarView(digits[i...(i + 1)])), radix: 16) {
                data.append(b)
                i += 2
            }
            return .blob(data)
        }
        return .text(unescape(field))
    }
    var lines = Array(text.unicodeScalars).split(separator: "\n", omittingEmptySubsequences: false)
    if lines.last?.isEmpty == true { lines.removeLast() }
    let header = lines.first.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(unescape) } ?? []
    let rows = lines.dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(value) }
    return (header, rows)
}

@Suite struct RoundTripTests {
    /// The values as one wide row (and the same values reversed as a second row), in `format`.
    func write(_ format: ExportFormat, _ values: [SQLValue], columns: [String]? = nil) -> String {
        let columns = columns ?? values.indices.map { "c\($0)" }
        let writer = RowWriter(format: format, columns: columns)
        return writer.header() + writer.line(values) + writer.line(values.reversed())
    }

    func check(_ got: [[String: SQLValue]], _ values: [SQLValue], expected: (SQLValue) -> SQLValue, _ format: String) {
        #expect(got.count == 2, "\(format): \(got.count) rows")
        guard got.count == 2 else { return }
        for (row, ordered) in [values, values.reversed()].enumerated() {
            for (i, value) in ordered.enumerated() {
                let read = got[row]["c\(i)"]
                #expect(same(read, expected(value)), "\(format) row \(row) c\(i): wrote \(value.debugText), read \(read?.debugText ?? "nothing")")
            }
        }
    }

    @Test("NDJSON gives back every storage class and every value exactly (reals to the bit), NaN and the infinities as text")
    func ndjson() throws {
        let values = Values.all
        check(try read(write(.ndjson, values), .ndjson), values, expected: Values.ndjson, "ndjson")
        // Reals keep their class even when integral, and integers past 2^53 keep every digit.
        let row = try read(write(.ndjson, [.real(2.0), .real(-0.0), .integer((1 << 53) + 1), .real(1e16)]), .ndjson).first ?? [:]
        #expect(row["c0"] == .real(2.0) && row["c2"] == .integer((1 << 53) + 1) && row["c3"] == .real(1e16))
        #expect(row["c1"].map { same($0, .real(-0.0)) } == true, "-0.0 keeps its sign")
    }

    @Test("a number's class comes from its text, in NDJSON and JSON: a fraction or an exponent makes a real, however large")
    func numbersByTheirText() throws {
        let line = "{\"a\": 1000000000000000.0, \"b\": 1e15, \"c\": 7, \"d\": -9223372036854775808, \"e\": 18446744073709551616, \"k\\\"ey\": -2.5E-3, \"n\": {\"x\": 1.0}, \"t\": \"1.0\", \"z\": 0.30000000000000004}"
        let expected: [String: SQLValue] = ["a": .real(1e15), "b": .real(1e15), "c": .integer(7), "d": .integer(.min), "e": .real(18446744073709551616),
                                            "k\"ey": .real(-2.5e-3), "n": .text("{\"x\":1}"), "t": .text("1.0"), "z": .real(0.30000000000000004)]
        #expect(try read(line + "\n", .ndjson) == [expected])
        #expect(try read("[" + line + ", {\"a\": [1.5, 2], \"b\": 2.0}]", .json) == [expected, ["a": .text("[1.5,2]"), "b": .real(2.0)]])
    }

    @Test("CSV gives back NULL, text and blobs exactly, numbers as their shortest round-trip text")
    func csv() throws {
        let values = Values.all
        check(try read(write(.csv, values), .csv), values, expected: Values.untyped, "csv")
        // The text of a real parses back to the same bits.
        for d in Values.reals {
            let text = try read(write(.csv, [.real(d)]), .csv).first?["c0"]?.textValue
            #expect(text.flatMap(Double.init).map { $0.bitPattern == d.bitPattern } == true, "\(d) wrote \(text ?? "nothing")")
        }
    }

    @Test("TSV, read by its documented escaping, gives back NULL, text and blobs exactly, numbers as their text")
    func tsv() throws {
        let values = Values.all
        let text = write(.tsv, values)
        let decoded = decodeTSV(text)
        #expect(decoded.header == values.indices.map { "c\($0)" })
        let rows = decoded.rows.map { Dictionary(uniqueKeysWithValues: zip(decoded.header, $0)) }
        #expect(decoded.rows.allSatisfy { $0.count == values.count }, "one field per column: no tab or line end leaks out of a field")
        check(rows, values, expected: Values.untyped, "tsv")
        #expect(!text.contains("\r"), "CR is always escaped")
    }

    @Test("hostile column names come back as written: header lines and NDJSON keys")
    func hostileNames() throws {
        let names = ["a,b", "\"q\"", "line\nbreak", "cr\r", "tab\tname", "", "\\x41", "\\N", "$blob", "$store", "日本 😀", "\u{202E}rtl", "\0nul", "=1+1"]
        let values = names.indices.map { SQLValue.integer(Int64($0)) }
        let nd = try read(write(.ndjson, values, columns: names), .ndjson).first ?? [:]
        #expect(names.enumerated().allSatisfy { nd[$0.element] == .integer(Int64($0.offset)) }, "\(nd)")
        let csv = try read(write(.csv, values, columns: names), .csv).first ?? [:]
        #expect(names.enumerated().allSatisfy { csv[$0.element] == .text(String($0.offset)) }, "\(csv)")
        let tsv = decodeTSV(write(.tsv, values, columns: names))
        #expect(tsv.header == names)
        // A column named $blob holds a string: text, not a blob.
        #expect(try read("{\"$blob\": \"AA==\"}\n", .ndjson) == [["$blob": .text("AA==")]])
    }

    @Test("documented limits: non-finite reals are text in every format; CSV and TSV do not keep storage classes")
    func documentedLimits() throws {
        for format in [ExportFormat.csv, .tsv, .ndjson] {
            let line = RowWriter(format: format, columns: ["a", "b", "c"]).line(Values.nonFinite.map(SQLValue.real))
            #expect(line.contains("nan") && line.contains("inf") && line.contains("-inf"), "\(format): \(line)")
        }
        #expect(try read(write(.ndjson, [.real(.nan)]), .ndjson).first?["c0"] == .text("nan"))
        #expect(try read(write(.csv, [.integer(7), .real(7)]), .csv).first == ["c0": .text("7"), "c1": .text("7.0")])
        #expect(decodeTSV(write(.tsv, [.integer(7), .real(7)])).rows.first == [.text("7"), .text("7.0")])
        // CSV: the empty unquoted field is NULL, "" is empty text; TSV: \N is NULL, nothing is empty text.
        #expect(RowWriter(format: .csv, columns: ["a", "b"]).line([.null, .text("")]) == ",\"\"\r\n")
        #expect(RowWriter(format: .tsv, columns: ["a", "b"]).line([.null, .text("")]) == "\\N\t\n")
    }
}

extension SQLValue {
    /// The value with its class and escaped text, for failure messages.
    var debugText: String {
        switch self {
        case .null: return "NULL"
        case .integer(let n): return "integer \(n)"
        case .real(let d): return "real \(d) (bits \(String(d.bitPattern, radix: 16)))"
        case .text(let s): return "text \(s.debugDescription)"
        case .blob(let b): return "blob \(b.map { String(format: "%02x", $0) }.joined())"
        }
    }
}
