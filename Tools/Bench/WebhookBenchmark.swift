import AppStore
import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerSchema
import LedgerServer
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import WebhookReceiver

/// `ledger-bench webhooks`: the real server (projection, change projection, dispatcher) on a
/// durable cluster and a receiver on loopback, all on this machine. Two measurements:
/// - latency, from a purchase's answer to its change's arrival at the receiver, with purchases
///   sent open-loop at a steady rate (200/s: each is one change);
/// - throughput, a backlog of changes replayed to a fast receiver, beside the rate at which the
///   same purchases were ingested in the same run.
struct WebhookBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Delivery latency at a steady rate, and delivery throughput of a backlog beside ingestion.")

    @Option(help: "Purchases per second in the latency run (one change each).") var rate = 200
    @Option(help: "Seconds of the latency run.") var seconds = 10
    @Option(help: "Purchases ingested, then replayed, for throughput.") var backlog = 10_000
    @Option(help: "Rounds of the throughput run.") var rounds = 3

    static let secret = "whsec_bench_0123456789abcdef0123"

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let (services, pool, authority, base) = (server.services, server.pool, server.authority, server.base)
        let bundle = "com.example.webhooks-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        _ = try await services.directory.define(.init(productID: "coins.100", type: .consumable, grants: ["coins": 100]), in: bundle)
        let key = try await services.keys.create(name: "bench-\(bundle)", scopes: [.admin], bundleID: nil).secret
        let simulated = SimulatedApp(authority: authority, bundleID: bundle, environment: "Sandbox")
        let receiver = WebhookReceiver(secret: Self.secret)
        try await receiver.start()
        // The load's own client, with as many connections as it sends at once (the shared one keeps 8).
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)

        /// A new user's purchase of coins: one change (currency.granted) for `user`.
        func body(_ user: String) throws -> [UInt8] {
            let purchase = SimulatedTransaction(
                transactionID: "t-\(user)", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
            return Array(
                try JSONSerialization.data(withJSONObject: [
                    "user_id": user, "signed_transaction": try simulated.signedTransaction(purchase),
                ]))
        }
        func send(_ method: HTTPMethod, _ path: String, _ bytes: [UInt8]) async throws -> Int {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.body = .bytes(ByteBuffer(bytes: bytes))
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        }
        let hook = Array(try JSONSerialization.data(withJSONObject: ["url": receiver.url, "secret": Self.secret]))
        guard try await send(.PUT, "/v1/apps/\(bundle)/webhooks/bench", hook) == 201 else {
            throw ValidationError("the webhook was refused")
        }

        // 1. Latency at a steady rate, open loop: a purchase every 1/rate s, whatever the answers do.
        let count = rate * seconds
        let bodies = try (0..<count).map { try body("l\($0)") }
        let answered = Answers()
        let interval = 1.0 / Double(rate)
        let start = Date()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for index in 0..<count {
                let due = start.addingTimeInterval(Double(index) * interval)
                if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
                tasks.addTask {
                    let status = try await send(.POST, "/v1/apps/\(bundle)/transactions", bodies[index])
                    answered.record("l\(index)", at: Date(), ok: status == 200)
                }
            }
            try await tasks.waitForAll()
        }
        let sentFor = Date().timeIntervalSince(start)
        let deadline = Date().addingTimeInterval(30)
        while receiver.accepted.count < count, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let arrivals = Dictionary(receiver.accepted.map { ($0.userID, $0.arrivedAt) }, uniquingKeysWith: min)
        let latencies = answered.all.compactMap { user, at in arrivals[user].map { max(0, $0.timeIntervalSince(at)) * 1000 } }.sorted()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        print("webhooks on this machine (server, PostgreSQL, receiver and load share 2 cores)")
        print(
            String(
                format: "  latency, answer → arrival, %d purchases at %d/s (sent in %.1f s, %d answered 200, %d arrived):",
                count, rate, sentFor, answered.ok, latencies.count))
        print(
            String(
                format: "    p50 %.1f ms   p90 %.1f ms   p99 %.1f ms   max %.1f ms   (goal p50 < 50 ms, p99 < 500 ms)",
                percentile(0.5), percentile(0.9), percentile(0.99), latencies.last ?? .nan))

        // 2. Throughput: a backlog ingested (its rate measured), then replayed to the receiver.
        var ingestRates: [Double] = [], deliveryRates: [Double] = []
        for round in 1...rounds {
            let prefix = "b\(round)-"
            let payloads = try (0..<backlog).map { try body(prefix + String($0)) }
            let ingestStart = Date()
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for lane in 0..<32 {
                    tasks.addTask {
                        for index in stride(from: lane, to: payloads.count, by: 32) {
                            _ = try await send(.POST, "/v1/apps/\(bundle)/transactions", payloads[index])
                        }
                    }
                }
                try await tasks.waitForAll()
            }
            ingestRates.append(Double(backlog) / Date().timeIntervalSince(ingestStart))
            let first = try await pool.query(
                "SELECT min(position) AS p FROM ledger.changes WHERE bundle_id = $1 AND user_id LIKE $2",
                [bundle, prefix + "%"])[0]["p"].int64()
            while try await pool.query(
                "SELECT count(*) AS n FROM ledger.changes WHERE bundle_id = $1 AND user_id LIKE $2",
                [bundle, prefix + "%"])[0]["n"].int() < backlog
            { try await Task.sleep(for: .milliseconds(20)) }
            // Everything ingested was also delivered by now; the replay sends the backlog again.
            while receiver.accepted.filter({ $0.userID.hasPrefix(prefix) }).count < backlog { try await Task.sleep(for: .milliseconds(20)) }
            let before = receiver.accepted.count
            let replayStart = Date()
            _ = try await send(.POST, "/v1/apps/\(bundle)/webhooks/bench/replay", Array(#"{"from_position": \#(first)}"#.utf8))
            while receiver.accepted.count - before < backlog { try await Task.sleep(for: .milliseconds(5)) }
            let last = receiver.accepted.last!.arrivedAt
            deliveryRates.append(Double(backlog) / last.timeIntervalSince(replayStart))
        }
        print("  throughput, \(backlog) changes replayed to a fast receiver, \(rounds) rounds (median):")
        print(
            "    delivered \(format(median(deliveryRates)))   (rounds: \(deliveryRates.map { String(format: "%.0f", $0) }.joined(separator: " / ")); goal ≥ 2,000/s)"
        )
        print(
            "    ingested  \(format(median(ingestRates)))   the same purchases, 32 connections (rounds: \(ingestRates.map { String(format: "%.0f", $0) }.joined(separator: " / ")))"
        )
        await receiver.stop()
        try await client.shutdown()
        await server.stop()
    }

    /// When each purchase was answered.
    final class Answers: Sendable {
        private let state = Mutex<(all: [(String, Date)], ok: Int)>(([], 0))
        func record(_ user: String, at date: Date, ok: Bool) {
            state.withLock {
                $0.all.append((user, date)); if ok { $0.ok += 1 }
            }
        }
        var all: [(String, Date)] { state.withLock { $0.all } }
        var ok: Int { state.withLock { $0.ok } }
    }
}
