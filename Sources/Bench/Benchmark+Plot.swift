import FaultlineDemo
import Foundation

extension Benchmark {
    /// An SVG line chart of RSS (MB) against rows swept for each sweep.
    static func svgPlot(_ sweeps: [MemorySweep], title: String) -> String {
        let w = 720.0, h = 420.0, left = 70.0, right = 20.0, top = 40.0, bottom = 50.0
        let maxRows = Double(sweeps.map(\.rows).max() ?? 1)
        let maxMB = niceCeiling(max(1, (sweeps.flatMap { $0.samples.map { Double($0[1]) / 1_048_576 } }.max() ?? 1) * 1.05))
        func x(_ r: Double) -> Double { left + (w - left - right) * r / max(maxRows, 1) }
        func y(_ mb: Double) -> Double { h - bottom - (h - top - bottom) * mb / maxMB }
        let colors = ["#1f77b4", "#d62728", "#2ca02c"]
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        s += "<text x=\"\(w / 2)\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">\(xmlEscape(title))</text>\n"
        s += "<line x1=\"\(left)\" y1=\"\(h - bottom)\" x2=\"\(w - right)\" y2=\"\(h - bottom)\" stroke=\"black\"/>\n"
        s += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(h - bottom)\" stroke=\"black\"/>\n"
        for i in 0...5 {
            let mb = maxMB * Double(i) / 5
            s += "<text x=\"\(left - 6)\" y=\"\(y(mb) + 4)\" text-anchor=\"end\">\(Int(mb)) MB</text>\n"
            s += "<line x1=\"\(left)\" y1=\"\(y(mb))\" x2=\"\(w - right)\" y2=\"\(y(mb))\" stroke=\"#ddd\"/>\n"
            let r = maxRows * Double(i) / 5
            s += "<text x=\"\(x(r))\" y=\"\(h - bottom + 18)\" text-anchor=\"middle\">\(formatCount(Int(r)))</text>\n"
        }
        s += "<text x=\"\(w / 2)\" y=\"\(h - 10)\" text-anchor=\"middle\">rows swept</text>\n"
        for (k, sweep) in sweeps.enumerated() {
            let pts = sweep.samples.map { "\(x(Double($0[0]))),\(y(Double($0[1]) / 1_048_576))" }.joined(separator: " ")
            s += "<polyline fill=\"none\" stroke=\"\(colors[k % colors.count])\" stroke-width=\"2\" points=\"\(pts)\"/>\n"
            s += "<text x=\"\(left + 12)\" y=\"\(top + 16 + Double(k) * 16)\" fill=\"\(colors[k % colors.count])\">\(xmlEscape(sweep.mode)): peak \(sweep.peakRSS / 1_048_576) MB</text>\n"
        }
        return s + "</svg>\n"
    }

    /// The smallest of 1, 2, 2.5 or 5 × 10^k, times 5 ticks, that is at least `x`.
    static func niceCeiling(_ x: Double) -> Double {
        let step = x / 5
        let magnitude = pow(10, floor(log10(step)))
        let nice = [1, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= step } ?? 10 * magnitude
        return nice * 5
    }

    static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
