import Foundation
import Testing

@testable import LedgerConsole

/// The console's charts are SVG written by hand: every value placed inside the plot, every label
/// escaped, nothing that is not a number where a coordinate goes.
@Suite struct SVGChartTests {
    static let days = (0..<30).map { Date(timeIntervalSince1970: 1_764_000_000 + Double($0) * 86_400) }

    /// The numbers of each polyline's `points`.
    static func points(_ svg: String) -> [[(Double, Double)]] {
        svg.components(separatedBy: #"points=""#).dropFirst().map { rest in
            rest.prefix { $0 != "\"" }.split(separator: " ").map { pair in
                let xy = pair.split(separator: ",").map { Double($0)! }
                return (xy[0], xy[1])
            }
        }
    }

    @Test func everyValueIsPlottedInsideThePlot() {
        let svg = SVGChart.lines(
            title: "MRR", days: Self.days,
            series: [
                .init(name: "USD", values: (0..<30).map { Double($0 * 1_000) }),
                .init(name: "refunds", values: (0..<30).map { -Double($0 % 3) }),
            ])
        let lines = Self.points(svg)
        #expect(lines.count == 2 && lines.allSatisfy { $0.count == 30 })
        for (x, y) in lines.joined() {
            #expect((64...704).contains(x) && (28...204).contains(y), "(\(x), \(y)) is outside the plot")
        }
        #expect(!svg.contains("nan") && !svg.contains("inf"))
    }

    @Test func aFlatOrEmptyChartHasNoDivisionByZero() {
        let flat = SVGChart.lines(title: "zero", days: [Self.days[0]], series: [.init(name: "none", values: [0])])
        #expect(!flat.lowercased().contains("nan"))
        #expect(SVGChart.lines(title: "empty", days: Self.days, series: []).contains("nothing in this range"))
    }

    @Test func labelsAreEscaped() {
        let svg = SVGChart.lines(title: "<script>alert(1)</script>", days: Self.days, series: [.init(name: "a&b \"c\"", values: [1])])
        #expect(!svg.contains("<script>"))
        #expect(svg.contains("&lt;script&gt;") && svg.contains("a&amp;b"))
    }
}
