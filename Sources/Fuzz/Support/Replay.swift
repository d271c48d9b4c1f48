import Foundation

/// Runs `body` on every file named in `paths` (folders: every file inside, in name order): how a
/// fuzz harness built without libFuzzer replays a corpus, e.g. `FuzzCSV Tests/FuzzCorpus/csv`.
/// Prints how many inputs ran; a crash in `body` stops the process, naming nothing but the input
/// it was on (printed before each run when `FAULTLINE_FUZZ_VERBOSE` is set).
public func replayCorpus(_ paths: [String], _ body: (Data) -> Void) {
    let files = paths.flatMap { path -> [String] in
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { (path as NSString).appendingPathComponent($0) }
    }
    let verbose = ProcessInfo.processInfo.environment["FAULTLINE_FUZZ_VERBOSE"] != nil
    var count = 0
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        if verbose { print(file) }
        body(data)
        count += 1
    }
    print("replayed \(count) input\(count == 1 ? "" : "s")")
}
