import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// One test per rule of the subscription lifecycle (issue 3).
@Suite struct SubscriptionLifecycleTests {
    @Test func aSubscriptionIsActiveUntilItExpires() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        let during = s.state(at: day(29.9)).entitlements["pro"]
        #expect(during?.active == true)
        #expect(during?.expiresAt == day(30))
        #expect(during?.originalTransactionID == "t1")
        #expect(during?.ownership == .purchased)
        #expect(s.state(at: day(30)).entitlements["pro"]?.active == false, "now < expires_at, strictly")
        #expect(s.state(at: day(-1)).entitlements["pro"] == nil, "nothing before the purchase")
    }

    @Test func renewalsExtendAccessAndSinceKeepsTheStartOfTheRun() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        let pro = s.state(at: day(45)).entitlements["pro"]
        #expect(pro?.active == true && pro?.expiresAt == day(60))
        #expect(pro?.since == day(0))
    }

    @Test func aGracePeriodKeepsAccessUntilItsEnd() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", billingRetry: true, graceUntil: day(36), at: day(30), as: LedgerEvent.renewalFailed)
        let inGrace = s.state(at: day(33)).entitlements["pro"]
        #expect(inGrace?.active == true)
        #expect(inGrace?.gracePeriodExpiresAt == day(36))
        #expect(inGrace?.billingRetry == true)
        #expect(s.state(at: day(33)).subscriptions.first?.status == .gracePeriod)
        #expect(s.state(at: day(36)).entitlements["pro"]?.active == false)
        #expect(s.state(at: day(37)).subscriptions.first?.status == .billingRetry)
    }

    @Test func billingRetryWithoutGraceIsNotActive() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", billingRetry: true, at: day(30), as: LedgerEvent.renewalFailed)
        let pro = s.state(at: day(31)).entitlements["pro"]
        #expect(pro?.active == false)
        #expect(pro?.billingRetry == true)
    }

    @Test func aRecoveryAfterBillingRetryRestoresAccess() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", billingRetry: true, at: day(30), as: LedgerEvent.renewalFailed)
        s.record(.recovered(Scenario.transaction("t2", original: "t1", product: "pro.monthly", at: day(33), expires: day(63))), at: day(33))
        s.renewalInfo("t1", willRenew: true, billingRetry: false, at: day(33), as: LedgerEvent.autoRenewChanged)
        #expect(s.state(at: day(32)).entitlements["pro"]?.active == false)
        let pro = s.state(at: day(34)).entitlements["pro"]
        #expect(pro?.active == true && pro?.billingRetry == false && pro?.expiresAt == day(63))
    }

    @Test func aRefundEndsAccessFromItsDateButHistoryStays() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        s.refund("t2", original: "t1", at: day(40))
        #expect(s.state(at: day(35)).entitlements["pro"]?.active == true, "as of day 35 it was active")
        #expect(s.state(at: day(41)).entitlements["pro"]?.active == false)
        #expect(s.state(at: day(41)).subscriptions.first?.status == .revoked)
        #expect(s.state(at: day(20)).entitlements["pro"]?.active == true, "the earlier period is untouched")
        #expect(s.state(at: day(20)).entitlements["pro"]?.expiresAt == day(40), "by everything known, the run went on until the refund")
        #expect(s.state(at: day(20), knownAt: day(20)).entitlements["pro"]?.expiresAt == day(30), "what was known on day 20")
    }

    @Test func aLateRenewalSignedBeforeARefundDoesNotRegrant() {
        // DID_RENEW signed on day 30 is delivered after the REFUND signed on day 40.
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.refund("t2", original: "t1", at: day(40))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60), signed: day(30))
        #expect(s.state(at: day(45)).entitlements["pro"]?.active == false)
    }

    @Test func aReversedRefundRestoresAccess() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.refund("t1", at: day(10))
        s.record(.refundReversed(RefundReversal(transactionID: "t1", originalTransactionID: "t1", signedDate: day(12))), at: day(12))
        #expect(s.state(at: day(11)).entitlements["pro"]?.active == false)
        #expect(s.state(at: day(13)).entitlements["pro"]?.active == true)
    }

    @Test func anUpgradeTakesEffectImmediately() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        var old = Scenario.transaction("t1", product: "pro.monthly", at: day(0), expires: day(30), upgraded: true)
        old.signedDate = day(10)
        s.record(.purchased(old), at: day(10))
        s.record(
            .purchased(Scenario.transaction("t2", original: "t1", product: "premium.monthly", at: day(10), expires: day(40))), at: day(10))
        let state = s.state(at: day(11))
        #expect(state.entitlements["premium"]?.active == true)
        #expect(state.entitlements["pro"]?.productID == "premium.monthly")
        #expect(state.entitlements["pro"]?.since == day(0), "no gap in pro across the upgrade")
    }

    @Test func aDowngradeTakesEffectAtTheNextRenewal() {
        var s = Scenario()
        s.buy("t1", "premium.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", product: "premium.monthly", next: "pro.monthly", at: day(10), as: LedgerEvent.renewalPreferenceChanged)
        let before = s.state(at: day(20))
        #expect(before.entitlements["premium"]?.active == true, "still premium until the period ends")
        #expect(before.subscriptions.first?.pendingProductID == "pro.monthly")
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        let after = s.state(at: day(31))
        #expect(after.entitlements["premium"]?.active == false)
        #expect(after.entitlements["pro"]?.active == true && after.entitlements["pro"]?.productID == "pro.monthly")
    }

    @Test func autoRenewOffIsReportedAndAccessRunsToTheEnd() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", willRenew: false, at: day(5))
        #expect(s.state(at: day(6)).entitlements["pro"]?.willRenew == false)
        #expect(s.state(at: day(6)).entitlements["pro"]?.active == true)
        s.renewalInfo("t1", willRenew: false, intent: 1, at: day(30), as: LedgerEvent.expired)
        let ended = s.state(at: day(31))
        #expect(ended.subscriptions.first?.status == .expired)
        #expect(ended.subscriptions.first?.expirationIntent == 1)
    }

    @Test func monthlyAndYearlyUnlockTheSameEntitlementAndTheLongerWins() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.buy("t9", "pro.yearly", at: day(5), expires: day(365))
        #expect(s.state(at: day(10)).entitlements["pro"]?.productID == "pro.yearly")
        #expect(s.state(at: day(10)).entitlements["pro"]?.expiresAt == day(365))
    }

    @Test func nonRenewingSubscriptionsLastTheirDurationAndStack() {
        var s = Scenario()
        s.buy("n1", "season.pass", at: day(0))
        s.buy("n2", "season.pass", at: day(10)) // bought while n1 runs: starts on day 30
        #expect(s.state(at: day(29)).entitlements["season"]?.expiresAt == day(60))
        #expect(s.state(at: day(59)).entitlements["season"]?.active == true)
        #expect(s.state(at: day(60)).entitlements["season"]?.active == false)
        #expect(s.state(at: day(5)).entitlements["season"]?.expiresAt == day(30), "as of day 5 only n1 was known")
    }

    @Test func nonConsumablesAndFreeSubscriptionsLastUntilRevoked() {
        var s = Scenario()
        s.buy("l1", "lifetime", at: day(0))
        s.buy("f1", "free.tier", at: day(0))
        let later = s.state(at: day(5000))
        #expect(later.entitlements["lifetime"]?.active == true && later.entitlements["lifetime"]?.expiresAt == nil)
        #expect(later.entitlements["basic"]?.active == true)
        s.refund("l1", at: day(100))
        #expect(s.state(at: day(101)).entitlements["lifetime"]?.active == false)
        #expect(s.state(at: day(99)).entitlements["lifetime"]?.active == true)
    }

    @Test func familySharingIsMarkedAndEndsWithItsRevocation() {
        var s = Scenario()
        s.buy("fam1", "lifetime", at: day(0), ownership: .familyShared)
        #expect(s.state(at: day(1)).entitlements["lifetime"]?.ownership == .familyShared)
        s.refund("fam1", at: day(50), kind: .familyRevoke)
        #expect(s.state(at: day(51)).entitlements["lifetime"]?.active == false)
    }

    @Test func promotionalGrantsRunForTheirTimeOrUntilSupportRevokesThem() {
        var s = Scenario()
        s.record(
            .promotionalGranted(
                PromotionalGrant(
                    grantID: "g1", userID: "alice", entitlement: "pro", startsAt: day(0),
                    expiresAt: day(7), reason: "apology")), at: day(0))
        s.record(
            .promotionalGranted(
                PromotionalGrant(
                    grantID: "g2", userID: "alice", entitlement: "vip", startsAt: day(0),
                    expiresAt: nil, reason: "influencer")), at: day(0))
        #expect(s.state(at: day(3)).entitlements["pro"]?.ownership == .promotional)
        #expect(s.state(at: day(8)).entitlements["pro"]?.active == false)
        s.record(.promotionalRevoked(PromotionalRevocation(grantID: "g2", userID: "alice", reason: "ended")), at: day(20))
        #expect(s.state(at: day(19)).entitlements["vip"]?.active == true)
        #expect(s.state(at: day(21)).entitlements["vip"]?.active == false)
    }
}

