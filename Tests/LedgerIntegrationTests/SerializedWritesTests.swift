import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerFormats
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// Requests that meet on one stream take turns (`EventStore.serialized`) instead of racing: every
/// one gets a decision — 200, or 409 when the balance is spent — and never "try again", however
/// many arrive at once and on however many servers.
@Suite(.takingTurns) struct SerializedWritesTests {
    static let bundle = TestServer.bundleID

    /// 64 requests in flight at once (not the shared client's 8 connections per host).
    /// Each answer's status, body and `Ledger-Position`.
    static func all(
        _ requests: [(server: TestServer, path: String, json: [String: any Sendable])], key: String
    ) async throws -> [(Int, String, String?)] {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(
                connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)))
        let answers = try await withThrowingTaskGroup(of: (Int, String, String?).self) { group in
            for (server, path, json) in requests {
                let body = try JSONSerialization.data(withJSONObject: json)
                group.addTask {
                    var request = HTTPClientRequest(url: server.baseURL + path)
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(key)")
                    request.body = .bytes(ByteBuffer(bytes: body))
                    let response = try await client.execute(request, timeout: .seconds(60))
                    let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                    return (Int(response.status.code), text, response.headers.first(name: "Ledger-Position"))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try await client.shutdown()
        return answers
    }

    static func twoServers() async throws -> (TestServer, TestServer) {
        let first = try await TestServer.start(poolSize: 8)
        let second = try await TestServer.start(poolSize: 8, configure: false, sharing: first)
        return (first, second)
    }

    @Test func sixtyFourSpendsOnTwoServersEachGetADecision() async throws {
        try await HeavyTests.oneAtATime {
            let (first, second) = try await Self.twoServers()
            defer {
                Task {
                    await second.stop(); await first.stop()
                }
            }
            let key = try await first.key([.ingest, .read])
            let coins = SimulatedTransaction(
                transactionID: "w-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -10))
            let bought = try await first.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "wallet", "signed_transaction": try first.app.signedTransaction(coins)])
            try #require(bought.status == 200, "\(bought.text)")
            let spends = (0..<64).map { index in
                (
                    index % 2 == 0 ? first : second, "/v1/apps/\(Self.bundle)/users/wallet/consumptions",
                    ["currency": "coins", "amount": 3, "idempotency_key": "spend-\(index)"] as [String: any Sendable]
                )
            }
            let answers = try await Self.all(spends, key: key)
            #expect(answers.allSatisfy { $0.0 == 200 || $0.0 == 409 }, "\(answers.filter { $0.0 != 200 && $0.0 != 409 })")
            #expect(answers.filter { $0.0 == 200 }.count == 33, "100 coins cover exactly 33 spends of 3")
            #expect(answers.filter { $0.0 == 409 }.allSatisfy { $0.1.contains("insufficient_balance") })
            // Read after every spend, on both servers (the furthest position any answer reflected).
            let furthest = try #require(answers.compactMap { $0.2.flatMap(LogPosition.init) }.max())
            for server in [first, second] {
                let state = try await server.send(
                    "GET", "/v1/apps/\(Self.bundle)/users/wallet", key: key,
                    headers: [("Ledger-Read-After", furthest.description)])
                #expect((state.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 1, "both servers read the balance left")
            }
            // The spends' own balances count down by three, each exactly once.
            let left = answers.filter { $0.0 == 200 }.compactMap { answer in
                ((try? JSONSerialization.jsonObject(with: Data(answer.1.utf8))) as? [String: Any])?["balance"] as? Int
            }
            #expect(left.sorted() == stride(from: 1, through: 97, by: 3).map { $0 })
        }
    }

    @Test func sixtyFourGrantsAndSixteenClaimsOfOnePurchaseOnTwoServersAllSucceed() async throws {
        try await HeavyTests.oneAtATime {
            let (first, second) = try await Self.twoServers()
            defer {
                Task {
                    await second.stop(); await first.stop()
                }
            }
            let admin = first.adminKey
            let grants = (0..<64).map { index in
                (
                    index % 2 == 0 ? first : second, "/v1/apps/\(Self.bundle)/users/granted/grants",
                    ["entitlement": "vip\(index)", "reason": "test", "grant_id": "g\(index)", "duration": "P7D"] as [String: any Sendable]
                )
            }
            let granted = try await Self.all(grants, key: admin)
            #expect(granted.allSatisfy { $0.0 == 201 }, "\(granted.filter { $0.0 != 201 })")

            let shared = try first.app.signedTransaction(IngestionFlowTests.subscription("shared-1", days: 30, startedAgo: 60))
            let claims = (0..<16).map { index in
                (
                    index % 2 == 0 ? first : second, "/v1/apps/\(Self.bundle)/transactions",
                    ["user_id": "claimant-\(index)", "signed_transaction": shared] as [String: any Sendable]
                )
            }
            let claimed = try await Self.all(claims, key: admin)
            #expect(claimed.allSatisfy { $0.0 == 200 }, "\(claimed.filter { $0.0 != 200 })")
            let count = try await first.pool.query(
                "SELECT count(*) FROM ledger.events WHERE event_type = 'Purchased' AND stream LIKE '%shared-1'")
            #expect(try count[0][0].int() == 1, "the purchase recorded once")
            let report = try await ChainVerifier(pool: first.pool).verify()
            #expect(report.isIntact)
        }
    }
}
