import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import LedgerAccess
import LedgerServer
import NIOCore
import NIOHTTP1
import Synchronization

/// `ledger-bench retention`: Apple's realtime retention requests answered per second, with their
/// latency, at Apple-like concurrency, beside `/healthz` on the same server in alternated rounds.
/// Each request is verified (Apple's chain, ES256), its subscriber's facts read and the rules
/// decided, a promotional offer signed for the loyal ones, and the decision recorded; the
/// requests are signed beforehand, as Apple signs them on its side.
struct RetentionBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Realtime retention answers per second and their p50/p99 beside /healthz, alternated.")

    @Option(help: "Seconds per measurement.") var seconds = 5.0
    @Option(help: "Rounds (retention and /healthz alternate).") var rounds = 3
    @Option(help: "Requests in flight (Apple's performance test sends 10 at a time).") var connections = 50
    @Option(help: "Subscribers (half of them loyal enough for the offer).") var subscribers = 200
    @Option(help: "Realtime requests signed beforehand, each sent once (more than the rounds send).") var requests = 40_000

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let bundle = "com.example.bench"
        let admin = try await server.services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let apiKey = P256.Signing.PrivateKey()
        try await GoogleBenchmark.send(
            "PUT", server.base + "/v1/apps/\(bundle)", key: admin,
            [
                "environments": ["Sandbox"], "apple_app_id": 4242,
                "app_store_server_api": ["issuer_id": UUID().uuidString, "key_id": "BENCHKEY01", "private_key": apiKey.pemRepresentation],
            ])
        try await GoogleBenchmark.send(
            "PUT", server.base + "/v1/apps/\(bundle)/products/pro.monthly", key: admin,
            ["type": "auto_renewable", "entitlements": ["pro"], "offers": ["loyal-50": ["eligible": "active"]]])
        try await GoogleBenchmark.send(
            "PUT", server.base + "/v1/apps/\(bundle)/retention", key: admin,
            [
                "rules": [
                    ["name": "billing-trouble", "when": ["in_billing_retry": true], "answer": ["message": UUID().uuidString]],
                    [
                        "name": "loyal", "when": ["product": "pro.monthly", "paid_days_at_least": 300],
                        "answer": ["promotional_offer": ["message": UUID().uuidString, "offer": "loyal-50"]],
                    ],
                    [
                        "name": "monthly-to-yearly", "when": ["product": "pro.monthly", "renewals_at_least": 0],
                        "answer": ["alternate_product": ["message": UUID().uuidString, "product": "pro.yearly"]],
                    ],
                ],
                "default": ["message": UUID().uuidString],
            ])
        let app = SimulatedApp(authority: server.authority, bundleID: bundle, appAppleID: 4242, environment: "Sandbox")
        let run = UInt32.random(in: 0...UInt32.max)
        var originals: [String] = []
        for index in 0..<subscribers {
            let id = "r\(run)-\(index)"
            let days: Double = index % 2 == 0 ? 400 : 10
            let purchase = SimulatedTransaction(
                transactionID: id, productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -days * 86_400),
                expiresDate: Date(timeIntervalSinceNow: 20 * 86_400))
            try await GoogleBenchmark.send(
                "POST", server.base + "/v1/apps/\(bundle)/transactions", key: admin,
                ["user_id": "subscriber-\(index)", "signed_transaction": try app.signedTransaction(purchase)])
            originals.append(id)
        }
        // Each request new (Apple's id is its own): one Apple sends again is recorded once, and cheaper.
        let bodies = try (0..<requests).map { index in
            try app.realtimeRequest(originalTransactionID: originals[index % originals.count], productID: "pro.monthly")
        }
        let realtime = server.base + "/v1/apps/\(bundle)/apple/retention"
        let health = server.base + "/healthz"

        let next = Counter()
        var retention: [Measurement] = [], baseline: [Measurement] = []
        for _ in 1...rounds {
            baseline.append(try await Self.measure(seconds: seconds, connections: connections) { _ in try await Self.get(health) })
            retention.append(
                try await Self.measure(seconds: seconds, connections: connections) { index in
                    try await Self.post(realtime, bodies[next.add(1) % bodies.count])
                })
        }
        await server.stop()
        print("Realtime retention requests on one server (it and PostgreSQL share 2 cores), \(rounds) rounds of \(seconds) s,")
        print("\(connections) requests in flight, \(subscribers) subscribers (half answered with a signed offer), medians")
        print("                                   answers/s     p50       p99")
        print("  /healthz (baseline)            \(Self.row(baseline))")
        print(
            "  realtime retention request     \(Self.row(retention))   "
                + String(format: "%5.1f %%", median(retention.map(\.rate)) / median(baseline.map(\.rate)) * 100) + " of /healthz")
        print("  rounds: retention=\(retention.map { Int($0.rate) }) healthz=\(baseline.map { Int($0.rate) })")
    }

    struct Measurement {
        var rate: Double
        var p50: Double
        var p99: Double
    }

    static func row(_ measurements: [Measurement]) -> String {
        format(median(measurements.map(\.rate)))
            + String(format: "  %6.1f ms  %6.1f ms", median(measurements.map(\.p50)), median(measurements.map(\.p99)))
    }

    /// Requests per second over `seconds`, `connections` at a time, and the latencies' p50 and p99.
    static func measure(
        seconds: Double, connections: Int, _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Measurement {
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int(seconds * 1000))
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for worker in 0..<connections {
                group.addTask {
                    var took: [Double] = []
                    while ContinuousClock.now < deadline {
                        let start = ContinuousClock.now
                        try await body(worker * 100_000 + took.count)
                        let elapsed = ContinuousClock.now - start
                        took.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                    }
                    return took
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }.sorted()
        }
        let elapsed = ContinuousClock.now - started
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        func at(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        return Measurement(rate: Double(latencies.count) / wall, p50: at(0.5), p99: at(0.99))
    }

    static func get(_ url: String) async throws {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw ValidationError("GET \(url) answered \(response.status.code)") }
    }

    static func post(_ url: String, _ body: Data) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else {
            throw ValidationError("POST \(url) answered \(response.status.code): \(String(buffer: answer).prefix(300))")
        }
    }
}

/// The next request to send, across the workers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add(_ amount: Int) -> Int {
        value.withLock { current in
            defer { current += amount }; return current
        }
    }
}
