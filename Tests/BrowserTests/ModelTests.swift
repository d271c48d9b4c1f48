import Foundation
import Testing

/// The browser's model-based random run (``BrowserModel``, one definition in TestSupport) on a
/// SQLite file; the same run goes over PostgreSQL in `PostgresBrowserModelTests`.
@Suite("Model-based random run (SQLite)", .tags(.slow), .timeLimit(slowTestLimit))
struct ModelTests {
    @Test("the browser, the file and a plain Swift model agree after every step")
    func modelRun() throws {
        let steps = Int(ProcessInfo.processInfo.environment["FAULTLINE_MODEL_STEPS"] ?? "") ?? 3000
        let failure = try BrowserModel.check(steps: steps, seed: 11, engine: .sqlite)
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test("the model itself notices a wrong file: a delete the browser did not make is a failure")
    func modelCanFail() throws {
        let failure = try BrowserModel.failureOfAWrongModel(engine: .sqlite)
        #expect(failure?.contains("differs from the model") == true, "\(failure ?? "nil")")
    }
}
