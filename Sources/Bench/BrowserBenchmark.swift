import BatchStore
import Browser
import Foundation
import TerminalCore

/// Times scroll keys in the real browser against the in-memory screen: from the key to a finished
/// frame (reduce, faults, render, diff). Used by `faultline bench`.
enum BrowserBenchmark {
    struct Figures: Sendable, Codable {
        var rows: Int
        var keys: Int
        var width: Int
        var height: Int
        var openSeconds: Double
        /// Wall time of the whole key run (the keys, and the untimed `:N` typing).
        var keysSeconds: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var maxMilliseconds: Double
        /// Average cells sent for a one-row move (`j`), against the cells of the whole screen.
        var cellsPerRowStep: Double
        var screenCells: Int
        var peakRSS: Int
    }

    /// Opens `table` of `path` on a `width`×`height` in-memory terminal and sends `keys` scroll keys
    /// drawn from a fixed-seed mix (j, k, pages, half pages, g, G, h, l, and `:N` jumps anywhere).
    static func scroll(path: String, table: String = "movie", keys count: Int = 3000, width: Int = 200, height: Int = 50) throws -> Figures {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let terminal = MemoryTerminal(width: width, height: height)
        let started = Date()
        let browser = try Browser(store: store, options: BrowserOptions(table: table), backend: terminal)
        browser.start()
        let openSeconds = Date().timeIntervalSince(started)
        var figures = scroll(browser, terminal: terminal, keys: count)
        figures.openSeconds = openSeconds
        return figures
    }

    /// Sends `count` scroll keys to `browser` (whatever sheet it shows) as ``scroll(path:table:keys:width:height:)``
    /// does; `openSeconds` is 0.
    static func scroll(_ browser: Browser, terminal: MemoryTerminal, keys count: Int) -> Figures {
        let rows = browser.state.count
        let (width, height) = terminal.size
        let keysStarted = Date()
        var rng = SplitMix64(seed: 7)
        var times: [Double] = []
        var stepCells: [Int] = []
        times.reserveCapacity(count)
        for _ in 0..<count {
            let r = rng.below(100)
            let key: Key
            switch r {
            case 0..<40: key = .char("j")
            case 40..<55: key = .char("k")
            case 55..<70: key = .pageDown
            case 70..<80: key = .pageUp
            case 80..<83: key = .char("G")
            case 83..<86: key = .char("g")
            case 86..<89: key = .char("l")
            case 89..<92: key = .char("h")
            case 92..<96: key = .ctrl("d")
            default:
                // A jump anywhere: type ":N" (untimed), time the Enter that moves.
                browser.send(.char(":"))
                for c in String(1 + rng.below(max(1, rows))) { browser.send(.char(c)) }
                key = .enter
            }
            let seconds = browser.send(key)
            times.append(seconds)
            if key == .char("j") { stepCells.append(terminal.lastCellsSent) }
        }
        times.sort()
        func percentile(_ p: Double) -> Double { times[min(times.count - 1, Int(Double(times.count) * p))] * 1000 }
        return Figures(rows: rows, keys: count, width: width, height: height, openSeconds: 0, keysSeconds: Date().timeIntervalSince(keysStarted),
                       p50Milliseconds: percentile(0.5), p99Milliseconds: percentile(0.99), maxMilliseconds: (times.last ?? 0) * 1000,
                       cellsPerRowStep: stepCells.isEmpty ? 0 : Double(stepCells.reduce(0, +)) / Double(stepCells.count),
                       screenCells: width * height, peakRSS: ProcessMemory.peakResidentBytes())
    }
}

/// Keys while a result's IDs load: `j` and `k` over the first rows, one every `interval`, as a
/// fast user types them, from the moment the first rows show until the fetch ends; each timed
/// from the moment it was typed (released to the browser) to the next frame presented after the
/// browser read it. The fetch is timed with those keys and alone.
extension BrowserBenchmark {
    struct LoadKeyFigures: Sendable, Codable {
        var rows: Int
        var sortKey: String
        var keys: Int
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var maxMilliseconds: Double
        var fetchSeconds: Double
        var fetchWithKeysSeconds: Double
    }

    /// A terminal that releases `j`/`k` keys on a schedule once `ready()` says the first rows show,
    /// and times each key to the frame after it.
    final class TimedKeys: TerminalBackend {
        let memory: MemoryTerminal
        let interval: Double
        var ready: () -> Bool = { false }
        var sending = false
        private var started: Double?
        private var released = 0
        private var consumed: [Double] = []   // release times of keys read and not yet drawn
        private(set) var latencies: [Double] = []

        init(width: Int, height: Int, interval: Double, sending: Bool) {
            memory = MemoryTerminal(width: width, height: height)
            self.interval = interval
            self.sending = sending
        }

        static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

        var size: (width: Int, height: Int) { memory.size }
        var colorsEnabled: Bool { true }
        func present(_ frame: ScreenBuffer) {
            memory.present(frame)
            let t = Self.now()
            for r in consumed { latencies.append(t - r) }
            consumed.removeAll()
        }
        func nextKey(timeoutMilliseconds: Int?) -> Key? {
            guard sending, ready() else {
                // As a terminal with nothing typed: the wait, not a spin.
                Thread.sleep(forTimeInterval: min(Double(timeoutMilliseconds ?? 10), 10) / 1000)
                return nil
            }
            let start = started ?? Self.now()
            started = start
            let due = start + Double(released) * interval
            let wait = due - Self.now()
            if wait > 0 {
                let limit = timeoutMilliseconds.map { Double($0) / 1000 } ?? wait
                Thread.sleep(forTimeInterval: min(wait, limit))
                if Self.now() < due { return nil }
            }
            consumed.append(due)
            released += 1
            // Twenty down, twenty up: always over the first rows.
            return (released - 1) % 40 < 20 ? .char("j") : .char("k")
        }
        func setClipboard(base64: String) {}
        func discardTypeAhead() {}
    }

    static func keysDuringLoad(path: String, table: String = "movie", sortKey: String, repeats: Int, width: Int = 200, height: Int = 50) throws -> LoadKeyFigures {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        return try keysDuringLoad(sortKey: sortKey, repeats: repeats, width: width, height: height) { terminal in
            try Browser(store: store, options: BrowserOptions(table: table, sort: sortKey), backend: terminal)
        }
    }

    /// The same over any engine: `makeBrowser` opens the sorted sheet on the terminal it is given.
    static func keysDuringLoad(sortKey: String, repeats: Int, width: Int = 200, height: Int = 50,
                               makeBrowser: (any TerminalBackend) throws -> Browser) throws -> LoadKeyFigures {
        var latencies: [Double] = []
        var alone: [Double] = [], withKeys: [Double] = []
        var rows = 0
        for round in 0..<(2 * repeats) {
            let sending = round % 2 == 1
            let terminal = TimedKeys(width: width, height: height, interval: 0.02, sending: sending)
            let browser = try makeBrowser(terminal)
            terminal.ready = { [unowned browser] in browser.state.firstRowsShown }
            let started = TimedKeys.now()
            browser.start()
            while browser.idle() {}
            let seconds = TimedKeys.now() - started
            rows = browser.state.count
            if sending { withKeys.append(seconds); latencies += terminal.latencies } else { alone.append(seconds) }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000 }
        return LoadKeyFigures(rows: rows, sortKey: sortKey, keys: latencies.count, p50Milliseconds: percentile(0.5), p99Milliseconds: percentile(0.99),
                              maxMilliseconds: (latencies.last ?? 0) * 1000, fetchSeconds: Benchmark.median(alone), fetchWithKeysSeconds: Benchmark.median(withKeys))
    }
}
