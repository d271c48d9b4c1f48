import BatchStore
import Browser
import Foundation
import TerminalCore

/// The frequency and summary sheets' targets (issue 13): each sheet's SQL beside SQLite's own
/// query for the same figures, and, in a fresh process, the browser's time to the first figures,
/// its peak memory, and scroll keys on a frequency sheet of a column whose values are all distinct.
extension Benchmark {
    /// The filter the filtered frequency uses (the batch requests' `year >= 2000`).
    static let sheetFilter = "year >= 2000"
    /// The columns the summary sheet shows for `movie`.
    static let movieColumns = ["id", "title", "year", "rating", "votes", "genre", "director_id"]
    /// The bench's query (`--query`): a join of the demo's movies to their directors, filtered and
    /// sorted on columns without an index.
    static let queryJoin = "SELECT m.id, m.title, m.year, m.rating, d.name FROM movie m JOIN director d ON d.id = m.director_id WHERE m.year >= 1990 ORDER BY m.rating DESC, m.id"
    /// The bench's grouping query: votes by genre.
    static let queryGroupBy = "SELECT genre, count(*) AS n, sum(votes) AS votes FROM movie GROUP BY genre ORDER BY genre"

    /// The frequency of `genre` over the whole table or over ``sheetFilter``, complete (the temp
    /// table filled, the figures read), ours as the browser runs it (the rows the fetch matches
    /// now) vs `SELECT genre, count(*) FROM movie [WHERE …] GROUP BY genre` stepped to its end.
    /// Target: 1.2x.
    static func frequency(path: String, filtered: Bool, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        let context = try ManagedObjectContext(store: store)
        let request = FetchRequest(entityName: "movie", predicate: filtered ? try FetchPredicate(format: sheetFilter) : nil, fetchBatchSize: 100)
        let rows = try context.fetchBatched(request)
        let sql = "SELECT genre, count(*) FROM movie\(filtered ? " WHERE \(sheetFilter)" : "") GROUP BY genre"
        var ours: [Double] = [], base: [Double] = []
        for _ in 0..<repeats {
            base.append(try time { try raw.sweep(sql) })
            ours.append(try time { _ = try rows.frequencies(of: "genre", rows: .matchingNow).count })
        }
        return Comparison(name: filtered ? "frequency of genre, \(sheetFilter)" : "frequency of genre, whole table",
                          oursSeconds: median(ours), rawSeconds: median(base), target: 1.2, baseline: sql)
    }

    /// The raw statement for one column's summary figures: everything the summary sheet shows but
    /// the most frequent value, in one aggregate (with `count(DISTINCT …)`).
    static func summaryBaselineSQL(_ column: String) -> String {
        let c = quoteIdentifier(column)
        return """
            SELECT count(*), count(*) - count(\(c)), count(DISTINCT \(c)), min(\(c)), max(\(c)),
              avg(CASE WHEN typeof(\(c)) IN ('integer', 'real') THEN \(c) END),
              min(CASE WHEN typeof(\(c)) = 'text' THEN length(\(c)) END), max(CASE WHEN typeof(\(c)) = 'text' THEN length(\(c)) END),
              max(typeof(\(c)) = 'integer'), max(typeof(\(c)) = 'real'), max(typeof(\(c)) = 'text'), max(typeof(\(c)) = 'blob')
            FROM movie
            """
    }

    /// The summary of every column of `movie`, complete (ours as the browser runs it, the most
    /// frequent value included), vs the single aggregate query per column
    /// (``summaryBaselineSQL(_:)``), summed over the columns. Target: 1.5x.
    static func summary(path: String, repeats: Int) throws -> Comparison {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let raw = try RawConnection(path: path)
        let rows = try ManagedObjectContext(store: store).fetchBatched(FetchRequest(entityName: "movie", fetchBatchSize: 100))
        var ours: [Double] = [], base: [Double] = []
        for _ in 0..<repeats {
            base.append(try time { for column in movieColumns { try raw.sweep(summaryBaselineSQL(column)) } })
            ours.append(try time { for column in movieColumns { _ = try rows.summary(of: column, rows: .matchingNow) } })
        }
        return Comparison(name: "summary of \(movieColumns.count) columns", oursSeconds: median(ours), rawSeconds: median(base), target: 1.5,
                          baseline: "one SELECT count(*), count(DISTINCT c), min, max, avg, text lengths, classes FROM movie per column")
    }

