import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Every V2 notification type and subtype Apple documents is kept, and those that change what a
/// user owns act (docs/events.md has the table).
@Suite(.takingTurns) struct NotificationTypesTests {
    static let bundle = TestServer.bundleID
    static let month: TimeInterval = 30 * 86_400

    /// Apple's V2 types with the subtypes each can carry (nil: none).
    static let documented: [(String, String?)] = [
        ("SUBSCRIBED", "INITIAL_BUY"), ("SUBSCRIBED", "RESUBSCRIBE"), ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"),
        ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"), ("DID_CHANGE_RENEWAL_PREF", nil), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"), ("OFFER_REDEEMED", "INITIAL_BUY"), ("OFFER_REDEEMED", "UPGRADE"),
        ("DID_RENEW", nil), ("DID_RENEW", "BILLING_RECOVERY"), ("EXPIRED", "VOLUNTARY"), ("EXPIRED", "BILLING_RETRY"),
        ("EXPIRED", "PRICE_INCREASE"), ("EXPIRED", "PRODUCT_NOT_FOR_SALE"), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"),
        ("DID_FAIL_TO_RENEW", nil),
        ("GRACE_PERIOD_EXPIRED", nil), ("PRICE_INCREASE", "PENDING"), ("PRICE_INCREASE", "ACCEPTED"), ("REFUND", nil),
        ("REFUND_DECLINED", nil), ("REFUND_REVERSED", nil), ("CONSUMPTION_REQUEST", nil), ("RENEWAL_EXTENDED", nil),
        ("RENEWAL_EXTENSION", "SUMMARY"), ("RENEWAL_EXTENSION", "FAILURE"), ("REVOKE", nil), ("TEST", nil),
        ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"), ("ONE_TIME_CHARGE", nil), ("RESCIND_CONSENT", nil),
        ("METADATA_UPDATE", nil), ("MIGRATION", nil), ("PRICE_CHANGE", nil), ("A_TYPE_FROM_NEXT_YEAR", "AND_ITS_SUBTYPE"),
    ]

    func notificationsStored(_ server: TestServer) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM ledger.events WHERE event_type = 'AppleNotificationReceived'")[0]["n"].int()
    }

    @Test func everyDocumentedTypeAndSubtypeIsKept() async throws {
        try await HeavyTests.oneAtATime {
            let server = try await TestServer.start()
            defer { Task { await server.stop() } }
            let start = Date(timeIntervalSinceNow: -86_400)
            for (n, (type, subtype)) in Self.documented.enumerated() {
                // Types about no transaction (TEST, summaries, consent, external tokens) carry none.
                let aboutNone = ["TEST", "RENEWAL_EXTENSION", "EXTERNAL_PURCHASE_TOKEN", "RESCIND_CONSENT"].contains(type)
                let transaction =
                    aboutNone
                    ? nil
                    : SimulatedTransaction(
                        transactionID: "nt-\(n)", productID: "pro.monthly", purchaseDate: start,
                        expiresDate: start.addingTimeInterval(Self.month))
                let renewal = transaction.map { SimulatedRenewal(originalTransactionID: $0.originalTransactionID, productID: $0.productID) }
                // Each in the body Apple sends it with (`data`, `summary`, `externalPurchaseToken`, `appData`).
                let body = try server.app.notificationV2(
                    type, subtype: subtype,
                    body: server.app.documentedBody(
                        for: type, subtype: subtype, transaction: transaction, renewal: renewal, appTransactionID: "704-\(n)"))
                let answer = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body)
                #expect(answer.status == 200, "\(type) \(subtype ?? "-"): \(answer.text)")
                let again = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: body)
                #expect(again.status == 200, "\(type) \(subtype ?? "-") delivered again: \(again.text)")
            }
            #expect(try await notificationsStored(server) == Self.documented.count)
        }
    }

    @Test func oneTimeChargesGrantRenewalExtensionsExtendAndDeclinedRefundsChangeNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        let linked = try await server.send("PUT", "/v1/apps/\(Self.bundle)/users/erin/app-account-tokens/\(token)", key: key)
        #expect(linked.status == 200)
        func state() async throws -> [String: any Sendable] {
            (try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin", key: key).json["entitlements"] as? [String: any Sendable])
                ?? [:]
        }

        var ads = SimulatedTransaction(
            transactionID: "otc-1", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        ads.appAccountToken = token
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: try server.app.notificationV2("ONE_TIME_CHARGE", transaction: ads))
        #expect(
            (try await state()["no_ads"] as? [String: any Sendable])?["active"] as? Bool == true, "a one-time charge grants what it bought")

        let begun = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 86_400).rounded(.down))
        var pro = SimulatedTransaction(
            transactionID: "ext-1", productID: "pro.monthly", purchaseDate: begun, expiresDate: begun.addingTimeInterval(Self.month))
        pro.appAccountToken = token
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/notifications/apple",
            body: try server.app.notificationV2("SUBSCRIBED", subtype: "INITIAL_BUY", transaction: pro))
        pro.expiresDate = begun.addingTimeInterval(Self.month + 7 * 86_400)
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/notifications/apple",
            body: try server.app.notificationV2("RENEWAL_EXTENDED", transaction: pro, signedDate: Date(timeIntervalSinceNow: 1)))
        let extended = try await state()["pro"] as? [String: any Sendable]
        #expect(extended?["expires_at"] as? String == RFC3339.string(pro.expiresDate!), "Apple extended the period by 7 days")

        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/notifications/apple",
            body: try server.app.notificationV2("REFUND_DECLINED", transaction: pro, signedDate: Date(timeIntervalSinceNow: 2)))
        #expect((try await state()["pro"] as? [String: any Sendable])?["active"] as? Bool == true, "a declined refund takes nothing away")
    }
}
