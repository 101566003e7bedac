import Foundation
import LedgerCore
import Testing

@testable import GooglePlay

/// Google's documented answers turned into the domain's facts: every state to the facts the
/// reducers grant by, every fact naming its store, nothing granted for what is not paid.
@Suite(.enabled(if: GoogleFixtures.available, "needs ../shared/fixtures/google (absent in a clone elsewhere)"))
struct GoogleFactsTests {
    static let token = "kmgcdhbfpolgnlfcaefdjnag.AO-J1OxEXAMPLEnewToken"
    static let at = Date(timeIntervalSince1970: 1_780_000_000)

    static func subscription(_ name: String, known: [TransactionFacts] = []) throws -> [LedgerEvent] {
        let answer = try GoogleEvidence<SubscriptionPurchaseV2>.decode(try GoogleFixtures.data("api/subscriptionsv2", name), as: name)
        return GoogleSubscriptionFacts(token: token, answer: answer.model, answeredAt: at).events(known: known)
    }

    static func product(_ name: String, refunded: Int = 0) throws -> [LedgerEvent] {
        let answer = try GoogleEvidence<ProductPurchaseV2>.decode(try GoogleFixtures.data("api/products", name), as: name)
        return GoogleProductFacts(token: token, answer: answer.model, answeredAt: at).events(refunded: refunded)
    }

    @Test func theKeyIsStableShortAndNotTheToken() {
        let key = GooglePurchaseKey.of(token: Self.token)
        #expect(key == GooglePurchaseKey.of(token: Self.token))
        #expect(key.count == 35 && key.hasPrefix("gp:") && !key.contains("AO-J1"))
        #expect(key != GooglePurchaseKey.of(token: Self.token + "x"))
        #expect(GooglePurchaseKey.isGoogle(key) && !GooglePurchaseKey.isGoogle("2000000000000001"))
        let uuid = UUID()
        #expect(GooglePurchaseKey.accountToken(uuid.uuidString) == uuid)
        #expect(GooglePurchaseKey.accountToken("u_7f3a9c") == GooglePurchaseKey.accountToken("u_7f3a9c"))
        #expect(GooglePurchaseKey.accountToken("u_7f3a9c") != GooglePurchaseKey.accountToken("u_7f3a9d"))
        #expect(GooglePurchaseKey.accountToken("") == nil && GooglePurchaseKey.accountToken(nil) == nil)
    }

    @Test(arguments: GoogleFixtures.names("api/subscriptionsv2"))
    func everyFactOfEverySubscriptionNamesGooglePlayAndItsKey(_ name: String) throws {
        let key = GooglePurchaseKey.of(token: Self.token)
        for event in try Self.subscription(name) {
            switch event {
            case .purchased(let t), .renewed(let t):
                #expect(t.store == .googlePlay && t.originalTransactionID == key && t.signedDate == Self.at, "\(name)")
                #expect(t.expiresDate != nil && t.purchaseDate <= t.expiresDate!, "\(name)")
            case .autoRenewChanged(let r), .renewalFailed(let r), .expired(let r):
                #expect(r.store == .googlePlay && r.originalTransactionID == key, "\(name)")
            case .revoked(let r):
                #expect(r.kind == .replaced && r.store == .googlePlay && r.replacedBy == key && r.originalTransactionID != key, "\(name)")
            default:
                Issue.record("\(name): unexpected \(event.typeName)")
            }
        }
    }

    @Test func aNewPurchaseInItsFreeTrialIsAPurchaseAtNoPriceThatRenews() throws {
        let events = try Self.subscription("01_new_purchase_active_ack_pending.json")
        guard case .purchased(let t)? = events.first, case .autoRenewChanged(let r)? = events.last, events.count == 2 else {
            Issue.record("\(events.map(\.typeName))")
            return
        }
        #expect(t.transactionID == "GPA.3313-5503-3858-32549" && t.productID == "premium_monthly")
        #expect(t.price == 0 && t.offerDiscountType == "FREE_TRIAL" && t.offerIdentifier == "free-trial-7d" && t.currency == "USD")
        #expect(t.purchaseDate == RFC3339.parse("2026-03-01T10:00:00.123Z") && t.expiresDate == RFC3339.parse("2026-03-08T10:00:00.123Z"))
        #expect(t.appAccountToken == GooglePurchaseKey.accountToken("u_7f3a9c") && t.environment == .production)
        #expect(r.willAutoRenew && !r.isInBillingRetry)
    }

