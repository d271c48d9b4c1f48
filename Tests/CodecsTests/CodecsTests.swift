import BatchStore
import FaultlineCodecs
import Foundation
import Testing

/// Every storage class, with the edges: Int64 extremes, -0.0, NaN and infinities, empty text vs
/// NULL, NUL inside text, CJK and emoji, separators, quotes, line ends, empty and non-empty blobs.
let edgeValues: [SQLValue] = [
    .null, .integer(.min), .integer(.max), .real(-0.0), .real(.nan), .real(.infinity), .real(1.5),
    .text(""), .text("a,b \"q\"\nx\r"), .text("\\x41"), .text("tab\t"), .text("x\0y"), .text("日本😀"),
    .blob(Data()), .blob(Data([0, 255])),
]
let edgeColumns = edgeValues.indices.map { "c\($0)" }

func read(_ text: String, _ format: ImportFormat) throws -> [[String: SQLValue]] {
    try read(Data(text.utf8), format)
}

func read(_ data: Data, _ format: ImportFormat) throws -> [[String: SQLValue]] {
    let reader = try RowReader(bytes: ByteReader(data: data), format: format)
    var rows: [[String: SQLValue]] = []
    while let row = try reader.next() { rows.append(row) }
    return rows
}

/// Compares as SQLite would store the value: NaN equals NaN, -0.0 is told from 0.0.
func same(_ a: SQLValue?, _ b: SQLValue?) -> Bool {
    switch (a, b) {
    case (.real(let x)?, .real(let y)?): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
    default: return a == b
    }
}

@Suite struct RowWriterTests {
    /// The bytes `faultline export` has always written (pinned before the codecs left the executable).
    @Test func writesTheExactBytesExportAlwaysWrote() {
        let tsv = RowWriter(format: .tsv, columns: ["a b", "tab\tname"])
        #expect(tsv.header() == "a b\ttab\\tname\n")
        #expect(RowWriter(format: .tsv, columns: edgeColumns).line(edgeValues)
            == "\\N\t-9223372036854775808\t9223372036854775807\t-0.0\tnan\tinf\t1.5\t\ta,b \"q\"\\nx\\r\t\\\\x41\ttab\\t\tx\0y\t日本😀\t\\x\t\\x00ff\n")
        let csv = RowWriter(format: .csv, columns: ["id", "a,b", ""])
        #expect(csv.header() == "id,\"a,b\",\"\"\r\n")
        #expect(RowWriter(format: .csv, columns: edgeColumns).line(edgeValues)
            == ",-9223372036854775808,9223372036854775807,-0.0,nan,inf,1.5,\"\",\"a,b \"\"q\"\"\nx\r\",\"\\x41\",tab\t,x\0y,日本😀,\\x,\\x00ff\r\n")
        #expect(RowWriter(format: .ndjson, columns: edgeColumns).header() == "")
        #expect(RowWriter(format: .ndjson, columns: edgeColumns).line(edgeValues)
            == "{\"c0\":null,\"c1\":-9223372036854775808,\"c2\":9223372036854775807,\"c3\":-0.0,\"c4\":\"nan\",\"c5\":\"inf\",\"c6\":1.5,\"c7\":\"\",\"c8\":\"a,b \\\"q\\\"\\nx\\r\",\"c9\":\"\\\\x41\",\"c10\":\"tab\\t\",\"c11\":\"x\\u0000y\",\"c12\":\"日本😀\",\"c13\":{\"$blob\":\"\"},\"c14\":{\"$blob\":\"AP8=\"}}\n")
        let stores = RowWriter(format: .ndjson, columns: ["id"], withStore: true)
        #expect(stores.line([.integer(1)], store: "y2024") == "{\"$store\":\"y2024\",\"id\":1}\n")
        #expect(RowWriter(format: .csv, columns: ["id"], withStore: true).header() == "store,id\r\n")
        #expect(RowWriter(format: .ndjson, columns: ["c"]).line([.text("\u{1b}[31m\u{7f}\u{85}\u{2028}")]) == "{\"c\":\"\\u001b[31m\\u007f\\u0085\\u2028\"}\n", "controls are escaped")
    }
}

@Suite struct RowReaderTests {
    @Test func ndjsonRoundTripsEveryStorageClass() throws {
        let writer = RowWriter(format: .ndjson, columns: edgeColumns)
        let rows = try read(writer.line(edgeValues) + writer.line(edgeValues.reversed()), .ndjson)
        #expect(rows.count == 2)
        for (i, value) in edgeValues.enumerated() {
            var expected = value
            // NaN and the infinities are written as strings (JSON has no such numbers) and read back as text.
            if case .real(let d) = value, !d.isFinite { expected = .text("\(d)") }
            #expect(same(rows[0]["c\(i)"], expected), "c\(i): \(String(describing: rows[0]["c\(i)"])) for \(value)")
            #expect(same(rows[1]["c\(i)"], edgeValues.reversed()[i].isNull ? .null : rows[1]["c\(i)"]))
        }
    }

    @Test func csvRoundTripsTextBlobsAndNullsAndGivesNumbersAsText() throws {
        let writer = RowWriter(format: .csv, columns: edgeColumns)
        let rows = try read(writer.header() + writer.line(edgeValues), .csv)
        #expect(rows.count == 1)
        for (i, value) in edgeValues.enumerated() {
            let expected: SQLValue
            switch value {
            case .integer(let n): expected = .text(String(n))
            case .real(let d): expected = .text("\(d)")  // CSV is untyped: the column's affinity decides
            default: expected = value
            }
            #expect(same(rows[0]["c\(i)"], expected), "c\(i): \(String(describing: rows[0]["c\(i)"])) for \(value)")
        }
    }

