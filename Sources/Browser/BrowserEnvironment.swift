import BatchStore
import Dispatch

/// What the browser reads from the world besides the file and the keys: the time and the
/// process's memory. Injected, as bubbletea injects input and output, so a test can fix every
/// timing and memory figure on screen and compare whole screens exactly.
package struct BrowserEnvironment: Sendable {
    /// Seconds on a monotonic clock (only differences matter).
    package var now: @Sendable () -> Double
    /// Resident set size now, in bytes.
    package var residentBytes: @Sendable () -> Int
    /// Peak resident set size of the process, in bytes.
    package var peakResidentBytes: @Sendable () -> Int
    /// Gives freed memory back to the system (after the eager array is dropped).
    package var returnFreeMemory: @Sendable () -> Void

    package init(now: @escaping @Sendable () -> Double, residentBytes: @escaping @Sendable () -> Int, peakResidentBytes: @escaping @Sendable () -> Int,
                 returnFreeMemory: @escaping @Sendable () -> Void = {}) {
        self.now = now
        self.residentBytes = residentBytes
        self.peakResidentBytes = peakResidentBytes
        self.returnFreeMemory = returnFreeMemory
    }

    /// The real clock (`DispatchTime`) and `/proc/self` (``ProcessMemory``).
    package static let live = BrowserEnvironment(
        now: { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
        residentBytes: { ProcessMemory.residentBytes() },
        peakResidentBytes: { ProcessMemory.peakResidentBytes() },
        returnFreeMemory: { ProcessMemory.returnFreeMemory() })
}
