import Foundation
import LedgerCore

/// A line chart as SVG, drawn by hand: days along the bottom, one line per series, a legend. No
/// script, no external asset; every label escaped.
enum SVGChart {
    struct Series {
        var name: String
        /// One value per day of the chart, in order.
        var values: [Double]
    }

    static let palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d"]

    static func lines(title: String, days: [Date], series: [Series]) -> String {
        let width = 720.0, height = 240.0, left = 64.0, right = 16.0, top = 28.0, bottom = 36.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let maximum = max(1, series.flatMap(\.values).max() ?? 1)
        let minimum = min(0, series.flatMap(\.values).min() ?? 0)
        func x(_ index: Int) -> Double { left + (days.count > 1 ? Double(index) / Double(days.count - 1) : 0.5) * plotWidth }
        func y(_ value: Double) -> Double { top + plotHeight - (value - minimum) / (maximum - minimum) * plotHeight }
        var svg =
            ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \##(Int(width)) \##(Int(height + Double(series.count / 4 + 1) * 16))" role="img" class="chart">"##
        svg += "<title>\(escape(title))</title>"
        svg += ##"<text x="\##(left)" y="16" class="chart-title">\##(escape(title))</text>"##
        for step in 0...4 {
            let value = minimum + (maximum - minimum) * Double(step) / 4
            svg += ##"<line x1="\##(left)" x2="\##(width - right)" y1="\##(f(y(value)))" y2="\##(f(y(value)))" stroke="#e5e7eb"/>"##
            svg += ##"<text x="\##(left - 6)" y="\##(f(y(value) + 4))" text-anchor="end" class="axis">\##(escape(label(value)))</text>"##
        }
        if let first = days.first, let last = days.last {
            svg += ##"<text x="\##(left)" y="\##(height - 12)" class="axis">\##(escape(String(RFC3339.string(first).prefix(10))))</text>"##
            svg +=
                ##"<text x="\##(width - right)" y="\##(height - 12)" text-anchor="end" class="axis">\##(escape(String(RFC3339.string(last).prefix(10))))</text>"##
        }
        for (index, line) in series.enumerated() {
            let color = palette[index % palette.count]
            let points = line.values.enumerated().map { "\(f(x($0.offset))),\(f(y($0.element)))" }.joined(separator: " ")
            svg += ##"<polyline fill="none" stroke="\##(color)" stroke-width="2" points="\##(points)"/>"##
            let legendX = left + Double(index % 4) * 170, legendY = height + Double(index / 4) * 16
            svg += ##"<rect x="\##(f(legendX))" y="\##(f(legendY - 9))" width="10" height="10" fill="\##(color)"/>"##
            svg += ##"<text x="\##(f(legendX + 14))" y="\##(f(legendY))" class="legend">\##(escape(line.name))</text>"##
        }
        if series.isEmpty {
            svg +=
                ##"<text x="\##(left + plotWidth / 2)" y="\##(top + plotHeight / 2)" text-anchor="middle" class="axis">nothing in this range</text>"##
        }
        return svg + "</svg>"
    }

    static func label(_ value: Double) -> String {
        abs(value) >= 1000
            ? String(format: "%.1fk", value / 1000) : (value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value))
    }

    static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// The five characters that matter in SVG and HTML text and attributes.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
