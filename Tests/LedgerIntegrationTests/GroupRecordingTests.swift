import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Concurrent ingestions are recorded in groups (`GroupRecorder`): what a group records must be
/// exactly what the same requests record one by one — including requests of one group that
/// present the same transaction, which the group sends to be decided alone.
@Suite(.takingTurns) struct GroupRecordingTests {
    static let bundle = TestServer.bundleID

    @Test func concurrentPurchasesAreEachRecordedOnceAndOwnedByTheirPresenter() async throws {
        let server = try await TestServer.start(poolSize: 8)
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let app = server.app
        func signed(_ transactionID: String) throws -> String {
            try app.signedTransaction(IngestionFlowTests.subscription(transactionID, days: 30, startedAgo: 60))
        }
        func body(_ jws: String, user: String) throws -> Data {
            try JSONSerialization.data(withJSONObject: ["user_id": user, "signed_transaction": jws])
        }
        let same = try signed("g-same"), shared = try signed("g-shared")
        // 20 users each buying their own subscription, one user posting the same one five times,
        // and five users presenting one transaction (restore policy transfer) — all at once.
        var requests: [(user: String, body: Data)] = []
        for index in 0..<20 { requests.append(("solo-\(index)", try body(signed("g-\(index)"), user: "solo-\(index)"))) }
        for _ in 0..<5 { requests.append(("repeat", try body(same, user: "repeat"))) }
        for index in 0..<5 { requests.append(("family-\(index)", try body(shared, user: "family-\(index)"))) }
        let answers = try await withThrowingTaskGroup(of: (String, TestServer.Answer).self) { group in
            for request in requests {
                let (user, body) = request
                group.addTask { (user, try await server.send("POST", "/v1/apps/\(Self.bundle)/transactions", key: key, body: body)) }
            }
            return try await group.reduce(into: [(String, TestServer.Answer)]()) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.1.status == 200 }, "\(answers.filter { $0.1.status != 200 }.map(\.1.text))")
        // Every answer includes its own write (read-your-writes), the shared transaction aside:
        // a later presenter may already have taken it over when an earlier one is answered.
        for (user, answer) in answers where !user.hasPrefix("family") {
            let pro = (answer.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
            #expect(pro?["active"] as? Bool == true, "\(user): \(answer.text)")
        }

        func count(_ sql: String) async throws -> Int { try await server.pool.query(sql)[0][0].int() }
        #expect(try await count("SELECT count(*) FROM ledger.events WHERE event_type = 'Purchased'") == 22, "each transaction once")
        #expect(try await count("SELECT count(*) FROM ledger.events WHERE event_type = 'TransactionClaimed'") == 22, "each claimed once")
        #expect(try await count("SELECT count(*) FROM ledger.events WHERE event_type = 'OwnershipTransferred'") <= 4)
        // The shared transaction ended with exactly one of the five, the last its stream records.
        let last = try await server.pool.query(
            """
            SELECT coalesce(data->>'toUserID', data->>'userID') AS owner FROM ledger.events
             WHERE stream = 'purchase:\(Self.bundle):g-shared' AND event_type IN ('TransactionClaimed', 'OwnershipTransferred')
             ORDER BY version DESC LIMIT 1
            """)[0]["owner"].string()
        var holders: [String] = []
        for index in 0..<5 {
            let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/family-\(index)", key: key)
            let pro = (state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
            if pro?["active"] as? Bool == true { holders.append("family-\(index)") }
        }
        #expect(holders == [last], "one owner, the one the log says")
        let report = try await ChainVerifier(pool: server.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
    }
}