    /// What the sheets cost in the browser, measured in a fresh process (`bench-worker DB --mode sheets`).
    struct SheetFigures: Sendable, Codable {
        var rows: Int
        /// From the key to the first frame showing figures: the frequency sheet of `genre` (whole
        /// table), and the summary sheet's first filled row (over a large result, a sample's
        /// figures, marked `≈`), then its first row of exact figures.
        var frequencyFirstSeconds: Double
        var frequencySeconds: Double
        var summaryFirstSeconds: Double
        var summaryFirstExactSeconds: Double
        var summarySeconds: Double
        /// RSS when the table was open, and the peak while `F` and `I` ran (peak reset before them).
        var openRSS: Int
        var sheetsPeakRSS: Int
        /// The frequency sheet of `id` (every value distinct): its distinct values, how long `F`
        /// took, scroll keys on it, and the peak while it was counted and scrolled.
        var distinctValues: Int
        var distinctSeconds: Double
        var scroll: BrowserBenchmark.Figures
        var distinctPeakRSS: Int
    }

    /// Runs the sheets in the browser on an in-memory screen (see ``SheetFigures``).
    static func sheets(path: String, keys: Int = 3000) throws -> SheetFigures {
        let store = try PersistentStore(path: path, options: .init(readOnly: true))
        let terminal = WatchedTerminal(MemoryTerminal(width: 200, height: 50))
        let browser = try Browser(store: store, options: BrowserOptions(table: "movie"), backend: terminal)
        browser.start()
        let rows = browser.state.count
        func column(_ name: String) {
            guard let target = browser.state.columns.firstIndex(of: name) else { return }
            while browser.state.cursorColumn < target { browser.send(.char("l")) }
            while browser.state.cursorColumn > target { browser.send(.char("h")) }
        }
        /// Seconds from now to the end of `key`, and to the first frame where `shown` holds.
        func timed(_ key: Key, until shown: @escaping () -> Bool) -> (first: Double, total: Double) {
            let started = DispatchTime.now().uptimeNanoseconds
            var first: Double?
            terminal.onPresent = { let isShown = shown(); if first == nil, isShown { first = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 } }
            browser.send(key)
            terminal.onPresent = nil
            let total = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            return (first ?? total, total)
        }
        ProcessMemory.returnFreeMemory()
        let openRSS = ProcessMemory.residentBytes()
        ProcessMemory.resetPeak()
        column("genre")
        let frequency = timed(.char("F")) { browser.state.frequencySheet != nil }
        browser.send(.escape)
        var firstExact: Double?
        let summaryStarted = DispatchTime.now().uptimeNanoseconds
        let summary = timed(.char("I")) {
            if firstExact == nil, browser.state.summarySheet?.rows.contains(where: { $0 != nil && $0?.sampledFrom == nil }) ?? false {
                firstExact = Double(DispatchTime.now().uptimeNanoseconds - summaryStarted) / 1e9
            }
            return browser.state.summarySheet?.rows.contains { $0 != nil } ?? false
        }
        browser.send(.escape)
        let sheetsPeak = ProcessMemory.peakResidentBytes()

        ProcessMemory.returnFreeMemory()
        ProcessMemory.resetPeak()
        column("id")
        let distinct = timed(.char("F")) { browser.state.frequencySheet != nil }
        let values = browser.state.frequencySheet != nil ? browser.state.count : 0
        let scroll = BrowserBenchmark.scroll(browser, terminal: terminal.inner, keys: keys)
        return SheetFigures(rows: rows, frequencyFirstSeconds: frequency.first, frequencySeconds: frequency.total,
                            summaryFirstSeconds: summary.first, summaryFirstExactSeconds: firstExact ?? summary.total, summarySeconds: summary.total, openRSS: openRSS, sheetsPeakRSS: sheetsPeak,
                            distinctValues: values, distinctSeconds: distinct.total, scroll: scroll, distinctPeakRSS: ProcessMemory.peakResidentBytes())
    }
}

/// A terminal that tells the bench when a frame is presented (to time the first figures).
final class WatchedTerminal: TerminalBackend {
    let inner: MemoryTerminal
    var onPresent: (() -> Void)?
    init(_ inner: MemoryTerminal) { self.inner = inner }
    var size: (width: Int, height: Int) { inner.size }
    var colorsEnabled: Bool { inner.colorsEnabled }
    func present(_ frame: ScreenBuffer) {
        inner.present(frame)
        onPresent?()
    }
    func nextKey(timeoutMilliseconds: Int?) -> Key? { inner.nextKey(timeoutMilliseconds: timeoutMilliseconds) }
    func setClipboard(base64: String) { inner.setClipboard(base64: base64) }
    func discardTypeAhead() { inner.discardTypeAhead() }
}
