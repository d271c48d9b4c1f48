import Foundation

/// A row count in a few characters, for labels and reports: `1.2M`, `350k`, `42`.
public func formatCount(_ n: Int) -> String {
    if n >= 1_000_000 { return String(format: "%.1fM", Double(n) / 1e6) }
    if n >= 1_000 { return "\(n / 1000)k" }
    return "\(n)"
}
