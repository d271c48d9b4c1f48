import BatchStore
@testable import FaultlineCodecs
import Foundation
import Testing

/// The one-pass NDJSON reader decides a line only when it gives exactly what the general path
/// (Foundation's reader plus the number texts) gives; every other line goes to that path.
@Suite struct FlatJSONTests {
    /// The general path, as `RowReader` runs it for a line the fast reader leaves.
    func general(_ line: [UInt8]) -> [String: SQLValue]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { return nil }
        return try? RowReader.convert(object, row: 1, numbers: RowReader.numberTexts(line, objectDepth: 0).first ?? [:])
    }

    func sameRow(_ a: [String: SQLValue], _ b: [String: SQLValue]) -> Bool {
        a.count == b.count && a.allSatisfy { key, value in same(value, b[key]) }
    }

    static let keys = ["id", "a", "$blob", "$store", "naïve", "with space", "q\\\"uote", "tab\\t", "k\\u0041", ""]
    static let strings = ["", "plain", "Ölfarben", "日本😀", "\\\"", "\\\\", "\\/", "\\n\\r\\t\\b\\f", "\\u00e9", "\\ud83d\\ude00", "\\ud800",
                          "\u{feff}", "\u{2028}", "\u{85}", "\\x41", "a,b", "\\q", "\u{1}"]
    static let numbers = ["0", "-0", "7", "-12", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                          "1.5", "-0.0", "2.0", "1e3", "1E-3", "1e400", "-1e400", "0.30000000000000004", "01", "1.", ".5", "-", "1e", "+1", "0x10", "1000000000000000.0"]

    static func value(_ rng: inout SplitMix64) -> String {
        switch rng.below(9) {
        case 0: return "null"
        case 1: return ["true", "false", "nul", "NULL"][rng.below(4)]
        case 2, 3: return numbers[rng.below(numbers.count)]
        case 4, 5: return "\"" + (0..<rng.below(4)).map { _ in strings[rng.below(strings.count)] }.joined() + "\""
        case 6:
            let bytes = Data((0..<rng.below(9)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            let base64 = [bytes.base64EncodedString(), "not base64!", "QQ", ""][rng.below(4)]
            return ["{\"$blob\":\"\(base64)\"}", "{ \"$blob\" : \"\(base64)\" }", "{\"$blob\":\"\(base64)\",\"x\":1}", "{\"$blob\":7}"][rng.below(4)]
        case 7: return ["[1,2]", "{\"a\":[1,{\"b\":null}]}", "{}", "[]"][rng.below(4)]
        default: return "\"" + strings[rng.below(strings.count)] + "\""
        }
    }

    static func line(_ rng: inout SplitMix64) -> [UInt8] {
        let space = { (rng: inout SplitMix64) -> String in ["", "", " ", "\t", " \r"][rng.below(5)] }
        var fields: [String] = []
        for _ in 0..<rng.below(5) {
            fields.append(space(&rng) + "\"" + keys[rng.below(keys.count)] + "\"" + space(&rng) + ":" + space(&rng) + value(&rng) + space(&rng))
        }
        var bytes = Array((space(&rng) + "{" + fields.joined(separator: ",") + "}" + space(&rng)).utf8)
        switch rng.below(10) {
        case 0 where !bytes.isEmpty: bytes.remove(at: rng.below(bytes.count))
        case 1: bytes.insert([0x2C, 0x22, 0x7B, 0x7D, 0xFF, 0x00, 0x20][rng.below(7)], at: rng.below(bytes.count + 1))
        case 2: bytes += Array(" x".utf8)
        default: break
        }
        return bytes
    }

    @Test func decidesOnlyWhatTheGeneralPathGivesAlike() {
        var rng = SplitMix64(seed: 52)
        var decided = 0
        for round in 0..<20_000 {
            let line = Self.line(&rng)
            guard let fast = FlatJSON.object(line) else { continue }
            decided += 1
            let slow = general(line)
            #expect(slow.map { sameRow(fast, $0) } == true, "round \(round): \(String(decoding: line, as: UTF8.self)) fast \(fast) general \(String(describing: slow))")
        }
        #expect(decided > 2_000, "the fast reader takes the common lines (\(decided) of 20000)")
    }

    /// What `export` writes is read by the fast reader, except values it escapes with `\u`.
    @Test func exportedLinesTakeTheFastPath() {
        let writer = RowWriter(format: .ndjson, columns: ["id", "title", "rating", "data", "none"])
        let values: [[SQLValue]] = [
            [.integer(1), .text("The Lost Mirror"), .real(7.25), .blob(Data([1, 2, 3])), .null],
            [.integer(-9_223_372_036_854_775_808), .text("Ölfarben \"q\" \\ / \n\t"), .real(-0.0), .blob(Data()), .null],
            [.integer(3), .text("日本😀"), .real(1e300), .blob(Data(repeating: 255, count: 100)), .text("")],
        ]
        for row in values {
            let line = Array(writer.line(row).utf8.dropLast())
            let fast = FlatJSON.object(line)
            #expect(fast != nil, "\(String(decoding: line, as: UTF8.self))")
            if let fast, let slow = general(line) { #expect(sameRow(fast, slow)) }
        }
    }
}
