import BatchStore
import Foundation
import FuzzSupport

/// One fuzz input for the assignment parser (UpdateExpression.parseAssignments): it may be refused with an error, never crash.
func fuzzOne(_ data: Data) {
    _ = try? UpdateExpression.parseAssignments(String(decoding: data, as: UTF8.self))
}

@main enum Harness {
    static func main() { runFuzzHarness(fuzzOne) }
}
