import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// A clock that moves 5 ms each time it is read, and an RSS that grows 1 MB each time it is
/// read: every figure on screen is known in advance.
final class FakeFacts: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds = 1000.0
    private var rss = 40 << 20

    var environment: BrowserEnvironment {
        BrowserEnvironment(now: { self.lock.withLock { self.seconds += 0.005; return self.seconds } },
                           residentBytes: { self.lock.withLock { self.rss += 1 << 20; return self.rss } },
                           peakResidentBytes: { 200 << 20 })
    }
}

@Suite("Whole screens with a fake clock and fake memory")
struct WholeScreenTests {
    @Test("open, the memory panel, a search and an edit: every line of the screen, timings and memory included")
    func session() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 40)
        let store = try PersistentStore(path: path)
        let term = MemoryTerminal(width: 90, height: 20)
        let b = try Browser(store: store, options: BrowserOptions(batchSize: 10), backend: term, environment: FakeFacts().environment)
        b.start()
        #expect(term.text == [
            "  #  id v   name",
            "  1  1  10  row 1",
            "  2  2  20  row 2",
            "  3  3  30  row 3",
            "  4  4  40  row 4",
            "  5  5  50  row 5",
            "  6  6  60  row 6",
            "  7  7  70  row 7",
            "  8  8  80  row 8",
            "  9  9  90  row 9",
            " 10  10 100 row 10",
            " 11  11 110 row 11",
            " 12  12 120 row 12",
            " 13  13 130 row 13",
            " 14  14 140 row 14",
            " 15  15 150 row 15",
            " 16  16 160 row 16",
            " 17  17 170 row 17",
            " n │ row 1 of 40                                                                   ? help",
            "40 rows in 10 ms (IDs in SQLite, rows faulted 10 at a time)",
        ])
        b.send(.char("m"))
        b.send(keys("ll/row 33") + [.enter])
        b.settleReads()
        #expect(term.text == [
            "  #  id v   name                                        │ Memory (m hides)",
            " 17  17 170 row 17                                      │ RSS      52.0 MB",
            " 18  18 180 row 18                                      │ peak     200.0 MB",
            " 19  19 190 row 19                                      │ objects  40 alive",
            " 20  20 200 row 20                                      │ batches  4/8 resident",
            " 21  21 210 row 21                                      │ values   17 KB packed",
            " 22  22 220 row 22                                      │ faulted  4 batches",
            " 23  23 230 row 23                                      │ row IDs  40",
            " 24  24 240 row 24                                      │   in SQLite 40",
            " 25  25 250 row 25                                      │   in Swift  0",
            " 26  26 260 row 26                                      │ last fault 2.50 ms",
            " 27  27 270 row 27                                      │",
            " 28  28 280 row 28                                      │ RSS over time, 0–128.0 MB",
            " 29  29 290 row 29                                      │",
            " 30  30 300 row 30                                      │",
            " 31  31 310 row 31                                      │",
            " 32  32 320 row 32                                      │ ▄▅▅▅▆▆▆▇▇▇▇█",
            " 33  33 330 row 33                                      │ ████████████",
            " n │ row 33 of 40                                                                  ? help",
            "/row 33: 1 row matches",
        ])
        b.send(keys("vjvD"))
        #expect(term.text.last == "Delete the 2 marked rows from n? y/n")
        b.send(.char("y"))
        #expect(term.text == [
            "  #  id v   name                                        │ Memory (m hides)",
            " 20  20 200 row 20                                      │ RSS      57.0 MB",
            " 21  21 210 row 21                                      │ peak     200.0 MB",
            " 22  22 220 row 22                                      │ objects  28 alive",
            " 23  23 230 row 23                                      │ batches  3/8 resident",
            " 24  24 240 row 24                                      │ values   13 KB packed",
            " 25  25 250 row 25                                      │ faulted  7 batches",
            " 26  26 260 row 26                                      │ row IDs  38",
            " 27  27 270 row 27                                      │   in SQLite 38",
            " 28  28 280 row 28                                      │   in Swift  0",
            " 29  29 290 row 29                                      │ last fault 1.67 ms",
            " 30  30 300 row 30                                      │",
            " 31  31 310 row 31                                      │ RSS over time, 0–128.0 MB",
            " 32  32 320 row 32                                      │",
            " 33  34 340 row 34                                      │",
            " 34  36 360 row 36                                      │               ▁▁▁",
            " 35  37 370 row 37                                      │ ▄▅▅▅▆▆▆▇▇▇▇██████",
            " 36  38 380 row 38                                      │ █████████████████",
            " n │ row 34 of 38                                                                  ? help",
            "deleted 2 rows from n; u undoes (10 ms)",
        ])
    }
}
