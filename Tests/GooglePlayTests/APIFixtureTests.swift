import Foundation
import LedgerCore
import Testing

@testable import GooglePlay

/// Every androidpublisher answer and error body of the fixtures decodes, and each error maps to
/// the refusal it stands for.
@Suite(.enabled(if: GoogleFixtures.available, "needs ../shared/fixtures/google (absent in a clone elsewhere)"))
struct APIFixtureTests {
    static let subscriptions = GoogleFixtures.names("api/subscriptionsv2")
    static let products = GoogleFixtures.names("api/products")
    static let voided = GoogleFixtures.names("api/voidedpurchases")
    static let errors = GoogleFixtures.names("api/errors")

    @Test func theFixturesAreThere() {
        #expect(Self.subscriptions.count >= 20 && Self.products.count >= 7 && Self.voided.count >= 4 && Self.errors.count >= 10)
    }

    @Test(arguments: subscriptions)
    func aSubscriptionPurchaseDecodes(_ name: String) throws {
        let purchase = try GoogleEvidence<SubscriptionPurchaseV2>.decode(
            try GoogleFixtures.data("api/subscriptionsv2", name), as: name
        ).model
        let state = try #require(purchase.subscriptionState)
        #expect(SubscriptionPurchaseV2.SubscriptionState.known.contains(state), "\(state.rawValue)")
        let items = try #require(purchase.lineItems)
        #expect(!items.isEmpty)
        for item in items {
            #expect(!item.productId.isEmpty && item.expiryTime != nil)
            #expect((item.autoRenewingPlan != nil) != (item.prepaidPlan != nil), "one plan per item")
            if let price = item.autoRenewingPlan?.recurringPrice { #expect(price.units >= 0 && price.currencyCode.count == 3) }
        }
        // "15_pending", "16_pending_purchase_canceled"; "…_ack_pending" is about acknowledgement.
        if name.dropFirst(3).hasPrefix("pending") {
            #expect([.pending, .pendingPurchaseCanceled].contains(state) && purchase.startTime == nil)
        } else {
            #expect(purchase.startTime != nil)
        }
        if name.contains("linkedPurchaseToken") { #expect(purchase.linkedPurchaseToken != nil) }
        if name.contains("test_purchase") { #expect(purchase.testPurchase != nil) }
    }

    @Test func moneyKeepsUnitsAndNanosApart() throws {
        let purchase = try GoogleEvidence<SubscriptionPurchaseV2>.decode(
            try GoogleFixtures.data("api/subscriptionsv2", "01_new_purchase_active_ack_pending.json"), as: "01"
        ).model
        #expect(purchase.lineItems?.first?.autoRenewingPlan?.recurringPrice == Money(currencyCode: "USD", units: 9, nanos: 990_000_000))
        #expect(purchase.lineItems?.first?.offerPhase?.freeTrial != nil && purchase.acknowledgementState == .pending)
    }

    @Test(arguments: products)
    func aProductPurchaseDecodes(_ name: String) throws {
        let data = try GoogleFixtures.data("api/products", name)
        if name.hasPrefix("productsv2_") {
            let purchase = try GoogleEvidence<ProductPurchaseV2>.decode(data, as: name).model
            #expect(purchase.productLineItem?.isEmpty == false)
            #expect(["PURCHASED", "PENDING", "CANCELLED"].contains(purchase.purchaseStateContext?.purchaseState))
            #expect((purchase.purchaseStateContext?.purchaseState == "PENDING") == (purchase.purchaseCompletionTime == nil))
        } else {
            let purchase = try GoogleEvidence<ProductPurchase>.decode(data, as: name).model
            #expect((0...2).contains(purchase.purchaseState ?? -1) && (purchase.purchaseTimeMillis?.value ?? 0) > 1_700_000_000_000)
            #expect(purchase.isPending == (name.hasSuffix("_pending.json") && !name.contains("ack_pending")))
        }
    }

    @Test(arguments: voided)
    func aVoidedPurchasesPageDecodes(_ name: String) throws {
        let page = try GoogleEvidence<VoidedPurchasesPage>.decode(try GoogleFixtures.data("api/voidedpurchases", name), as: name).model
        #expect(page.voidedPurchases.isEmpty == name.contains("empty"))
        #expect((page.nextPageToken != nil) == (name.contains("next_token") || name.contains("doc_example")))
        for row in page.voidedPurchases {
            #expect(!row.purchaseToken.isEmpty && row.voidedTimeMillis != nil && (0...8).contains(row.voidedReason ?? -1))
        }
    }

    /// The refusal each error fixture must become, by its name.
    static let expected: [String: LedgerError.Code] = [
        "400_expired_too_long": .purchaseTokenExpired, "400_invalid_purchase_state": .invalidPurchaseState,
        "400_invalid_value": .googleAPIRefused, "400_token_does_not_match_package": .packageMismatch,
        "401_permission_denied": .googleAPIUnauthorized, "404_purchase_token_not_found": .googlePurchaseNotFound,
        "410_purchase_token_no_longer_valid": .purchaseTokenExpired, "410_subscription_no_longer_available": .purchaseTokenExpired,
    ]

    @Test(arguments: errors)
    func anErrorBodyDecodesAndMapsToItsRefusal(_ name: String) throws {
        let data = try GoogleFixtures.data("api/errors", name)
        if name.hasPrefix("oauth_") {
            let body = try #require(OAuthErrorBody.decode(data))
            #expect(body.error == "invalid_grant" && body.errorDescription != nil)
            return
        }
        let envelope = try #require(GoogleErrorEnvelope.decode(data))
        let status = try #require(envelope.error.code)
        #expect(name.hasPrefix(String(status)) && envelope.reason != nil && envelope.message != nil)
        let token = "kmgcdhbfpolgnlfcaefdjnag.AO-J1OxEXAMPLEsubscriptionToken"
        let refusal = GoogleRefusals.refusal(status: status, envelope: envelope, token: token)
        if let code = Self.expected.first(where: { name.hasPrefix($0.key) })?.value {
            #expect(refusal.code == code, "\(name) became \(refusal.code)")
        }
        #expect(!refusal.message.contains(token) && refusal.message.contains("kmgcdhbf…") || status == 401)
    }
}
