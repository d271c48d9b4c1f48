import BatchStore
import FaultlineCodecs
import Foundation
import Testing

/// The CSV reader scans whole chunks at a time, so a record may break across chunks anywhere: in
/// a quoted field, between a quote and its double, between CR and LF. This checks it against a
/// plain byte-at-a-time reading of the same rules, on random inputs read in chunks of every size.
@Suite struct CSVModelTests {
    /// The rules, one byte at a time: a header, then records of fields; NULL for an empty unquoted
    /// field, a blob for unquoted `\x` + an even number of lowercase hex digits, else text; a
    /// quote opens a quoted field only as a field's first byte; CR is dropped before LF.
    /// The records the rules read, and the error that ended the reading early, if any.
    static func model(_ input: [UInt8]) -> (records: [[SQLValue]], error: BatchStoreError?) {
        var bytes = input
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        var records: [[SQLValue]] = []
        var i = 0
        func nibble(_ b: UInt8) -> UInt8? { (48...57).contains(b) ? b - 48 : (97...102).contains(b) ? b - 87 : nil }
        while i < bytes.count {
            var fields: [SQLValue] = []
            var field: [UInt8] = []
            var quoted = false, inQuotes = false, ended = false
            func finish() {
                if !quoted && field.isEmpty {
                    fields.append(.null)
                } else if !records.isEmpty && !quoted && field.count >= 2 && field.count % 2 == 0 && field[0] == 92 && field[1] == 120 && field.dropFirst(2).allSatisfy({ nibble($0) != nil }) {
                    let digits = Array(field.dropFirst(2))
                    fields.append(.blob(Data(stride(from: 0, to: digits.count - 1, by: 2).map { (nibble(digits[$0]) ?? 0) << 4 | (nibble(digits[$0 + 1]) ?? 0) })))
                } else {
                    fields.append(.text(String(decoding: field, as: UTF8.self)))
                }
                field = []
                quoted = false
            }
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                let next = i < bytes.count ? bytes[i] : nil
                if inQuotes {
                    if b == 34 {
                        if next == 34 { i += 1; field.append(34) } else { inQuotes = false }
                    } else { field.append(b) }
                    continue
                }
                if b == 34 && field.isEmpty && !quoted { inQuotes = true; quoted = true }
                else if b == 44 { finish() }
                else if b == 13 && next == 10 { continue }
                else if b == 10 { finish(); ended = true; break }
                else { field.append(b) }
            }
            if !ended {
                if inQuotes { return (records, BatchStoreError(.invalidArgument, "CSV: a quoted field is not closed at the end of the file")) }
                finish()
            }
            records.append(fields)
        }
        if records.isEmpty { return ([], BatchStoreError(.invalidArgument, "the CSV file is empty: it needs a header line of column names")) }
        return (records, nil)
    }

    /// What a reader must answer for `input`: the header as names (text as written, an empty
    /// name for NULL), then the records, up to the first whose field count differs from the
    /// header's (refused, naming it) or the error that ended the reading.
    static func expected(_ input: [UInt8]) -> Result<[[SQLValue]], BatchStoreError> {
        var (records, error) = model(input)
        guard !records.isEmpty else { return .failure(error ?? BatchStoreError(.invalidArgument, "no header")) }
        records[0] = records[0].map { if case .text = $0 { return $0 } else { return .text("") } }
        if let bad = records.dropFirst().firstIndex(where: { $0.count != records[0].count }) {
            return .failure(BatchStoreError(.invalidArgument, "CSV row \(bad): \(records[bad].count) field\(records[bad].count == 1 ? "" : "s"), but the header has \(records[0].count)"))
        }
        if let error { return .failure(error) }
        return .success(records)
    }

    /// What the reader makes of `input` read `chunk` bytes at a time: the header as it names
    /// columns (an empty name for NULL), then each record by position.
    static func read(_ input: [UInt8], chunk: Int) -> Result<[[SQLValue]], BatchStoreError> {
        var offset = 0
        let bytes = ByteReader { count in
            let end = min(offset + min(count, chunk), input.count)
            defer { offset = end }
            return Data(input[offset..<end])
        }
        do {
            let reader = try RowReader(bytes: bytes, format: .csv)
            var records: [[SQLValue]] = [reader.columns.map { .text($0) }]
            while let values = try reader.nextValues() { records.append(values) }
            return .success(records)
        } catch let error as BatchStoreError {
            return .failure(error)
        } catch {
            return .failure(BatchStoreError(.invalidArgument, "\(error)"))
        }
    }

    @Test("random CSV read in chunks of 1 to 9 bytes and of 64 KiB: the same header, fields and errors as the byte-at-a-time rules")
    func randomInputsAgreeWithTheRules() {
        let pieces: [[UInt8]] = ["a", "Zé", ",", ",", "\"", "\"\"", "\n", "\r\n", "\r", "\\x", "\\x0f", "\\xA", "7", " ", "𝄞"].map { Array($0.utf8) } + [[0xFF], [0xEF, 0xBB, 0xBF]]
        var random = SplitMix64(seed: 36)
        for round in 0..<3_000 {
            let length = Int(random.next() % 40)
            let input = (0..<length).flatMap { _ in pieces[Int(random.next() % UInt64(pieces.count))] }
            let expected = Self.expected(input)
            for chunk in [1 + Int(random.next() % 9), 65_536] {
                let got = Self.read(input, chunk: chunk)
                #expect(String(describing: got) == String(describing: expected), "round \(round), chunks of \(chunk): \(String(decoding: input, as: UTF8.self).debugDescription)")
            }
        }
    }
}
