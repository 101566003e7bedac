import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerReconciliation
import LedgerServer
import LedgerTestSupport
import Testing

/// Backfill at adoption over the real server's parts, a real PostgreSQL and the simulator's App
/// Store Server API: a file of users and their original transaction ids, imported and resumable.
@Suite(.takingTurns) struct BackfillTests {
    static let bundle = TestServer.bundleID
    static let month: TimeInterval = 30 * 86_400

    func eventCount(_ server: TestServer) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
    }

    @Test func tenThousandTransactionsAreImportedFromAFileAndASecondRunRecordsNothing() async throws {
        try await HeavyTests.oneAtATime {
            let server = try await TestServer.start(poolSize: 8)
            defer { Task { await server.stop() } }
            // 100 customers, each with a subscription renewed 99 times (five history pages each):
            // 10,000 transactions, in few enough requests that the suite's other tests keep their pace.
            let start = Date(timeIntervalSinceNow: -99 * Self.month - 86_400)
            var csv = "user_id,original_transaction_id\n"
            for customer in 0..<100 {
                var periods = [
                    SimulatedTransaction(
                        transactionID: "b\(customer)-0", productID: "pro.monthly", purchaseDate: start,
                        expiresDate: start.addingTimeInterval(Self.month))
                ]
                for n in 1..<100 { periods.append(periods.last!.renewed(transactionID: "b\(customer)-\(n)", period: Self.month)) }
                server.serverAPI.add(periods, customer: "customer-\(customer)", to: server.app)
                csv += "player-\(customer),b\(customer)-0\n"
            }
            csv += "player-x,404404\n" // Apple knows no such transaction: that line fails, the rest go on
            let lines = try BackfillFile.parse(csv)
            #expect(lines.count == 101 && lines.first?.number == 2)

            let backfill = Backfill(
                lookups: server.services.lookups, ingestor: server.services.ingestor, pool: server.pool, concurrency: 16,
                logger: TestCluster.quietLogger)
            let first = try await backfill.run(bundleID: Self.bundle, lines: lines)
            #expect(first.imported == 100 && first.transactions == 10_000 && first.skipped == 0, "\(first)")
            #expect(
                first.failed.count == 1 && first.failed.first?.line == 102
                    && first.failed.first?.reason.hasPrefix("apple_transaction_not_found") == true)
            let recorded = try await eventCount(server)

            let key = try await server.key([.read])
            for customer in [0, 49, 99] {
                let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/player-\(customer)", key: key)
                let pro = (state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
                #expect(pro?["active"] as? Bool == true && pro?["original_transaction_id"] as? String == "b\(customer)-0", "\(state.text)")
            }

            let second = try await backfill.run(bundleID: Self.bundle, lines: lines)
            #expect(second.skipped == 100 && second.imported == 0 && second.failed.count == 1, "\(second)")
            #expect(try await eventCount(server) == recorded, "a second run records nothing")
        }
    }

    /// Apple's migration path: legacy receipts read locally (the simulator's PKCS#7 receipts,
    /// signed by its RSA chain), their in-app ids leading to Apple's history, which brings what the
    /// receipt never held (later renewals, another family of the same customer).
    @Test func receiptsAreReadLocallyAndTheirCustomersHistoriesImported() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let start = Date(timeIntervalSinceNow: -3 * Self.month - 86_400)
        var periods = [
            SimulatedTransaction(
                transactionID: "r1-0", productID: "pro.monthly", purchaseDate: start,
                expiresDate: start.addingTimeInterval(Self.month))
        ]
        for n in 1...3 { periods.append(periods.last!.renewed(transactionID: "r1-\(n)", period: Self.month)) }
        let lifetime = SimulatedTransaction(transactionID: "r1-ads", productID: "remove.ads", type: "Non-Consumable", purchaseDate: start)
        server.serverAPI.add(periods + [lifetime], customer: "alice", to: server.app)
        let coins = SimulatedTransaction(transactionID: "r2-coins", productID: "coins.100", type: "Consumable", purchaseDate: start)
        server.serverAPI.add([coins], customer: "bob", to: server.app)

        let receipts = ReceiptAuthority.shared
        let lines = [
            // Made two months ago: the first period and the lifetime purchase only.
            (
                "alice",
                try receipts.receipt(bundleID: Self.bundle, purchases: [periods[0], lifetime], created: start.addingTimeInterval(86_400))
            ),
            ("bob", try receipts.receipt(bundleID: Self.bundle, purchases: [coins])),
            ("carol", try receipts.receipt(bundleID: Self.bundle, purchases: [])),
            ("mallory", try ReceiptAuthority().receipt(bundleID: Self.bundle, purchases: [coins])),
            ("trent", try receipts.receipt(bundleID: "com.example.other", purchases: [coins])),
        ].map { user, receipt in
            String(decoding: try! JSONSerialization.data(withJSONObject: ["user_id": user, "receipt_data": receipt]), as: UTF8.self)
        }
        let file = try BackfillFile.parse(lines.joined(separator: "\n"))
        let backfill = Backfill(
            lookups: server.services.lookups, ingestor: server.services.ingestor, pool: server.pool, logger: TestCluster.quietLogger)
        let run = try await backfill.run(bundleID: Self.bundle, lines: file)
        #expect(run.imported == 3 && run.transactions == 6, "\(run)")
        #expect(
            run.failed.map(\.line) == [4, 5] && run.failed[0].reason.hasPrefix("untrusted_chain")
                && run.failed[1].reason.hasPrefix("bundle_mismatch"), "\(run)")
        let histories = server.serverAPI.seen().filter { $0.path.contains("/v2/history/") }
        #expect(
            Set(histories.map { $0.path.split(separator: "/").last! }) == ["r1-0", "r2-coins"],
            "alice's lifetime family came with her subscription's history: \(histories.map(\.path))")

        let key = try await server.key([.read])
        let alice = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/alice", key: key)
        let entitlements = alice.json["entitlements"] as? [String: any Sendable]
        #expect(
            (entitlements?["pro"] as? [String: any Sendable])?["active"] as? Bool == true,
            "the renewal the receipt never held: \(alice.text)")
        #expect(entitlements?["no_ads"] != nil, "\(alice.text)")
        let bob = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/bob", key: key)
        #expect((bob.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 100, "\(bob.text)")

        let recorded = try await eventCount(server)
        let second = try await backfill.run(bundleID: Self.bundle, lines: file)
        #expect(second.skipped == 3 && second.imported == 0 && second.failed.count == 2, "\(second)")
        #expect(try await eventCount(server) == recorded, "a second run records nothing")
    }

    @Test func filesAreReadAsCSVOrJSONLinesAndAWrongOneIsRefusedWhole() async throws {
        let csv = try BackfillFile.parse("user_id,original_transaction_id\n\"a, b\",1001\n\nc,1002\n")
        #expect(
            csv == [
                BackfillLine(number: 2, userID: "a, b", reference: .transaction("1001")),
                BackfillLine(number: 4, userID: "c", reference: .transaction("1002")),
            ])
        let jsonl = try BackfillFile.parse(
            "{\"user_id\": \"a\", \"original_transaction_id\": 1001}\n{\"user_id\": \"b\", \"receipt_data\": \"TUlJ\"}\n")
        #expect(jsonl.map(\.reference) == [.transaction("1001"), .receipt("TUlJ")])
        #expect(throws: BackfillFile.Invalid(line: 1, reason: "the header names no user_id column")) {
            try BackfillFile.parse("user,id\n1,2\n")
        }
        #expect(throws: BackfillFile.Invalid(line: 3, reason: "user_id is missing")) {
            try BackfillFile.parse("user_id,original_transaction_id\na,1\n,2\n")
        }
    }
}
