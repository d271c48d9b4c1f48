import Foundation

@_silgen_name("malloc_trim") private func c_malloc_trim(_ pad: Int) -> Int32

/// Process memory figures read from `/proc/self` (Linux). Zero where unavailable.
///
/// `package`, not public: they describe the process, not the store (a library user's own memory
/// figures are theirs to read); the browser's memory panel, the tour and the bench use them.
package enum ProcessMemory {
    /// Resident set size now, in bytes (`/proc/self/statm`, field 2 × page size).
    package static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Peak resident set size of the process, in bytes (`VmHWM` in `/proc/self/status`).
    package static func peakResidentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let digits = line.split(separator: " ").compactMap { Int($0) }
            if let kb = digits.first { return kb * 1024 }
        }
        return 0
    }

    /// Hands memory the allocator keeps free back to the system (glibc's `malloc_trim(0)`), so RSS
    /// shows what was released.
    package static func returnFreeMemory() {
        _ = c_malloc_trim(0)
    }

    /// Resets the peak (writes 5 to `/proc/self/clear_refs`); returns false where not allowed.
    @discardableResult
    package static func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        do { try handle.write(contentsOf: Data("5".utf8)); return true } catch { return false }
    }
}