    @Test func aRenewalStartsWhereTheRecordedOrderEndedAndIsPricedInMilliunits() throws {
        let first = try #require(try Self.subscription("01_new_purchase_active_ack_pending.json").first?.transactionFacts)
        let events = try Self.subscription("02_renewed_active.json", known: [first])
        guard case .renewed(let t)? = events.first else {
            Issue.record("\(events.map(\.typeName))")
            return
        }
        #expect(t.transactionID == "GPA.3313-5503-3858-32549..1" && t.price == 9_990)
        #expect(t.purchaseDate == first.expiresDate, "the period continues the recorded one")
        // Without the earlier order recorded, the period runs from the subscription's start.
        #expect(
            try Self.subscription("02_renewed_active.json").first?.transactionFacts?.purchaseDate
                == RFC3339.parse("2026-03-01T10:00:00.123Z"))
    }

    @Test func billingTroublePausesAndEndsAreTheRenewalFactsTheReducersKnow() throws {
        guard case .renewalFailed(let grace)? = try Self.subscription("03_in_grace_period.json").last,
            case .renewalFailed(let hold)? = try Self.subscription("04_on_hold.json").last,
            case .autoRenewChanged(let paused)? = try Self.subscription("06_paused.json").last,
            case .autoRenewChanged(let canceled)? = try Self.subscription("07_canceled_by_user.json").last,
            case .expired(let expired)? = try Self.subscription("09_expired.json").last
        else {
            Issue.record("unexpected facts")
            return
        }
        #expect(grace.isInBillingRetry && grace.gracePeriodExpiresDate == RFC3339.parse("2026-05-15T10:00:00.123Z"))
        #expect(hold.isInBillingRetry && hold.gracePeriodExpiresDate == nil)
        #expect(paused.pausedUntil == RFC3339.parse("2026-06-08T10:00:00.123Z"))
        #expect(!canceled.willAutoRenew && canceled.expirationIntent == 1)
        #expect(!expired.willAutoRenew)
    }

    @Test func anUpgradeEndsThePurchaseItReplacesWhenItStarts() throws {
        let events = try Self.subscription("13_upgrade_new_token_with_linkedPurchaseToken.json")
        let old = GooglePurchaseKey.of(token: "kmgcdhbfpolgnlfcaefdjnag.AO-J1OxEXAMPLEsubscriptionTokenA1b2C3d4E5f6G7h8I9j0")
        let replaced = events.compactMap { event -> RevocationFacts? in
            if case .revoked(let r) = event { r } else { nil }
        }
        #expect(replaced.count == 1)
        #expect(replaced.first?.originalTransactionID == old && replaced.first?.transactionID == old)
        #expect(replaced.first?.revocationDate == RFC3339.parse("2026-04-02T09:30:00.000Z"))
        #expect(LedgerStream.stream(of: .revoked(replaced[0]), bundleID: "b") == LedgerStream.purchase("b", originalTransactionID: old))
    }

    @Test func aPendingPurchaseStatesNothingAndAResubscriptionNamesTheAccountItContinues() throws {
        #expect(try Self.subscription("15_pending.json").isEmpty)
        #expect(try Self.subscription("16_pending_purchase_canceled.json").isEmpty)
        let data = try GoogleFixtures.data("api/subscriptionsv2", "20_resubscribe_out_of_app_ack_pending.json")
        let answer = try GoogleEvidence<SubscriptionPurchaseV2>.decode(data, as: "20")
        let facts = GoogleSubscriptionFacts(token: Self.token, answer: answer.model, answeredAt: Self.at)
        #expect(facts.accountToken == GooglePurchaseKey.accountToken("u_7f3a9c"))
        #expect(
            facts.continues == GooglePurchaseKey.of(token: "kmgcdhbfpolgnlfcaefdjnag.AO-J1OxEXAMPLEsubscriptionTokenA1b2C3d4E5f6G7h8I9j0"))
        #expect(facts.events(known: []).first?.transactionFacts?.appAccountToken == facts.accountToken)
    }

    @Test func aOneTimePurchaseIsRecordedWhenPaidAndAPartialRefundTakesItsShareOnce() throws {
        #expect(try Self.product("productsv2_get_pending.json").isEmpty)
        let paid = try Self.product("productsv2_get_purchased_ack_pending.json")
        guard case .purchased(let t)? = paid.first, paid.count == 1 else {
            Issue.record("\(paid.map(\.typeName))")
            return
        }
        #expect(t.quantity == 5 && t.productID == "coins_500" && t.store == .googlePlay && t.transactionID == "GPA.3371-0042-1187-90511")
        let partly = try Self.product("productsv2_get_partially_refunded.json")
        guard case .refunded(let refund)? = partly.last else {
            Issue.record("\(partly.map(\.typeName))")
            return
        }
        #expect(refund.kind == .refundProrated && refund.percentage == 40_000, "2 of 5 refunded")
        #expect(try Self.product("productsv2_get_partially_refunded.json", refunded: 40_000).count == 1, "taken once")
        #expect(try Self.product("productsv2_get_test_purchase.json").first?.transactionFacts?.environment == .sandbox)
    }
}
