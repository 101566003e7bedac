import AppStoreSimulator
import Crypto
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The app's own purchase (AppTransaction): posted by the app or pulled from Apple on a sync,
/// verified, kept once, shown in the user's state, and — for an app that went from paid to free —
/// granting its early buyers what the app's `app_purchase` rule says, with the reason.
@Suite(.takingTurns) struct AppPurchaseTests {
    static let bundle = TestServer.bundleID

    func post(_ server: TestServer, _ user: String, _ signed: String, key: String) async throws -> TestServer.Answer {
        try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/app-transactions", key: key, json: ["user_id": user, "signed_app_transaction": signed])
    }

    static func entitlement(_ answer: TestServer.Answer, _ name: String) -> [String: any Sendable]? {
        (answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable]
    }

    @Test func earlyBuyersOfAPaidAppHoldWhatTheRuleSaysAndPresentingAgainRecordsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rule = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey,
            json: [
                "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
                "app_purchase": ["entitlements": ["premium"], "originally_before_version": "2.0"],
            ])
        #expect(
            rule.status == 200 && (rule.json["app_purchase"] as? [String: any Sendable])?["originally_before_version"] as? String == "2.0",
            "\(rule.text)")
        let key = try await server.key([.ingest, .read])
        let bought = Date(timeIntervalSince1970: 1_735_689_600) // 1 Jan 2025
        let early = try server.app.signedAppTransaction(
            SimulatedAppTransaction(
                appTransactionID: "705001", originalApplicationVersion: "1.4",
                originalPurchaseDate: bought))
        let first = try await post(server, "early", early, key: key)
        #expect(first.status == 200, "\(first.text)")
        #expect(Self.entitlement(first, "premium")?["active"] as? Bool == true)
        #expect(Self.entitlement(first, "premium")?["ownership"] as? String == "app_purchase")
        #expect(Self.entitlement(first, "premium")?["expires_at"] is NSNull, "a lifetime")
        let purchase = first.json["app_purchase"] as? [String: any Sendable]
        #expect(purchase?["original_application_version"] as? String == "1.4" && purchase?["app_transaction_id"] as? String == "705001")
        #expect(purchase?["original_purchase_date"] as? String == "2025-01-01T00:00:00.000Z")

        // The app fetches its AppTransaction again later: a new signature, the same purchase.
        let count = try await server.eventCount()
        let refetched = try server.app.signedAppTransaction(
            SimulatedAppTransaction(
                appTransactionID: "705001", originalApplicationVersion: "1.4",
                applicationVersion: "3.0", originalPurchaseDate: bought),
            signedDate: Date(timeIntervalSinceNow: 5))
        let again = try await post(server, "early", refetched, key: key)
        #expect(again.status == 200, "\(again.text)")
        #expect(try await server.eventCount() == count, "presenting it again records nothing")

        let late = try server.app.signedAppTransaction(
            SimulatedAppTransaction(
                appTransactionID: "705002", originalApplicationVersion: "2.1",
                originalPurchaseDate: Date()))
        let second = try await post(server, "late", late, key: key)
        #expect(second.status == 200 && Self.entitlement(second, "premium") == nil, "\(second.text)")
        #expect((second.json["app_purchase"] as? [String: any Sendable])?["original_application_version"] as? String == "2.1")

        // Support reads why.
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)/users/early", headers: [("Cookie", reader.cookie)])
        #expect(page.text.contains("bought the app, version 1.4, on 1 Jan 2025"), "\(page.text.prefix(3000))")

        // Another app's AppTransaction, and nonsense, are refused; nothing is written.
        var other = server.app
        other.bundleID = "com.example.other"
        let stranger = try await post(
            server, "early", try other.signedAppTransaction(SimulatedAppTransaction(appTransactionID: "9", originalPurchaseDate: bought)),
            key: key)
        #expect(stranger.status == 422 && stranger.errorCode == "bundle_mismatch", "\(stranger.text)")
        #expect(try await post(server, "early", "not.a.jws", key: key).status == 400)
        #expect(
            try await server.send("POST", "/v1/apps/\(Self.bundle)/app-transactions", key: key, json: ["user_id": "early"]).status == 400)
        #expect(try await server.eventCount() == count + 1, "only the late buyer's app purchase was added")
    }

    @Test func aRuleThatCoversNobodyOrNamesNoEntitlementIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for (rule, reason) in [
            (["entitlements": ["premium"]] as [String: Any], "no condition"),
            (["entitlements": [String](), "originally_before_version": "2.0"], "no entitlement"),
            (["entitlements": ["premium"], "originally_purchased_before": "last june"], "no date"),
            (["entitlements": ["pre\u{0}mium"], "originally_before_version": "2.0"], "a control character"),
        ] {
            let answer = try await server.send("PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: ["app_purchase": rule])
            #expect(answer.status == 400 && answer.errorCode == "invalid_app_purchase", "\(reason): \(answer.text)")
        }
        let dated = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey,
            json: [
                "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
                "app_purchase": ["entitlements": ["premium"], "originally_purchased_before": "2025-06-01"],
            ])
        #expect(
            dated.status == 200
                && (dated.json["app_purchase"] as? [String: any Sendable])?["originally_purchased_before"] as? String
                    == "2025-06-01T00:00:00.000Z",
            "\(dated.text)")
    }

    @Test func aSyncPullsTheAppPurchaseFromApple() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey,
            json: [
                "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
                "app_store_server_api": [
                    "issuer_id": TestServer.issuerID, "key_id": TestServer.keyID, "private_key": TestServer.apiKey.pemRepresentation,
                ],
                "app_purchase": ["entitlements": ["premium"], "originally_purchased_before": "2025-06-01"],
            ])
        let key = try await server.key([.ingest, .read])
        let coins = SimulatedTransaction(
            transactionID: "ap-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        server.serverAPI.add([coins], customer: "customer-ap", to: server.app)
        // A customer with no AppTransaction at Apple (4040019): the sync still succeeds.
        let without = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/dana/sync", key: key, json: ["transaction_id": "ap-1"])
        #expect(without.status == 200 && without.json["app_purchase"] is NSNull, "\(without.text)")
        server.serverAPI.setAppTransaction(
            SimulatedAppTransaction(
                appTransactionID: "705100", originalApplicationVersion: "1.0",
                originalPurchaseDate: Date(timeIntervalSince1970: 1_704_067_200)),
            customerOf: "ap-1", of: server.app)
        let synced = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/dana/sync", key: key, json: ["transaction_id": "ap-1"])
        #expect(synced.status == 200, "\(synced.text)")
        #expect((synced.json["app_purchase"] as? [String: any Sendable])?["app_transaction_id"] as? String == "705100")
        #expect(Self.entitlement(synced, "premium")?["active"] as? Bool == true, "bought before 1 Jun 2025")
    }
}
