import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerPostgres
import LedgerServer
import LedgerTestSupport
import Logging
import NIOCore
import NIOHTTP1

/// `ledger-bench failover`: a pg_auto_failover formation (monitor, primary, synchronous
/// secondary, each under its keeper) and the real server on its host list, a steady load of
/// purchases; the primary's machine is killed and the monitor promotes. Per run, beside
/// pg_auto_failover's own promotion time (the kill until the monitor has the secondary primary
/// and it takes writes), what the ledger adds: from that promotion to the first purchase sent
/// after the kill that is acknowledged, and the purchases answered 503 meanwhile.
struct FailoverBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failover",
        abstract: "Time without writes through a pg_auto_failover failover under load, beside the promotion itself (median of runs).")

    @Option(help: "Failovers (medians are quoted).") var runs = 5
    @Option(help: "Concurrent writers.") var writers = 2
    @Option(help: "Milliseconds each writer waits between purchases.") var pause = 50

    struct Sent: Sendable {
        var sentAt: ContinuousClock.Instant
        var answeredAt: ContinuousClock.Instant
        var status: Int
    }

    func run() async throws {
        guard AutoFailover.isAvailable else {
            throw ValidationError("pg_auto_failover is not installed (apt-get install postgresql-15-auto-failover)")
        }
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        var promotions: [Double] = [], gaps: [Double] = [], refusals: [Double] = []
        print("failover under load (\(writers) writers, a purchase every \(pause) ms each; server, PostgreSQL ×3 and load share 2 cores)")
        print("  run   promotion (kill → writable)   ledger adds (→ first ack)   kill → first ack   answered 503   other")
        for run in 1...runs {
            let outcome = try await Self.once(writers: writers, pause: .milliseconds(pause), logger: logger)
            promotions.append(outcome.promotion)
            gaps.append(outcome.gap)
            refusals.append(Double(outcome.refused))
            print(
                String(
                    format: "  %3d   %24.2f s   %22.3f s   %14.2f s   %12d   %5d", run, outcome.promotion, outcome.gap,
                    outcome.promotion + outcome.gap,
                    outcome.refused, outcome.other))
        }
        print(
            String(
                format: "  median %22.2f s   %22.3f s   %14.2f s   %12.0f        (goal: the ledger adds < 1 s)", median(promotions),
                median(gaps),
                median(zip(promotions, gaps).map { $0 + $1 }), median(refusals)))
    }

    /// One failover: the seconds from the kill to the promotion, from the promotion to the first
    /// acknowledged purchase sent after the kill (negative: the ledger wrote before the poll of
    /// the promotion noticed it), and the answers other than 200 meanwhile.
    static func once(
        writers: Int, pause: Duration, logger: Logger
    ) async throws -> (promotion: Double, gap: Double, refused: Int, other: Int) {
        let formation = try await AutoFailover.start(logger: logger)
        defer { formation.stop() }
        let (_, database) = try await formation.database()
        var application = formation.hostList(database: database, user: TestCluster.runtime, deadline: .seconds(2))
        application.role = "ledger_app"
        let server = try await BenchServer.start(application: application, logger: logger)
        let bundle = "com.example.failover"
        _ = try await server.services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        _ = try await server.services.directory.define(.init(productID: "coins.100", type: .consumable, grants: ["coins": 100]), in: bundle)
        let key = try await server.services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let simulated = SimulatedApp(authority: server.authority, bundleID: bundle, environment: "Sandbox")

        let sent = Locked<[Sent]>([])
        let running = Locked<Bool>(true)
        let base = server.base
        let load = (0..<writers).map { writer in
            Task<Void, Never> { [sent, running] in
                var index = 0
                while running.value {
                    index += 1
                    let id = "w\(writer)-\(index)"
                    let purchase = SimulatedTransaction(
                        transactionID: id, productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
                    var request = HTTPClientRequest(url: base + "/v1/apps/\(bundle)/transactions")
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(key)")
                    let body = try? JSONSerialization.data(withJSONObject: [
                        "user_id": "u-\(id)", "signed_transaction": try simulated.signedTransaction(purchase),
                    ])
                    request.body = .bytes(ByteBuffer(bytes: body ?? Data()))
                    let sentAt = ContinuousClock.now
                    var status = -1
                    if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)) {
                        status = Int(response.status.code)
                        _ = try? await response.body.collect(upTo: 1 << 20)
                    }
                    sent.withLock { $0.append(Sent(sentAt: sentAt, answeredAt: .now, status: status)) }
                    try? await Task.sleep(for: pause)
                }
            }
        }
        func firstAcknowledged(sentAfter instant: ContinuousClock.Instant) -> Sent? {
            let acknowledged: [Sent] = sent.value.filter { $0.status == 200 && $0.sentAt > instant }
            return acknowledged.min { $0.answeredAt < $1.answeredAt }
        }
        let warm = ContinuousClock.now
        while firstAcknowledged(sentAfter: warm) == nil { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .seconds(2))

        let old = try formation.primaryNode()
        guard let other = formation.nodes.first(where: { $0.name != old.name }) else { throw ValidationError("a formation of one node") }
        let killed = ContinuousClock.now
        try formation.kill(old)
        let promoted = try await formation.waitUntilWritable(other, within: .seconds(90))
        var first = firstAcknowledged(sentAfter: killed)
        while first == nil, ContinuousClock.now - promoted < .seconds(30) {
            try await Task.sleep(for: .milliseconds(10))
            first = firstAcknowledged(sentAfter: killed)
        }
        running.withLock { $0 = false }
        for task in load { await task.value }
        await server.stop()
        guard let first else { throw ValidationError("writes did not come back within 30 s of the promotion") }
        let meanwhile: [Sent] = sent.value.filter { $0.sentAt > killed && $0.answeredAt < first.answeredAt }
        return (
            promotion: (promoted - killed).seconds, gap: (first.answeredAt - promoted).seconds,
            refused: meanwhile.filter { $0.status == 503 }.count, other: meanwhile.filter { ![200, 503].contains($0.status) }.count
        )
    }
}
