import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerProjections

/// The metrics page: daily subscription metrics over a range of days, drawn as SVG charts or
/// downloaded as CSV.
extension ConsoleController {
    @Sendable func metrics(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in try await metricsPage(try coveredApp(context, session), request: request, session) }
    }

    /// The metrics as CSV: a download, so a missing session is a bare 401 rather than a page.
    @Sendable func metricsDownload(_ request: Request, context: Context) async throws -> Response {
        guard let token = Self.token(request), let session = try await console.sessions.session(token) else {
            return Response(status: .unauthorized)
        }
        return try await metricsCSV(try coveredApp(context, session), request: request)
    }

    struct Chart { var kind: String; var svg: String }

    /// Whole UTC days: the 90 up to today unless asked otherwise; a backwards range, or one
    /// over three years, falls back to those 90. Every store unless one is asked for.
    func range(_ request: Request) -> (from: Date, to: Date, environment: AppleEnvironment, store: Store?) {
        let parameters = request.uri.queryParameters
        let today = SubscriptionMetrics.dayStart(Date())
        let to = parameters["to"].flatMap { RFC3339.parseInstant(String($0)) }.map(SubscriptionMetrics.dayStart) ?? today
        var from =
            parameters["from"].flatMap { RFC3339.parseInstant(String($0)) }.map(SubscriptionMetrics.dayStart)
            ?? to.addingTimeInterval(-89 * 86_400)
        if from > to || to.timeIntervalSince(from) > 3 * 366 * 86_400 { from = to.addingTimeInterval(-89 * 86_400) }
        let environment = parameters["environment"].flatMap { AppleEnvironment(rawValue: String($0)) } ?? .production
        return (from, to, environment, parameters["store"].flatMap { Store(rawValue: String($0)) })
    }

    func metricsPage(_ bundleID: String, request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        let (from, to, environment, store) = range(request)
        let points = try await console.metrics.daily(bundleID: bundleID, environment: environment, store: store, from: from, through: to)
        var days: [Date] = []
        var day = from
        while day <= to { days.append(day); day = day.addingTimeInterval(86_400) }
        let index = Dictionary(uniqueKeysWithValues: days.enumerated().map { ($1, $0) })
        let charts = MetricCharts.all.map { chart -> Chart in
            var series: [String: [Double]] = [:]
            for point in points where chart.kinds.contains(point.kind) {
                let name = chart.byDimension ? point.dimension : point.kind.rawValue
                guard let position = index[point.day] else { continue }
                series[name, default: Array(repeating: 0, count: days.count)][position] += Double(point.value) / chart.scale
            }
            let ordered = chart.byDimension ? series.keys.sorted() : chart.kinds.map(\.rawValue).filter { series[$0] != nil }
            return Chart(
                kind: chart.kinds.map(\.rawValue).joined(separator: ","),
                svg: SVGChart.lines(title: chart.title, days: days, series: ordered.map { SVGChart.Series(name: $0, values: series[$0]!) }))
        }
        let values: [String: Any] = [
            "from": String(RFC3339.string(from).prefix(10)), "to": String(RFC3339.string(to).prefix(10)),
            "environment": environment.rawValue,
            "environments": [AppleEnvironment.production, .sandbox].map { ["name": $0.rawValue, "selected": $0 == environment] },
            "store": store?.rawValue ?? "", "storeName": store.map(UserPage.storeName) ?? "every store",
            "stores": [("", "Every store", store == nil)]
                + [Store.appStore, .googlePlay].map { ($0.rawValue, UserPage.storeName($0), $0 == store) }
                .map { ["value": $0.0, "name": $0.1, "selected": $0.2] },
            "charts": charts,
        ]
        return render("metrics", Merged(frame("Metrics", app: bundleID, session), values), session: session)
    }

    func metricsCSV(_ bundleID: String, request: Request) async throws -> Response {
        let (from, to, environment, store) = range(request)
        let kinds = Set(
            (request.uri.queryParameters["kind"].map(String.init) ?? "").split(separator: ",").compactMap {
                MetricContribution.Kind(rawValue: String($0))
            })
        var csv = "day,environment,metric,dimension,value\n"
        for point in try await console.metrics.daily(bundleID: bundleID, environment: environment, store: store, from: from, through: to)
        where kinds.isEmpty || kinds.contains(point.kind) {
            csv +=
                "\(RFC3339.string(point.day).prefix(10)),\(environment.rawValue),\(point.kind.rawValue),\(Self.csvField(point.dimension)),\(point.value)\n"
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/csv; charset=utf-8"
        let suffix = store.map { "-" + $0.rawValue } ?? ""
        headers[.contentDisposition] = "attachment; filename=\"metrics-\(Self.path(bundleID))\(suffix).csv\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: csv)))
    }

    /// A CSV field: quoted when it holds a comma, a quote or a line break; a leading = + - @ made
    /// inert for spreadsheets.
    static func csvField(_ text: String) -> String {
        var value = text
        if let first = value.first, "=+-@".contains(first) { value = "'" + value }
        guard value.contains(where: { ",\"\n\r".contains($0) }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// The metrics page's charts: which kinds each draws, and how its values read.
enum MetricCharts {
    /// `scale`: amounts are kept in milliunits and drawn in currency units.
    static let all: [(title: String, kinds: [MetricContribution.Kind], byDimension: Bool, scale: Double)] = [
        ("Active subscriptions by product", [.active], true, 1),
        ("New, renewed and churned subscriptions", [.new, .renewed, .churned], false, 1),
        ("Trials converted", [.trialsConverted], true, 1),
        ("Refunds (count) by currency", [.refunds], true, 1),
        ("Refunded amount by currency", [.refundedAmount], true, 1000),
        ("Gross revenue by currency", [.revenue], true, 1000),
        ("MRR by currency", [.mrr], true, 1000),
    ]
}
