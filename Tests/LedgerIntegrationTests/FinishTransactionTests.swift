import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Finish Transaction for an app whose server grants content: each purchase and renewal the
/// ledger records is finished at Apple once, through Apple's failures.
@Suite(.takingTurns) struct FinishTransactionTests {
    static let bundle = TestServer.bundleID

    @Test func eachRecordedPurchaseIsFinishedAtAppleOnceThroughItsFailures() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let configured = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey,
            json: [
                "environments": ["Production", "Sandbox"], "shared_secret": "s3cret", "apple_app_id": 4242,
                "server_finishes_transactions": true,
            ])
        #expect(configured.status == 200 && configured.json["server_finishes_transactions"] as? Bool == true, "\(configured.text)")
        let key = try await server.key([.ingest, .read])
        let bought = SimulatedTransaction(
            transactionID: "fin-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))
        let coins = SimulatedTransaction(
            transactionID: "fin-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        server.serverAPI.add([bought, coins], to: server.app)
        // Apple is away for the first two tries.
        server.serverAPI.script([.error(status: 500), .error(status: 503)])
        for transaction in [bought, coins, bought] {
            let posted = try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "fay", "signed_transaction": try server.app.signedTransaction(transaction)])
            #expect(posted.status == 200, "\(posted.text)")
        }
        // A renewal told by Apple's notification is finished too.
        let renewal = bought.renewed(transactionID: "fin-3", period: 30 * 86_400)
        server.serverAPI.add([renewal], to: server.app)
        let renewed = try server.app.notificationV2("DID_RENEW", transaction: renewal)
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: renewed).status == 200)

        #expect(
            try await eventually { server.serverAPI.finishedTransactions(of: server.app).count == 3 },
            "\(server.serverAPI.finishedTransactions(of: server.app))")
        try await Task.sleep(for: .seconds(2))
        #expect(server.serverAPI.finishedTransactions(of: server.app) == ["fin-1": 1, "fin-2": 1, "fin-3": 1], "once each")
        let calls = server.serverAPI.seen().filter { $0.path.hasSuffix("/finish") }.map(\.status)
        #expect(calls.filter { $0 >= 500 } == [500, 503] && calls.filter { $0 == 200 }.count == 3, "Apple's 5xx were retried: \(calls)")
        let done = try await server.pool.query("SELECT count(*) AS n FROM ledger.apple_finishes WHERE finished_at IS NOT NULL")
        #expect(try done[0]["n"].int() == 3)
    }

    @Test func anAppThatFinishesInTheAppIsNotFinishedByTheLedger() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let bought = SimulatedTransaction(
            transactionID: "nofin-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        server.serverAPI.add([bought], to: server.app)
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "gus", "signed_transaction": try server.app.signedTransaction(bought)])
        #expect(posted.status == 200)
        #expect(try await server.pool.query("SELECT count(*) AS n FROM ledger.apple_finishes")[0]["n"].int() == 0)
    }
}
