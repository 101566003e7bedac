import CoreMetrics
import Foundation
import Hummingbird
import LedgerCore
import Prometheus
import Synchronization

/// The server's metrics through swift-metrics, exported by swift-prometheus: each server has its
/// own registry (several servers share a test process, so nothing goes through the global
/// `MetricsSystem`), and `/metrics` writes the registry's families followed by the gauges
/// sampled at scrape time. Counters are also tallied here for the console, which shows them:
/// swift-metrics' counters are write-only.
package final class Metrics: Sendable {
    /// Request latency buckets, in seconds.
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    static let requestDuration = "ledger_http_request_duration_seconds"

    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// name → labels (flattened, sorted by key) → count.
    private let tallies = Mutex<[String: [[String]: Int]]>([:])

    static let groupSize = "ledger_group_commit_size"
    static let groupDuration = "ledger_group_commit_duration_seconds"
    static let deliveryDuration = "ledger_webhook_delivery_duration_seconds"

    package init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        let buckets = Self.buckets.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
        factory.durationHistogramBuckets = [Self.requestDuration: buckets, Self.groupDuration: buckets, Self.deliveryDuration: buckets]
        factory.valueHistogramBuckets = [Self.groupSize: [1, 2, 4, 8, 16, 32, 64]]
        self.factory = factory
    }

    /// A group commit's transaction: how many requests it carried and how long it took.
    @Sendable package func observeGroup(size: Int, took: Duration) {
        CoreMetrics.Recorder(label: Self.groupSize, aggregate: true, factory: factory).record(size)
        CoreMetrics.Timer(label: Self.groupDuration, factory: factory).recordNanoseconds(took.nanoseconds)
    }

    /// A webhook delivery attempt, from sending to the receiver's answer (or the failure).
    @Sendable package func observeDelivery(outcome: String, took: Duration) {
        CoreMetrics.Timer(label: Self.deliveryDuration, dimensions: [("outcome", outcome)], factory: factory).recordNanoseconds(
            took.nanoseconds)
    }

    /// One exchange with Apple (each attempt of a retried call counts): by endpoint and status,
    /// so a rate limit shows as 429s on the endpoint that hit it. `status` is "none" when
    /// nothing came back.
    package func observeApple(api: String, endpoint: String, status: Int?, outcome: String) {
        increment(
            "ledger_apple_calls_total", ["api": api, "endpoint": endpoint, "status": status.map(String.init) ?? "none", "outcome": outcome])
    }

    /// One exchange with Google's Developer API (each attempt), counted as Apple's are.
    package func observeGoogle(endpoint: String, status: Int?, outcome: String) {
        increment("ledger_google_calls_total", ["endpoint": endpoint, "status": status.map(String.init) ?? "none", "outcome": outcome])
    }

    /// The labelled counters the ledger increments, with what they count.
    static let counters: [String: String] = [
        "ledger_evidence_total": "Evidence received, by store, kind and result (accepted, or the refusal's code).",
        "ledger_apple_calls_total":
            "Exchanges with Apple, each attempt: by API (verifyReceipt, app_store_server_api), endpoint, HTTP status and outcome.",
        "ledger_google_calls_total":
            "Exchanges with Google's Developer API, each attempt: by endpoint, HTTP status and outcome (answered, token_refreshed, retried, unavailable, refused).",
        "ledger_auth_failures_total": "Requests refused for a missing or unknown API key.",
        "ledger_auth_throttled_total": "Requests refused because their address failed authentication too often.",
        "ledger_rate_limited_total": "Requests refused because their key was over its rate limit.",
        "ledger_reconcile_notifications_total": "Notifications read from Apple's notification history, by result.",
        "ledger_consumption_requests_total": "Apple's CONSUMPTION_REQUESTs answered, by outcome.",
        "ledger_apple_finishes_total":
            "Transactions finished at Apple for apps whose server finishes them, by outcome (finished, refused, failed).",
        "ledger_retention_requests_total":
            "Apple's realtime retention requests, by result: the answer given (message, alternate_product, promotional_offer, none) or the refusal's code.",
    ]

    /// The histograms, declared like the counters: a fresh server shows their families before
    /// the first observation.
    static let histograms: [String: String] = [
        requestDuration: "Time to answer a request, by route and method.",
        groupSize: "Requests written by one group commit's transaction.",
        groupDuration: "Time of one group commit's transaction.",
        deliveryDuration: "Time of one webhook delivery attempt, to the receiver's answer or the failure, by outcome.",
    ]

    func observeRequest(route: String, method: String, status: Int, seconds: Double) {
        CoreMetrics.Counter(
            label: "ledger_http_requests_total", dimensions: [("route", route), ("method", method), ("status", String(status))],
            factory: factory
        )
        .increment()
        CoreMetrics.Timer(label: Self.requestDuration, dimensions: [("route", route), ("method", method)], factory: factory)
            .recordNanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// Increments a labelled counter, e.g. `ledger_apple_calls_total{outcome="valid"}`.
    package func increment(_ name: String, _ labels: [String: String]) {
        let sorted = labels.sorted { $0.key < $1.key }
        CoreMetrics.Counter(label: name, dimensions: sorted.map { ($0.key, $0.value) }, factory: factory).increment()
        let flat = sorted.flatMap { [$0.key, $0.value] }
        tallies.withLock { $0[name, default: [:]][flat, default: 0] += 1 }
    }

    /// A counter's values by label value (`label`), e.g. evidence refused by code.
    package func counts(_ name: String, by label: String, where filter: (String, String) -> Bool = { _, _ in true }) -> [(String, Int)] {
        let series = tallies.withLock { $0[name] ?? [:] }
        var totals: [String: Int] = [:]
        for (flat, value) in series {
            let labels = Dictionary(
                stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }, uniquingKeysWith: { a, _ in a })
            guard let key = labels[label], labels.allSatisfy({ filter($0.key, $0.value) }) else { continue }
            totals[key, default: 0] += value
        }
        return totals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

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

    /// The exposition text: the registry's families, every declared counter's and histogram's
    /// family even before its first sample (a dashboard or an alert on it finds the name and reads no data), and the
    /// `gauges` the caller sampled.
    func render(gauges: [Gauge]) -> String {
        var out = registry.emitToString()
        let declared = Self.counters.map { ($0.key, $0.value, "counter") } + Self.histograms.map { ($0.key, $0.value, "histogram") }
        for (name, help, type) in declared.sorted(by: { $0.0 < $1.0 }) where !out.contains("# TYPE \(name) ") {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) \(gauge.kind.rawValue)\n\(gauge.name) \(gauge.value)\n"
        }
        return out
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