/// A purchase another took the place of (Google Play's `linkedPurchaseToken`): its access ends
/// when the new one starts and never returns, whatever arrives after.
@Suite struct ReplacedPurchaseTests {
    static func replaced(_ original: String, by newKey: String, at date: Date, signed: Date) -> LedgerEvent {
        .revoked(
            RevocationFacts(
                environment: .production, transactionID: original, originalTransactionID: original, revocationDate: date,
                kind: .replaced, signedDate: signed, store: .googlePlay, replacedBy: newKey))
    }

    @Test func aReplacedPurchaseEndsWhenItsSuccessorStartsAndNothingReopensIt() {
        var s = Scenario()
        s.buy("gp:old", "pro.monthly", at: day(0), expires: day(30))
        s.buy("gp:new", "pro.yearly", at: day(10), expires: day(375))
        s.record(Self.replaced("gp:old", by: "gp:new", at: day(10), signed: day(10)), at: day(10))
        #expect(s.state(at: day(5)).subscriptions.first { $0.originalTransactionID == "gp:old" }?.status == .active, "valid time")
        let old = { (s: Scenario, at: Double) in s.state(at: day(at)).subscriptions.first { $0.originalTransactionID == "gp:old" } }
        #expect(old(s, 12)?.status == .revoked)
        // The old token's own answer, fetched later, restates a renewal and auto-renew: still over.
        s.renew("gp:old..0", original: "gp:old", "pro.monthly", at: day(30), expires: day(60), signed: day(20))
        s.record(
            .refundReversed(RefundReversal(transactionID: "gp:old", originalTransactionID: "gp:old", signedDate: day(21))), at: day(21))
        #expect(old(s, 40)?.status == .revoked)
        #expect(s.state(at: day(40)).entitlements["pro"]?.originalTransactionID == "gp:new", "one entitlement, the new purchase's")
    }
}
