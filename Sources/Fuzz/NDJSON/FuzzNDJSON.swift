import FaultlineCodecs
import Foundation
import FuzzSupport

/// One fuzz input for the NDJSON reader (RowReader, one JSON object per line): it may be refused with an error, never crash.
func fuzzOne(_ data: Data) {
    guard let reader = try? RowReader(bytes: ByteReader(data: data), format: .ndjson) else { return }
    while let row = try? reader.next() { _ = row }
}

@main enum Harness {
    static func main() { runFuzzHarness(fuzzOne) }
}
