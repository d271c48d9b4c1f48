import Browser
import Foundation

/// Progress on stderr for work that takes over a second: `label… 3.2 s (1,200,000 rows)`, redrawn four
/// times a second from a timer queue while the work runs on the caller's thread. Only on a terminal.
final class Ticker: @unchecked Sendable {
    private let label: String
    private let lock = NSLock()
    private var counter = 0
    private var drew = false
    private let start = DispatchTime.now().uptimeNanoseconds
    private let timer: DispatchSourceTimer?

    init(_ label: String, enabled: Bool = isatty(2) == 1) {
        self.label = label
        guard enabled else { timer = nil; return }
        let t = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer = t
        t.schedule(deadline: .now() + 1, repeating: .milliseconds(250))
        t.setEventHandler { [weak self] in self?.draw() }
        t.resume()
    }

    /// Sets the count shown (rows read so far); cheap enough to call per row.
    func set(_ n: Int) {
        lock.lock(); counter = n; lock.unlock()
    }

    private func draw() {
        lock.lock()
        let n = counter
        drew = true
        lock.unlock()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let rows = n > 0 ? " (\(counted(n, "row")))" : ""
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(label)… \(String(format: "%.1f", seconds)) s\(rows)".utf8))
    }

    /// Stops the ticker and clears its line.
    func stop() {
        timer?.cancel()
        lock.lock(); let clear = drew; lock.unlock()
        if clear { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}
