import BatchStore
import Foundation
import FuzzDriver
import FuzzSupport

/// One fuzz input for the assignment parser (UpdateExpression.parseAssignments): it may be refused with an error, never crash.
func fuzzOne(_ data: Data) {
    _ = try? UpdateExpression.parseAssignments(String(decoding: data, as: UTF8.self))
}

#if FUZZING
/// libFuzzer's entry point, which its driver links against.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    fuzzOne(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// Under libFuzzer (built with `-sanitize=fuzzer,address -DFUZZING`; see `make fuzz`).
@main enum Fuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in fuzzerTestOneInput(bytes, count) })
    }
}
#else
/// Without libFuzzer: replays the files or folders given as arguments (the committed corpus).
@main enum Replay {
    static func main() { replayCorpus(Array(CommandLine.arguments.dropFirst()), fuzzOne) }
}
#endif