    @Test func textThatLooksLikeABlobOrAMarkerStaysText() throws {
        let values: [SQLValue] = [.text("\\x00"), .text("\0blob:41"), .text("\\xzz"), .blob(Data("\0blob:".utf8))]
        let columns = values.indices.map { "c\($0)" }
        for format in [ExportFormat.csv, .ndjson] {
            let writer = RowWriter(format: format, columns: columns)
            let row = try read(writer.header() + writer.line(values), format == .csv ? .csv : .ndjson)
            #expect(row.count == 1)
            #expect(columns.indices.allSatisfy { row.first?[columns[$0]] == values[$0] }, "\(format): \(row)")
        }
        #expect(try read("a\n\\xzz\n", .csv) == [["a": .text("\\xzz")]], "not hex: text")
        #expect(try read("a\n\\x0af\n\\x0aff\n\\x\n", .csv) == [["a": .text("\\x0af")], ["a": .blob(Data([0x0A, 0xFF]))], ["a": .blob(Data())]],
                "an odd number of digits is text as written, not a blob cut short")
    }

    @Test func largeBlobsAndTextCrossChunkBoundaries() throws {
        var random = SystemRandomNumberGenerator()
        let blob = Data((0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        let text = String(repeating: "日本,\"\n😀\0", count: 20_000)
        for format in [ExportFormat.csv, .ndjson] {
            let writer = RowWriter(format: format, columns: ["b", "t"])
            let input = writer.header() + writer.line([.blob(blob), .text(text)]) + writer.line([.blob(Data()), .text("")])
            let rows = try read(input, format == .csv ? .csv : .ndjson)
            #expect(rows.count == 2)
            #expect(rows.first?["b"] == .blob(blob) && rows.first?["t"] == .text(text), "\(format)")
            #expect(rows.last?["b"] == .blob(Data()) && rows.last?["t"] == .text(""), "\(format)")
        }
    }

    @Test func hostileInput() throws {
        // A byte order mark is skipped, in every format.
        #expect(try read("\u{FEFF}id,name\r\n1,a\r\n", .csv) == [["id": .text("1"), "name": .text("a")]])
        #expect(try read("\u{FEFF}{\"id\": 1}\n", .ndjson) == [["id": .integer(1)]])
        #expect(try read("\u{FEFF}[{\"id\": 1}]", .json) == [["id": .integer(1)]])
        // A bare CR inside a field is data; CRLF and LF both end a record; the last needs no line end.
        #expect(try read("a,b\nx\ry,\"q\r\n\"\r\nz,w", .csv) == [["a": .text("x\ry"), "b": .text("q\r\n")], ["a": .text("z"), "b": .text("w")]])
        // Invalid UTF-8: CSV text gets U+FFFD, NDJSON says which line.
        #expect(try read(Data("a\n".utf8) + Data([0xFF, 0xC3, 0x28]) + Data("\n".utf8), .csv) == [["a": .text("\u{FFFD}\u{FFFD}(")]])
        #expect(throws: BatchStoreError(.invalidArgument, "line 2: not a JSON object")) {
            try read(Data("{\"a\": 1}\n".utf8) + Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) + Data("\n".utf8), .ndjson)
        }
        #expect(try read("\n  \r\n{\"a\": \"x\"}\r\n\n", .ndjson) == [["a": .text("x")]], "blank lines are skipped")
        #expect(throws: BatchStoreError(.invalidArgument, "line 1: not a JSON object")) { try read("[1]\n", .ndjson) }
        #expect(throws: BatchStoreError(.invalidArgument, "CSV: a quoted field is not closed at the end of the file")) { try read("a\n\"open\n", .csv) }
        #expect(throws: BatchStoreError(.invalidArgument, "CSV row 1: 2 fields, but the header has 1")) { try read("a\n1,2\n", .csv) }
        #expect(throws: BatchStoreError(.invalidArgument, "the CSV file is empty: it needs a header line of column names")) { try read("", .csv) }
        #expect(throws: BatchStoreError(.invalidArgument, "the JSON file must hold one array of objects")) { try read("{}", .json) }
        #expect(throws: BatchStoreError(.invalidArgument, "JSON item 2 is not an object")) { try read("[{}, 3]", .json) }
        #expect(throws: BatchStoreError(.invalidArgument, "row 1: b has a $blob that is not base64")) { try read("{\"b\": {\"$blob\": \"!!\"}}\n", .ndjson) }
        // Nested JSON is kept as its JSON text; a number too big for Int64 becomes a real.
        #expect(try read("{\"j\": {\"z\": [1, \"x\"], \"a\": null}, \"big\": 18446744073709551616}\n", .ndjson)
            == [["j": .text("{\"a\":null,\"z\":[1,\"x\"]}"), "big": .real(18446744073709551616)]])
        // Quotes in the middle of an unquoted field are data.
        #expect(try read("a\nx\"y\"\n", .csv) == [["a": .text("x\"y\"")]])
    }
}

@Suite struct JSONNumberTests {
    @Test func numbersKeepTheirStorageClass() throws {
        let rows = try read("{\"a\": 2.0, \"b\": 2, \"c\": -0.0, \"d\": 1e3, \"e\": true, \"f\": -9223372036854775808}\n", .ndjson)
        #expect(rows.count == 1)
        let row = rows.first ?? [:]
        #expect(same(row["a"], .real(2)) && same(row["b"], .integer(2)) && same(row["c"], .real(-0.0)) && same(row["d"], .real(1000)))
        #expect(row["e"] == .integer(1), "JSON true is 1, as SQLite has it")
        #expect(row["f"] == .integer(.min))
        #expect(try read("{\"g\": -4611686018427387904, \"h\": 9223372036854775807}\n", .ndjson) == [["g": .integer(-(1 << 62)), "h": .integer(.max)]])
    }
}
