import AppStoreSimulator
import Crypto
import Foundation
import LedgerAccess
import LedgerCore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerReconciliation
import LedgerServer
import LedgerTestSupport
import Testing

/// Reconciliation with Apple over the real server, a real PostgreSQL and the simulator's App Store
/// Server API: sync on restore, order lookup, missed notifications recovered, and what Apple's
/// refusals look like to the caller.
@Suite(.takingTurns) struct ReconciliationTests {
    static let bundle = TestServer.bundleID
    static let month: TimeInterval = 30 * 86_400

    func eventCount(_ server: TestServer) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
    }

    static func entitlement(_ answer: TestServer.Answer, _ name: String) -> [String: any Sendable]? {
        (answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable]
    }

    /// A customer of three months: a subscription renewed twice (active now), coins bought and
    /// refunded, ads removed for good.
    static func customer(_ prefix: String) -> [SimulatedTransaction] {
        let start = Date(timeIntervalSinceNow: -2 * month - 86_400)
        var subscription = [
            SimulatedTransaction(
                transactionID: "\(prefix)-s0", productID: "pro.monthly", purchaseDate: start,
                expiresDate: start.addingTimeInterval(month))
        ]
        for n in 1...2 { subscription.append(subscription.last!.renewed(transactionID: "\(prefix)-s\(n)", period: month)) }
        let coins = SimulatedTransaction(transactionID: "\(prefix)-c", productID: "coins.100", type: "Consumable", purchaseDate: start)
            .revoked(at: start.addingTimeInterval(86_400))
        let ads = SimulatedTransaction(transactionID: "\(prefix)-a", productID: "remove.ads", type: "Non-Consumable", purchaseDate: start)
        return subscription + [coins, ads]
    }

    @Test func syncOnRestoreRecordsTheCustomersWholeHistoryOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let purchases = Self.customer("r1")
        server.serverAPI.add(purchases, customer: "customer-r1", to: server.app)
        // The app already posted the latest renewal through StoreKit.
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "alice", "signed_transaction": try server.app.signedTransaction(purchases[2])])
        #expect(posted.status == 200, "\(posted.text)")
        let before = try await eventCount(server)

        let synced = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/alice/sync", key: key, json: ["transaction_id": "r1-a"])
        #expect(synced.status == 200, "\(synced.text)")
        #expect(Self.entitlement(synced, "pro")?["active"] as? Bool == true)
        #expect(Self.entitlement(synced, "pro")?["original_transaction_id"] as? String == "r1-s0")
        #expect(Self.entitlement(synced, "no_ads")?["active"] as? Bool == true)
        #expect((synced.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 0, "the coins were refunded")
        #expect((synced.json["purchases"] as? [Any])?.count == 2, "the one-time purchases: coins and remove.ads")
        let afterSync = try await eventCount(server)
        #expect(afterSync > before)

        let again = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/alice/sync", key: key, json: ["transaction_id": "r1-s1"])
        #expect(again.status == 200 && Self.entitlement(again, "pro")?["active"] as? Bool == true)
        #expect(try await eventCount(server) == afterSync, "a second sync learns nothing new and records nothing")
        let restated = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "alice", "signed_transaction": try server.app.signedTransaction(purchases[0])])
        #expect(restated.status == 200)
        #expect(
            try await eventCount(server) == afterSync, "a transaction learnt from StoreKit, the history and the statuses is recorded once")
    }

    @Test func syncWaitsOutApplesRateLimitAndOrderLookupNamesEachOwner() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let ingest = try await server.key([.ingest])
        let support = try await server.key([.read])
        let ads = SimulatedTransaction(
            transactionID: "o-1", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        let coins = SimulatedTransaction(
            transactionID: "o-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        server.serverAPI.add([ads], customer: "c-o1", to: server.app)
        server.serverAPI.add([coins], customer: "c-o2", to: server.app)
        server.serverAPI.addOrder("MQ8HB7T2Z1", transactionIDs: ["o-1", "o-2"], to: server.app)

        server.serverAPI.script([.error(status: 429, retryAfter: "1")])
        let synced = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/dana/sync", key: ingest, json: ["transaction_id": "o-1"])
        #expect(synced.status == 200, "\(synced.text)")
        let limited = server.serverAPI.seen()
        let rateLimited = try #require(limited.firstIndex { $0.status == 429 })
        #expect(limited[rateLimited + 1].at.timeIntervalSince(limited[rateLimited].at) >= 1.0, "Retry-After was respected")
        // Each exchange is counted under Apple's endpoint and status, the 429 among them; no id is a label.
        let calls = try await server.send("GET", "/metrics", key: server.adminKey).text.split(separator: "\n")
            .filter { $0.hasPrefix("ledger_apple_calls_total{") && $0.contains("api=\"app_store_server_api\"") }
        #expect(
            calls.contains {
                $0.contains("outcome=\"rate_limited\"") && $0.contains("status=\"429\"") && $0.contains("endpoint=\"GET /inApps/")
            })
        #expect(calls.contains { $0.contains("outcome=\"ok\"") && $0.contains("status=\"200\"") && $0.contains("{id}") }, "\(calls)")
        #expect(!calls.contains { $0.contains("o-1") || $0.contains("dana") }, "\(calls)")

        let order = try await server.send("GET", "/v1/apps/\(Self.bundle)/orders/MQ8HB7T2Z1", key: support)
        #expect(order.status == 200, "\(order.text)")
        #expect(order.json["environment"] as? String == "Sandbox", "production knew no such order; sandbox did")
        let lines = try #require(order.json["transactions"] as? [[String: any Sendable]])
        #expect(lines.count == 2)
        let owners = Dictionary(
            uniqueKeysWithValues: lines.map { ($0["transaction_id"] as? String ?? "", $0["owner_user_id"] as? String ?? "nobody") })
        #expect(owners == ["o-1": "dana", "o-2": "nobody"], "o-2 was never claimed: its owner is null")
        let missing = try await server.send("GET", "/v1/apps/\(Self.bundle)/orders/NOSUCHORDER", key: support)
        #expect(missing.status == 404 && missing.errorCode == "apple_order_not_found")
        let unknownTransaction = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/dana/sync", key: ingest, json: ["transaction_id": "999"])
        #expect(unknownTransaction.status == 404 && unknownTransaction.errorCode == "apple_transaction_not_found")
    }

    @Test func notificationsSentWhileTheLedgerWasDownAreRecoveredByOneReconcile() async throws {
        try await HeavyTests.oneAtATime {
            let first = try await TestServer.start()
            let key = try await first.key([.ingest, .read])
            // Ten subscribers, each known to the ledger.
            // Whole seconds, so the expiry the API writes is exactly the one computed here.
            let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - Self.month + 3600).rounded(.down))
            var subscriptions: [SimulatedTransaction] = []
            for n in 0..<10 {
                let purchase = SimulatedTransaction(
                    transactionID: "d\(n)", productID: "pro.monthly", purchaseDate: start, expiresDate: start.addingTimeInterval(Self.month)
                )
                subscriptions.append(purchase)
                let posted = try await first.send(
                    "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                    json: ["user_id": "u\(n)", "signed_transaction": try first.app.signedTransaction(purchase)])
                #expect(posted.status == 200)
            }
            await first.stop(keepingApple: true)

            // While it is down Apple sends 50 notifications: four renewals and auto-renew turned off, per subscriber.
            var sent = 0
            for (n, purchase) in subscriptions.enumerated() {
                var latest = purchase
                for period in 1...4 {
                    latest = latest.renewed(transactionID: "d\(n)-r\(period)", period: Self.month)
                    let body = try first.app.notificationV2(
                        "DID_RENEW", transaction: latest,
                        renewal: SimulatedRenewal(originalTransactionID: "d\(n)", productID: "pro.monthly"))
                    #expect(await first.serverAPI.send(body, of: first.app, transactionID: latest.transactionID) == nil)
                    sent += 1
                }
                let off = try first.app.notificationV2(
                    "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: latest,
                    renewal: SimulatedRenewal(originalTransactionID: "d\(n)", productID: "pro.monthly", autoRenewStatus: false))
                #expect(await first.serverAPI.send(off, of: first.app, transactionID: latest.transactionID) == nil)
                sent += 1
            }
            // And one forged in Apple's name, which must be refused without stopping the rest.
            let rogue = SimulatedApp(
                authority: try TestCertificateAuthority(), bundleID: Self.bundle, appAppleID: 4242, environment: "Sandbox")
            await first.serverAPI.send(try rogue.notificationV2("REFUND", transaction: subscriptions[0].revoked(at: Date())), of: first.app)
            let history = first.serverAPI.history(of: first.app)
            #expect(sent == 50 && history.count == 51 && history.allSatisfy { !$0.succeeded }, "every delivery failed")

            let second = try await TestServer.start(configure: false, sharing: first, appleOf: first)

            defer { Task { await second.stop() } }
            let before = try await eventCount(second)
            let reports = try await second.services.recovery.reconcile(bundleID: Self.bundle)
            let sandbox = try #require(reports.first { $0.environment == .sandbox })
            #expect(sandbox.seen == 51 && sandbox.recorded == 50 && sandbox.alreadyRecorded == 0 && sandbox.refused == 1, "\(sandbox)")
            #expect(reports.first { $0.environment == .production }?.seen == 0)
            let recorded = try await eventCount(second)
            #expect(recorded > before)
            let expiry = start.addingTimeInterval(5 * Self.month)
            for n in 0..<10 {
                let state = try await second.send("GET", "/v1/apps/\(Self.bundle)/users/u\(n)", key: key)
                let pro = Self.entitlement(state, "pro")
                let subscription = (state.json["subscriptions"] as? [[String: any Sendable]])?.first
                #expect(pro?["active"] as? Bool == true && subscription?["will_renew"] as? Bool == false, "u\(n): \(state.text)")
                #expect(pro?["expires_at"] as? String == RFC3339.string(expiry), "u\(n) renewed four times")
            }

            let again = try await second.services.recovery.reconcile(bundleID: Self.bundle)
            let repeated = try #require(again.first { $0.environment == .sandbox })
            #expect(repeated.recorded == 0 && repeated.alreadyRecorded == 50, "\(repeated)")
            #expect(try await eventCount(second) == recorded, "each notification is recorded once")
        }
    }

    @Test func applesRefusalsAndAMissingKeyAreClearAndNothingIsRecorded() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = server.adminKey
        let shown = try await server.send("GET", "/v1/apps/\(Self.bundle)", key: admin)
        #expect(shown.json["app_store_server_api_configured"] as? Bool == true)
        #expect(!shown.text.contains("PRIVATE KEY") && shown.json["app_store_server_api"] == nil, "the key is never echoed")
        let bad = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: admin,
            json: [
                "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
                "app_store_server_api": ["issuer_id": TestServer.issuerID, "key_id": "K1", "private_key": "not a key"],
            ])
        #expect(bad.status == 400 && bad.errorCode == "invalid_app_store_server_api")

        server.serverAPI.add(Self.customer("w1"), customer: "customer-w1", to: server.app)
        let before = try await eventCount(server)
        // A tampered item: Apple's answer for production signed by a chain the ledger does not trust.
        let forged = SimulatedApp(
            authority: try TestCertificateAuthority(), bundleID: Self.bundle, appAppleID: 4242, environment: "Production")
        server.serverAPI.register(
            forged, key: .init(issuerID: TestServer.issuerID, keyID: TestServer.keyID, publicKey: TestServer.apiKey.publicKey))
        server.serverAPI.add(
            [SimulatedTransaction(transactionID: "f-1", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date())], to: forged)
        let tampered = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/eve/sync", key: admin, json: ["transaction_id": "f-1"])
        #expect(tampered.status == 422 && tampered.errorCode == "untrusted_chain", "\(tampered.text)")

        let wrong = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: admin,
            json: [
                "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
                "app_store_server_api": [
                    "issuer_id": TestServer.issuerID, "key_id": "WRONGKEY9", "private_key": P256.Signing.PrivateKey().pemRepresentation,
                ],
            ])
        #expect(wrong.status == 200)
        let refused = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/eve/sync", key: admin, json: ["transaction_id": "w1-a"])
        #expect(refused.status == 422 && refused.errorCode == "apple_api_unauthorized", "\(refused.text)")
        let message = (refused.json["error"] as? [String: any Sendable])?["message"] as? String ?? ""
        #expect(message.contains("WRONGKEY9") && message.contains(Self.bundle), "\(message)")
        #expect(try await eventCount(server) == before, "nothing was recorded from refused answers")
    }
}

