// The ratio table as a picture: per scenario, one bar per peer giving the
// peer's time ÷ ours (so a bar right of 1× means we are faster), on a log
// scale. `make bench` writes it (`--svg PATH`); Benchmarks/README.md shows the committed one.
import Foundation

struct RatioChart {
    /// Scenario names, top to bottom.
    let scenarios: [String]
    /// Peers, in legend order.
    let peers: [String]
    /// The peer's ns/op ÷ ours in `scenario`, when both ran.
    let ratio: (_ scenario: String, _ peer: String) -> Double?
    /// Says what and where: the machine and the date.
    let caption: String

    private static let colors = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b", "#7f7f7f"]
    private static let (labelWidth, plotWidth, barHeight, groupGap) = (230.0, 520.0, 9.0, 8.0)
    /// The x axis: 0.1× to 100×, log scale; ratios outside are drawn at the edge.
    private static let (lowDecade, highDecade) = (-1.0, 2.0)

    private func x(_ r: Double) -> Double {
        let d = min(max(log10(r), Self.lowDecade), Self.highDecade)
        return Self.labelWidth + (d - Self.lowDecade) / (Self.highDecade - Self.lowDecade) * Self.plotWidth
    }

    var svg: String {
        let rows = scenarios.map { s in (s, peers.compactMap { p in ratio(s, p).map { (p, $0) } }) }.filter { !$0.1.isEmpty }
        let top = 58.0
        let height = top + rows.reduce(0) { $0 + Double($1.1.count) * Self.barHeight + Self.groupGap } + 40
        let width = Self.labelWidth + Self.plotWidth + 60
        var out = [String]()
        out.append("""
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="Helvetica, Arial, sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="18" font-size="14" font-weight="bold">CollapsingFutures vs peers: peer time ÷ ours (log scale; right of 1× = we are faster)</text>
            <text x="10" y="34" fill="#555">\(escaped(caption))</text>
            """)
        // Legend.
        var lx = 10.0
        for (i, p) in peers.enumerated() where rows.contains(where: { $0.1.contains { $0.0 == p } }) {
            out.append("<rect x=\"\(lx)\" y=\"42\" width=\"10\" height=\"10\" fill=\"\(Self.colors[i % Self.colors.count])\"/>")
            out.append("<text x=\"\(lx + 14)\" y=\"51\">\(escaped(p))</text>")
            lx += 24 + Double(p.count) * 6.5
        }
        // Grid: decades and the 1× line.
        let bottom = height - 30
        for d in stride(from: Self.lowDecade, through: Self.highDecade, by: 1) {
            let gx = x(pow(10, d))
            let label = d < 0 ? "0.1×" : "\(Int(pow(10, d)))×"
            out.append("<line x1=\"\(gx)\" y1=\"\(top - 4)\" x2=\"\(gx)\" y2=\"\(bottom)\" stroke=\"\(d == 0 ? "#000" : "#ddd")\"/>")
            out.append("<text x=\"\(gx)\" y=\"\(bottom + 14)\" text-anchor=\"middle\">\(label)</text>")
        }
        for r in [2.0, 5.0, 20.0, 50.0] {
            out.append("<line x1=\"\(x(r))\" y1=\"\(top - 4)\" x2=\"\(x(r))\" y2=\"\(bottom)\" stroke=\"#f0f0f0\"/>")
        }
        // Bars from 1× to the ratio, one group per scenario.
        var y = top
        for (scenario, bars) in rows {
            let groupHeight = Double(bars.count) * Self.barHeight
            out.append("<text x=\"\(Self.labelWidth - 6)\" y=\"\(y + groupHeight / 2 + 4)\" text-anchor=\"end\">\(escaped(scenario))</text>")
            for (peer, r) in bars {
                let color = Self.colors[(peers.firstIndex(of: peer) ?? 0) % Self.colors.count]
                let (a, b) = (min(x(1), x(r)), max(x(1), x(r)))
                out.append("<rect x=\"\(a)\" y=\"\(y + 1)\" width=\"\(max(b - a, 1))\" height=\"\(Self.barHeight - 2)\" fill=\"\(color)\">"
                    + "<title>\(escaped(scenario)) — \(escaped(peer)): \(String(format: "%.2f", r))×</title></rect>")
                y += Self.barHeight
            }
            y += Self.groupGap
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    private func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
