import BatchStore
import Foundation
import FuzzSupport

/// One fuzz input for the assignment parser (UpdateExpression.parseAssignments): it may be refused with an error, never crash.
func fuzzOne(_ data: Data) {
    _ = try? UpdateExpression.parseAssignments(String(decoding: data, as: UTF8.self))
}

#if FUZZING
/// libFuzzer's entry point (built with `-sanitize=fuzzer,address -DFUZZING`; see `make fuzz`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    fuzzOne(Data(bytes: bytes, count: count))
    return 0
}
#else
/// Without libFuzzer: replays the files or folders given as arguments (the committed corpus).
@main enum Replay {
    static func main() { replayCorpus(Array(CommandLine.arguments.dropFirst()), fuzzOne) }
}
#endif