/// Apple's CONSUMPTION_REQUEST answered from the ledger's facts, only with the customer's consent.
@Suite(.takingTurns) struct ConsumptionRequestTests {
    static let bundle = TestServer.bundleID

    func configure(_ server: TestServer, policy: [String: Any]?) async throws {
        var body: [String: Any] = ["environments": ["Production", "Sandbox"], "apple_app_id": 4242]
        body["consumption_policy"] = policy
        let answer = try await server.send("PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: body)
        #expect(answer.status == 200, "\(answer.text)")
    }

    @Test func aConsumptionRequestIsAnsweredWithWhatTheLedgerKnowsAndTheAnswerIsInTheAuditTrail() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await configure(server, policy: ["customer_consented": true, "refund_preference": "DECLINE", "sample_content_provided": true])
        let key = try await server.key([.ingest, .read])
        // 100 coins bought, 70 spent: 70 % consumed.
        let coins = SimulatedTransaction(
            transactionID: "cr-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        server.serverAPI.add([coins], to: server.app)
        let bought = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "cara", "signed_transaction": try server.app.signedTransaction(coins)])
        #expect(bought.status == 200)
        let spent = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/cara/consumptions", key: key,
            json: ["currency": "coins", "amount": 70, "idempotency_key": "k1"])
        #expect(spent.status == 200)

        let request = try server.app.notificationV2("CONSUMPTION_REQUEST", transaction: coins)
        let delivered = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: request)
        #expect(delivered.status == 200)
        _ = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: request) // Apple's redelivery

        let outcomes = try await server.services.consumption.answerPending()
        #expect(Array(outcomes.values) == ["sent"], "one request, answered once: \(outcomes)")
        let told = server.serverAPI.consumptionAnswers(of: server.app)
        try #require(told.count == 1)
        #expect(told[0].transactionID == "cr-1")
        #expect(
            told[0].body == [
                "customerConsented": "1", "consumptionPercentage": "70000", "deliveryStatus": "DELIVERED",
                "refundPreference": "DECLINE", "sampleContentProvided": "1",
            ])
        #expect(try await server.services.consumption.answerPending().isEmpty, "an answered request is not answered again")

        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/cara/events", key: key)
        #expect(trail.text.contains("ConsumptionInformationSent") && trail.text.contains("70000"), "\(trail.text)")
    }

    @Test func withoutConsentNothingIsSentAndAnUnownedPurchaseIsUndelivered() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let unowned = SimulatedTransaction(
            transactionID: "cr-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -600))
        server.serverAPI.add([unowned], to: server.app)
        let request = try server.app.notificationV2("CONSUMPTION_REQUEST", transaction: unowned)

        try await configure(server, policy: ["customer_consented": false])
        _ = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: request)
        #expect(Array(try await server.services.consumption.answerPending().values) == ["not_consented"])
        #expect(server.serverAPI.consumptionAnswers(of: server.app).isEmpty, "nothing reaches Apple without consent")

        try await configure(server, policy: ["customer_consented": true])
        let again = try server.app.notificationV2("CONSUMPTION_REQUEST", transaction: unowned)
        _ = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: again)
        #expect(Array(try await server.services.consumption.answerPending().values) == ["sent"])
        let told = server.serverAPI.consumptionAnswers(of: server.app)
        #expect(
            told.count == 1 && told.first?.body["deliveryStatus"] == "UNDELIVERED_OTHER" && told.first?.body["consumptionPercentage"] == nil
        )

        let invalid = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey,
            json: [
                "environments": ["Production", "Sandbox"],
                "consumption_policy": ["customer_consented": true, "refund_preference": "MAYBE"],
            ])
        #expect(invalid.status == 400 && invalid.errorCode == "invalid_consumption_policy")
    }
}
