import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerAccess
import LedgerCore
import LedgerPostgres
import LedgerReconciliation
import LedgerServer
import LedgerTestSupport
import Testing

/// Google Play's real-time developer notifications, pushed as Pub/Sub pushes them by the
/// simulator's pusher: authenticated by their OIDC token, deduplicated by message id, answered by
/// asking Google, and attributed to the purchase's owner or the user its account id stands for.
@Suite(.takingTurns) struct GooglePlayNotificationTests {
    static let bundle = TestServer.bundleID
    static let package = TestServer.packageName
    static let pushEmail = "pubsub@example.iam.gserviceaccount.com"

    static func audience(_ server: TestServer) -> String { server.baseURL + "/v1/apps/\(bundle)/notifications/google" }

    static func push(
        _ server: TestServer, _ notification: [String: Any], id: String = UUID().uuidString,
        forgery: PubSubPusher.Forgery = .none
    ) async throws -> Int {
        try await server.google.pusher.send(
            try PubSubPusher.pushBody(notification, messageID: id), to: audience(server), audience: audience(server), email: pushEmail,
            forgery: forgery)
    }

    static func state(_ server: TestServer, _ user: String, key: String) async throws -> TestServer.Answer {
        try await server.send("GET", "/v1/apps/\(bundle)/users/\(user)", key: key)
    }

