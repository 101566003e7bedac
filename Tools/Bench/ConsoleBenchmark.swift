import ArgumentParser
import AsyncHTTPClient
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerServer
import NIOCore
import NIOHTTP1

/// `ledger-bench console`: the user page of a user with 1,000 events, rendered by the real server
/// through a signed-in session, beside the same server's `/healthz` in the same run.
struct ConsoleBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "The console's user page for a user with 1,000 events: p50/p99 beside /healthz.")

    @Option(help: "Events of the user shown.") var events = 1_000
    @Option(help: "Sequential page loads per round.") var loads = 300
    @Option(help: "Rounds.") var rounds = 3

    func run() async throws {
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let bundle = "com.example.console-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await server.services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        _ = try await server.services.directory.define(
            .init(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]), in: bundle)
        _ = try await server.services.directory.define(.init(productID: "coins.100", type: .consumable, grants: ["coins": 100]), in: bundle)
        // The user: a subscription renewed every few days, coins bought and spent — `events` facts.
        let start = Date(timeIntervalSinceNow: -Double(events) * 86_400)
        var facts: [(LedgerEvent, Date)] = []
        var period = start
        for n in 0..<(events / 2) {
            let renewal = TransactionFacts(
                environment: .production, transactionID: n == 0 ? "t0" : "t0-\(n)", originalTransactionID: "t0", productID: "pro.monthly",
                purchaseDate: period, expiresDate: period + 2 * 86_400, price: 4_990, currency: "EUR", signedDate: period)
            facts.append((n == 0 ? .purchased(renewal) : .renewed(renewal), period))
            if n == 0 {
                facts.append((.transactionClaimed(Claim(originalTransactionID: "t0", userID: "u0")), period + 60))
            } else {
                facts.append((.consumed(Consumption(userID: "u0", currency: "coins", amount: 0, idempotencyKey: "k\(n)")), period + 120))
            }
            period += 2 * 86_400
        }
        var byStream: [String: [NewEvent]] = [:]
        for (event, at) in facts {
            let (stream, new) = try StoredFacts.newEvent(event, bundleID: bundle, id: UUID(), occurredAt: at)
            byStream[stream, default: []].append(new)
        }
        _ = try await server.services.store.append(batch: byStream.map { StreamAppend(stream: $0.key, events: $0.value) })
        try owner.execute(script: "ANALYZE")
        let secret = try await server.services.keys.create(name: "bench-console-\(bundle)", scopes: [.admin], bundleID: nil).secret

        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        var signIn = HTTPClientRequest(url: server.base + "/console/sign-in")
        signIn.method = .POST
        signIn.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        signIn.body = .bytes(ByteBuffer(string: "key=\(secret)"))
        let signedIn = try await client.execute(signIn, timeout: .seconds(10))
        guard let cookie = signedIn.headers["Set-Cookie"].first?.split(separator: ";").first.map(String.init) else {
            throw ValidationError("no session")
        }
        func load(_ path: String) async throws -> (ms: Double, bytes: Int, status: UInt) {
            var request = HTTPClientRequest(url: server.base + path)
            request.headers.add(name: "Cookie", value: cookie)
            let began = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 64 << 20)
            let elapsed = ContinuousClock.now - began
            return (
                Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15, body.readableBytes,
                response.status.code
            )
        }
        let page = "/console/apps/\(bundle)/users/u0"
        let first = try await load(page)
        guard first.status == 200 else { throw ValidationError("the user page answered \(first.status)") }
        var pageP50: [Double] = [], pageP99: [Double] = [], healthP50: [Double] = [], healthP99: [Double] = []
        for _ in 1...rounds {
            var pages: [Double] = [], health: [Double] = []
            for _ in 0..<loads {
                pages.append(try await load(page).ms)
                health.append(try await load("/healthz").ms)
            }
            pages.sort(); health.sort()
            pageP50.append(pages[pages.count / 2]); pageP99.append(pages[Int(Double(pages.count - 1) * 0.99)])
            healthP50.append(health[health.count / 2]); healthP99.append(health[Int(Double(health.count - 1) * 0.99)])
        }
        print(
            "console user page, a user with \(facts.count) events (\(first.bytes / 1024) KiB of HTML), \(loads) sequential loads × \(rounds) rounds, medians of rounds"
        )
        print(
            String(
                format: "  user page  p50 %.2f ms   p99 %.2f ms   (goal p99 < 50 ms)   rounds p99: %@", median(pageP50), median(pageP99),
                pageP99.map { String(format: "%.1f", $0) }.joined(separator: " / ")))
        print(
            String(
                format: "  /healthz   p50 %.2f ms   p99 %.2f ms   (baseline, the same client and server)", median(healthP50),
                median(healthP99)))
        try await client.shutdown()
        await server.stop()
    }
}
