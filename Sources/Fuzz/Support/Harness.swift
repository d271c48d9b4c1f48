import Foundation
#if FUZZING
import FuzzDriver
#endif

/// The input a harness tests, set once by ``runFuzzHarness(_:)`` before anything runs.
nonisolated(unsafe) private var harnessBody: (Data) -> Void = { _ in }

/// A harness's whole `main`: `fuzzOne` gets one input and may refuse it with an error, never crash.
///
/// Built with `-sanitize=fuzzer,address -DFUZZING` (`make fuzz`), libFuzzer's driver runs the
/// fuzzing loop with the process's arguments; a plain build replays the files or folders given as
/// arguments (the committed corpus, e.g. `FuzzCSV Tests/FuzzCorpus/csv`).
public func runFuzzHarness(_ fuzzOne: @escaping (Data) -> Void) -> Never {
    harnessBody = fuzzOne
    #if FUZZING
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in fuzzerTestOneInput(bytes, count) })
    #else
    replayCorpus(Array(CommandLine.arguments.dropFirst()), fuzzOne)
    exit(0)
    #endif
}

#if FUZZING
/// libFuzzer's entry point, which its runtime links against: the harness's body on one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    harnessBody(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}
#endif