    static func proActive(_ answer: TestServer.Answer) -> Bool {
        ((answer.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true
    }

    @Test func everySubscriptionTypeIsActedOnAndARedeliveryIsAnsweredAtOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        // The account id was linked to the user before the purchase (as an appAccountToken is).
        let account = UUID()
        let link = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/users/nina/app-account-tokens/\(account.uuidString)", key: key)
        #expect(link.status == 200, "\(link.text)")
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro", accountID: account.uuidString)

        let purchased = PubSubPusher.subscriptionNotification(package: Self.package, type: 4, token: token)
        #expect(try await Self.push(server, purchased, id: "m-1") == 200)
        #expect(Self.proActive(try await Self.state(server, "nina", key: key)), "attributed through the account id")
        #expect(try await eventually { server.google.subscription(token)?.acknowledged == true }, "acknowledged from the push alone")
        let calls = server.google.seen().filter { $0.path.contains("subscriptionsv2") }.count
        #expect(try await Self.push(server, purchased, id: "m-1") == 200)
        #expect(server.google.seen().filter { $0.path.contains("subscriptionsv2") }.count == calls, "a redelivery asks Google nothing")

        // Each change Play notifies, and a type Play adds later: the purchase fetched, the state right.
        let steps: [(SimulatedSubscription.Change, Bool)] = [
            (.enterGracePeriod, true), (.hold, false), (.recover, true), (.cancel, true), (.restart, true), (.revoke, false),
        ]
        for (index, (change, active)) in steps.enumerated() {
            let type = try #require(server.google.change(token, change))
            let body = PubSubPusher.subscriptionNotification(package: Self.package, type: type, token: token)
            #expect(try await Self.push(server, body, id: "m-\(index + 2)") == 200)
            #expect(Self.proActive(try await Self.state(server, "nina", key: key)) == active, "after \(change) (type \(type))")
        }
        let future = PubSubPusher.subscriptionNotification(package: Self.package, type: 99, token: token)
        #expect(try await Self.push(server, future, id: "m-future") == 200)
        let test = PubSubPusher.notification(package: Self.package, kind: "testNotification", ["version": "1.0"])
        #expect(try await Self.push(server, test, id: "m-test") == 200)
    }

    @Test func anUpgradeNotifiedBeforeAnyClaimStaysWithTheOwnerOfTheOldPurchase() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let old = server.google.purchaseSubscription(package: Self.package, productID: "pro", now: Date().addingTimeInterval(-60))
        let claimed = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/google/purchases", key: key,
            json: ["user_id": "otto", "product_id": "pro", "purchase_token": old])
        #expect(claimed.status == 200)
        let new = try #require(server.google.upgrade(old, to: "pro_yearly"))
        #expect(try await Self.push(server, PubSubPusher.subscriptionNotification(package: Self.package, type: 4, token: new)) == 200)
        let state = try await Self.state(server, "otto", key: key)
        let subscriptions = state.json["subscriptions"] as? [[String: any Sendable]] ?? []
        let newOne = subscriptions.first { $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: new) }
        let oldOne = subscriptions.first { $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: old) }
        #expect(newOne?["status"] as? String == "active" && newOne?["product_id"] as? String == "pro_yearly", "\(state.text)")
        #expect(oldOne?["status"] as? String == "revoked", "\(state.text)")
        // The old token's own notification, late: nothing reopens it.
        #expect(try await Self.push(server, PubSubPusher.subscriptionNotification(package: Self.package, type: 13, token: old)) == 200)
        let after = try await Self.state(server, "otto", key: key)
        let stillOld = (after.json["subscriptions"] as? [[String: any Sendable]] ?? []).first {
            $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: old)
        }
        #expect(stillOld?["status"] as? String == "revoked" && Self.proActive(after))
    }

    @Test func aForgedPushIsRefusedAndRecordsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        let body = PubSubPusher.subscriptionNotification(package: Self.package, type: 4, token: token)
        let events = try await server.eventCount()
        for forgery: PubSubPusher.Forgery in [.wrongKey, .unknownKeyID, .audience("https://elsewhere.example/push")] {
            #expect(try await Self.push(server, body, forgery: forgery) == 401, "\(forgery)")
        }
        let unsigned = try PubSubPusher.pushBody(body, messageID: "no-token")
        let bare = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/google", body: unsigned)
        #expect(bare.status == 401 && bare.errorCode == "invalid_push_token", "\(bare.text)")
        let otherPackage = try PubSubPusher.pushBody(
            PubSubPusher.subscriptionNotification(package: "com.other.app", type: 4, token: token), messageID: "other")
        #expect(
            try await server.google.pusher.send(
                otherPackage, to: Self.audience(server), audience: Self.audience(server), email: Self.pushEmail) == 422)
        #expect(try await server.eventCount() == events)
        #expect(try await server.pool.query("SELECT count(*) AS n FROM ledger.evidence WHERE kind LIKE 'google_%'")[0]["n"].int() == 0)
    }

    @Test func refundsReachTheBooksByNotificationAndByTheVoidedPurchasesList() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        // A consumable of 4 items, 1 refunded by a notification, 1 more found by the poll.
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 4)
        let claim = ["user_id": "rory", "product_id": "coins_500", "purchase_token": coins]
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/google/purchases", key: key, json: claim).status == 200)
        server.google.refundProduct(coins, quantity: 1)
        let voided = PubSubPusher.notification(
            package: Self.package, kind: "voidedPurchaseNotification",
            ["purchaseToken": coins, "orderId": server.google.product(coins)?.orderID ?? "", "productType": 2, "refundType": 2])
        #expect(try await Self.push(server, voided) == 200)
        // A subscription refunded while no push arrived: only the list tells.
        let sub = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        let subClaim = ["user_id": "rory", "product_id": "pro", "purchase_token": sub]
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/google/purchases", key: key, json: subClaim).status == 200)
        server.google.refundProduct(coins, quantity: 1)
        server.google.voidSubscription(sub)
        server.google.change(sub, .revoke)
        // Three voided rows: the notified one (Google's answer now shows both product refunds, so
        // re-reading it records the second share), the second product refund (nothing left to
        // record), the subscription's. Read again: nothing new.
        let recorded = try await server.services.googleRefunds.pass()
        #expect(recorded[Self.bundle] == 2, "\(recorded)")
        #expect(try await server.services.googleRefunds.pass()[Self.bundle] == 0, "from the checkpoint on, overlap included")

        let export = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Production&format=csv", key: server.adminKey)
        let refunds = export.text.split(separator: "\r\n").filter { $0.contains(",refund,") }
        #expect(refunds.count == 3, "\(export.text)")
        #expect(refunds.allSatisfy { $0.contains(",google_play,") }, "\(export.text)")
        let state = try await Self.state(server, "rory", key: key)
        #expect(!Self.proActive(state), "\(state.text)")
    }

    @Test func aRefundReviewIsAnsweredFromTheLedgersFactsWhenTheAppsCustomersConsented() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 2)
        let claim = ["user_id": "remy", "product_id": "coins_500", "purchase_token": coins]
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/google/purchases", key: key, json: claim).status == 200)
        let spend = ["amount": 250, "currency": "coins", "idempotency_key": "spend-1"] as [String: Any]
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/users/remy/consumptions", key: key, json: spend).status == 200)
        let order = try #require(server.google.product(coins)?.orderID)
        func review(_ id: String) -> [String: Any] {
            PubSubPusher.notification(
                package: Self.package, kind: "pendingRefundReviewNotification",
                ["version": "1.0", "pendingRefundToken": "refund-\(id)", "orderId": order, "refundReason": 7])
        }
        // Without the customers' consent declared, the review is only kept.
        #expect(try await Self.push(server, review("a")) == 200)
        #expect(server.google.reviews().isEmpty)
        let body: [String: Any] = [
            "environments": ["Production", "Sandbox"],
            "google_play": [
                "package_name": Self.package, "pubsub": ["audience": Self.audience(server), "service_account_email": Self.pushEmail],
            ] as [String: Any],
            "consumption_policy": ["customer_consented": true, "refund_preference": "DECLINE", "sample_content_provided": true],
        ]
        #expect(try await server.send("PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: body).status == 200)
        #expect(try await Self.push(server, review("b")) == 200)
        let answered = try #require(server.google.reviews().first)
        #expect(answered.orderID == order)
        #expect(answered.body["pendingRefundToken"] == "refund-b" && answered.body["refundPreference"] == "DECLINE")
        #expect(answered.body["consumptionPercentageMilliunits"] == "25000", "250 of 1,000 coins used: \(answered.body)")
        #expect(answered.body["sampleContentProvided"] == "1" || answered.body["sampleContentProvided"] == "true", "\(answered.body)")
    }

}
