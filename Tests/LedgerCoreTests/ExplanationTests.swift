import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// The sentences support reads: one per situation an entitlement can be in.
@Suite struct ExplanationTests {
    func sentence(_ s: Scenario, _ name: String = "pro", at instant: Date, revoked: (at: Date, refund: Bool)? = nil) -> String {
        let state = s.state(at: instant)
        let entitlement = state.entitlements[name]!
        let subscription = state.subscriptions.first { $0.originalTransactionID == entitlement.originalTransactionID }
        return Explanation.sentence(for: entitlement, at: instant, subscription: subscription, revoked: revoked)
    }

    @Test func eachSituationHasItsSentence() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        #expect(sentence(s, at: day(1)) == "active until \(Explanation.day(day(30)))")
        s.renewalInfo("t1", willRenew: true, at: day(2))
        #expect(sentence(s, at: day(3)) == "active until \(Explanation.day(day(30))), renews")
        s.renewalInfo("t1", willRenew: false, at: day(4))
        #expect(sentence(s, at: day(5)).hasSuffix("will not renew (auto-renew is off)"))
        #expect(sentence(s, at: day(31)) == "ended \(Explanation.day(day(30))): expired, auto-renew was off")
        #expect(sentence(s, at: day(31), revoked: (day(10), true)) == "ended \(Explanation.day(day(10))): refunded")
        #expect(sentence(s, at: day(31), revoked: (day(10), false)) == "ended \(Explanation.day(day(10))): family sharing revoked")

        var grace = Scenario()
        grace.buy("g1", "pro.monthly", at: day(0), expires: day(30))
        grace.renewalInfo("g1", billingRetry: true, graceUntil: day(36), intent: 2, at: day(30), as: LedgerEvent.renewalFailed)
        #expect(
            sentence(grace, at: day(32))
                == "in grace period until \(Explanation.day(day(36))), billing problem: Apple is retrying the charge")
        #expect(sentence(grace, at: day(37)) == "ended \(Explanation.day(day(30))): billing problem, Apple is still retrying the charge")

        var lifetime = Scenario()
        lifetime.buy("l1", "lifetime", at: day(0))
        #expect(sentence(lifetime, at: day(1)) == "active, lifetime")
        #expect(
            Explanation.transferred(to: "bob", at: day(3))
                == "owned by another user (bob) since \(Explanation.day(day(3))): transferred on restore")
        #expect(Explanation.day(Date(timeIntervalSince1970: 1_796_256_000)) == "3 Dec 2026")
    }
}
