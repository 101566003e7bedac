import Foundation
import Hummingbird
import LedgerCore
import Synchronization

/// Prometheus counters and histograms kept in memory, written out in the text format on
/// `/metrics`. Small on purpose: a handful of series, no dependency.
package final class Metrics: Sendable {
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count = 0
    }

    struct State {
        var requests: [[String]: Int] = [:] // [route, method, status]
        var latency: [[String]: Histogram] = [:] // [route, method]
        var counters: [String: [[String]: Int]] = [:] // name → labels → value
    }

    private let state = Mutex(State())

    package init() {}

    /// The labelled counters the ledger increments, with what they count.
    static let counters: [String: String] = [
        "ledger_evidence_total": "Apple's evidence received, by kind and result (accepted, or the refusal's code).",
        "ledger_apple_calls_total": "Calls to Apple, by API (verifyReceipt, app_store_server_api) and outcome.",
        "ledger_auth_failures_total": "Requests refused for a missing or unknown API key.",
        "ledger_auth_throttled_total": "Requests refused because their address failed authentication too often.",
        "ledger_rate_limited_total": "Requests refused because their key was over its rate limit.",
        "ledger_reconcile_notifications_total": "Notifications read from Apple's notification history, by result.",
        "ledger_consumption_requests_total": "Apple's CONSUMPTION_REQUESTs answered, by outcome.",
    ]

    func observeRequest(route: String, method: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests[[route, method, String(status)], default: 0] += 1
            var histogram = state.latency[[route, method]] ?? Histogram()
            for (index, bound) in Self.buckets.enumerated() where seconds <= bound { histogram.counts[index] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            state.latency[[route, method]] = histogram
        }
    }

    /// Increments a labelled counter, e.g. `ledger_apple_calls_total{outcome="valid"}`.
    package func increment(_ name: String, _ labels: [String: String]) {
        let flat = labels.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        state.withLock { $0.counters[name, default: [:]][flat, default: 0] += 1 }
    }

    /// A counter's values by label value (`label`), e.g. evidence refused by code.
    package func counts(_ name: String, by label: String, where filter: (String, String) -> Bool = { _, _ in true }) -> [(String, Int)] {
        let series = state.withLock { $0.counters[name] ?? [:] }
        var totals: [String: Int] = [:]
        for (flat, value) in series {
            let labels = Dictionary(stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }, uniquingKeysWith: { a, _ in a })
            guard let key = labels[label], labels.allSatisfy({ filter($0.key, $0.value) }) else { continue }
            totals[key, default: 0] += value
        }
        return totals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

    /// The exposition text; `gauges` are sampled by the caller at scrape time.
    /// A value sampled when `/metrics` is scraped.
    package struct Gauge: Sendable {
        package enum Kind: String, Sendable { case gauge, counter }
        package var name: String
        package var help: String
        package var value: Double
        /// A counter kept elsewhere (a pool's) is sampled like a gauge but typed as what it is.
        package var kind: Kind

        package init(_ name: String, _ help: String, _ value: Double, kind: Kind = .gauge) {
            self.name = name
            self.help = help
            self.value = value
            self.kind = kind
        }
    }

    func render(gauges: [Gauge]) -> String {
        let snapshot = state.withLock { $0 }
        var out = "# HELP ledger_http_requests_total HTTP requests by route, method and status.\n# TYPE ledger_http_requests_total counter\n"
        for (labels, value) in snapshot.requests.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += "ledger_http_requests_total{route=\"\(escape(labels[0]))\",method=\"\(labels[1])\",status=\"\(labels[2])\"} \(value)\n"
        }
        out += "# HELP ledger_http_request_duration_seconds HTTP request latency by route and method.\n# TYPE ledger_http_request_duration_seconds histogram\n"
        for (labels, histogram) in snapshot.latency.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let base = "route=\"\(escape(labels[0]))\",method=\"\(labels[1])\""
            for (index, bound) in Self.buckets.enumerated() {
                out += "ledger_http_request_duration_seconds_bucket{\(base),le=\"\(bound)\"} \(histogram.counts[index])\n"
            }
            out += "ledger_http_request_duration_seconds_bucket{\(base),le=\"+Inf\"} \(histogram.count)\n"
            out += "ledger_http_request_duration_seconds_sum{\(base)} \(histogram.sum)\n"
            out += "ledger_http_request_duration_seconds_count{\(base)} \(histogram.count)\n"
        }
        // Every declared counter has its HELP and TYPE from the start, samples or not: a dashboard
        // or an alert on it finds the family (and reads no data) rather than an unknown name.
        let names = Set(snapshot.counters.keys).union(Self.counters.keys).sorted()
        for name in names {
            if let help = Self.counters[name] { out += "# HELP \(name) \(help)\n" }
            out += "# TYPE \(name) counter\n"
            for (flat, value) in (snapshot.counters[name] ?? [:]).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                let labels = stride(from: 0, to: flat.count, by: 2).map { "\(flat[$0])=\"\(escape(flat[$0 + 1]))\"" }.joined(separator: ",")
                out += "\(name){\(labels)} \(value)\n"
            }
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) \(gauge.kind.rawValue)\n\(gauge.name) \(gauge.value)\n"
        }
        return out
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// Counts and times every request under its route template (`/v1/apps/{bundle_id}/users/{user_id}`),
/// never the concrete path: user ids in labels would make series without bound.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: Metrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        metrics.observeRequest(
            route: context.endpointPath ?? "unmatched", method: request.method.rawValue,
            status: response.status.code, seconds: (ContinuousClock.now - start).seconds)
        return response
    }
}
