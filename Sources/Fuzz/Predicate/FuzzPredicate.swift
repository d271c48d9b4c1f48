import BatchStore
import Foundation
import FuzzSupport

/// One fuzz input for the predicate parser (FetchPredicate(format:)), with %K and %@ arguments when the text asks for them: it may be refused with an error, never crash.
func fuzzOne(_ data: Data) {
    let text = String(decoding: data, as: UTF8.self)
    let arguments: [PredicateArgument] = text.contains("%") ? [.key("year"), .value(.integer(1))] : []
    _ = try? FetchPredicate(format: text, arguments: arguments)
}

@main enum Harness {
    static func main() { runFuzzHarness(fuzzOne) }
}
