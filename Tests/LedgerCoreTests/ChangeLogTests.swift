import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// Changes: what each fact meant for a user, and what time did (expiries) — the material of
/// webhooks and the change feed.
@Suite struct ChangeLogTests {
    /// Every change of `user` in the scenario's facts, with the clock at `until`.
    func changes(_ scenario: Scenario, _ user: String = "alice", until: Date) -> [Change] {
        ChangeLog.derive(bundleID: "com.example.app", userID: user, facts: scenario.facts, until: until)
    }

    func kinds(_ changes: [Change]) -> [String] {
        changes.map { "\($0.kind.rawValue) \($0.subject.entitlement ?? $0.subject.currency ?? $0.subject.originalTransactionID ?? "")" }
    }

    @Test func aSubscriptionIsGrantedRenewedRefundedAndItsAccessRevoked() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        s.refund("t2", original: "t1", at: day(40))
        let all = changes(s, until: day(41))
        #expect(kinds(all) == ["entitlement.granted pro", "entitlement.renewed pro", "purchase.refunded t1", "entitlement.revoked pro"])
        #expect(all[0].subject.to == .date(day(30)) && all[1].subject.from == .date(day(30)) && all[1].subject.to == .date(day(60)))
        #expect(all[3].subject.reason == "refund" && all[3].state.entitlements["pro"]?.active == false)
        #expect(all[0].state.entitlements["pro"]?.active == true, "the state after the change rides with it")
    }

    @Test func accessThatRunsOutIsAnnouncedAtItsEndByTheNextFactOrTheClock() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        #expect(kinds(changes(s, until: day(29))) == ["entitlement.granted pro"], "not yet")
        let swept = changes(s, until: day(31))
        #expect(kinds(swept) == ["entitlement.granted pro", "entitlement.expired pro"])
        #expect(swept[1].occurredAt == day(30) && swept[1].state.entitlements["pro"]?.active == false)
        // A later fact finds the same expiry on its way: the same identity, so one announcement.
        s.buy("c1", "coins.100", at: day(35))
        let later = changes(s, until: day(36))
        #expect(kinds(later) == ["entitlement.granted pro", "entitlement.expired pro", "currency.granted coins"])
        #expect(later[1].identity == swept[1].identity)
    }

    @Test func aGracePeriodHoldsAccessUntilItEnds() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.renewalInfo("t1", billingRetry: true, graceUntil: day(36), intent: 2, at: day(30), as: LedgerEvent.renewalFailed)
        let all = changes(s, until: day(40))
        #expect(
            kinds(all) == [
                "entitlement.granted pro", "subscription.billing_issue t1", "subscription.grace_period t1", "entitlement.expired pro",
            ])
        #expect(all[2].subject.to == .date(day(36)) && all[3].occurredAt == day(36))
    }

    @Test func autoRenewAndAPendingDowngradeAreAnnounced() {
        var s = Scenario()
        s.buy("t1", "pro.yearly", at: day(0), expires: day(365))
        s.renewalInfo("t1", product: "pro.yearly", willRenew: false, at: day(5))
        s.renewalInfo(
            "t1", product: "pro.yearly", next: "pro.monthly", willRenew: true, at: day(6), as: LedgerEvent.renewalPreferenceChanged)
        let all = changes(s, until: day(7))
        #expect(
            kinds(all) == [
                "entitlement.granted pro", "subscription.auto_renew_changed t1", "subscription.auto_renew_changed t1",
                "subscription.product_changed t1",
            ], "unknown counts as renewing: switching it off is news")
        #expect(all[1].subject.to == .flag(false) && all[2].subject.to == .flag(true))
        #expect(all[3].subject.from == .text("pro.yearly") && all[3].subject.to == .text("pro.monthly"))
    }

    @Test func coinsAreCreditedSpentAndReversedWithTheBalanceBeforeAndAfter() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(0), quantity: 2)
        s.record(.consumed(Consumption(userID: "alice", currency: "coins", amount: 150, idempotencyKey: "k1")), at: day(1))
        s.refund("c1", at: day(2))
        let all = changes(s, until: day(3))
        #expect(kinds(all) == ["currency.granted coins", "currency.spent coins", "purchase.refunded c1", "currency.reversed coins"])
        #expect(all.map(\.subject.to) == [.number(200), .number(50), .date(day(2)), .number(-150)], "a debt is shown as such")
    }

    @Test func aTransferIsAnnouncedToBothUsersWithTheAccessThatMoved() {
        var s = Scenario()
        s.buy("t1", "lifetime", at: day(0))
        s.record(.ownershipTransferred(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")), at: day(3))
        let alice = changes(s, "alice", until: day(4)), bob = changes(s, "bob", until: day(4))
        #expect(
            kinds(alice) == [
                "entitlement.granted lifetime", "entitlement.granted pro", "ownership.transferred t1",
                "entitlement.revoked lifetime", "entitlement.revoked pro",
            ])
        #expect(alice.last?.subject.reason == "transferred")
        #expect(kinds(bob) == ["ownership.transferred t1", "entitlement.granted lifetime", "entitlement.granted pro"])
        #expect(bob[0].subject.from == .text("alice") && bob[0].subject.to == .text("bob"))
    }

    @Test func aRefundReversalGivesAccessBack() {
        var s = Scenario()
        s.buy("t1", "lifetime", at: day(0))
        s.refund("t1", at: day(2))
        s.record(.refundReversed(RefundReversal(transactionID: "t1", originalTransactionID: "t1", signedDate: day(3))), at: day(3))
        #expect(
            kinds(changes(s, until: day(4))).suffix(3) == [
                "purchase.refund_reversed t1", "entitlement.granted lifetime", "entitlement.granted pro",
            ])
    }

    // MARK: Properties over random histories with late arrivals

    /// The live projection derives a batch at a time (earlier facts primed, the batch applied, the
    /// clock swept in between); one pass over everything derives the same changes, identities and
    /// all — so nothing is announced twice under two ids, whatever the batches were.
    @Test func deliveringInAnyBatchesDerivesWhatOnePassDerives() {
        for seed in UInt64(1)...150 {
            let facts = LateArrivals(RandomHistory(seed: seed, steps: 50), seed: seed).facts
            let until = (facts.last?.recordedAt ?? day(0)) + 90 * 86_400
            var rng = SplitMix64(state: seed)
            for user in RandomHistory.users {
                let whole = ChangeLog.derive(bundleID: "app", userID: user, facts: facts, until: until)
                var incremental: [Change] = []
                var start = 0
                while start < facts.count {
                    let end = min(facts.count, start + Int.random(in: 1...12, using: &rng))
                    var log = ChangeLog(bundleID: "app", userID: user)
                    for fact in facts[..<start] { log.prime(fact) }
                    // A sweep between batches, as the clock would run one.
                    if Bool.random(using: &rng), start < facts.count { incremental += log.expiries(until: facts[start].recordedAt - 1) }
                    for fact in facts[start..<end] { incremental += log.apply(fact) }
                    start = end
                }
                var last = ChangeLog(bundleID: "app", userID: user)
                for fact in facts { last.prime(fact) }
                incremental += last.expiries(until: until)
                let key = { (c: Change) in "\(c.kind.rawValue)|\(c.identity)" }
                #expect(Set(incremental.map(key)) == Set(whole.map(key)), "seed \(seed) user \(user)")
                #expect(Set(whole.map(key)).count == whole.count, "seed \(seed): two changes of \(user) share an identity")
            }
        }
    }

    /// A receiver that only follows the changes knows what the user has: the last granted/renewed
    /// or expired/revoked of each entitlement says whether it is active now, and the balance
    /// movements add up to each balance.
    @Test func followingTheChangesAloneGivesTheUsersStateAtTheEnd() {
        for seed in UInt64(1)...150 {
            let facts = LateArrivals(RandomHistory(seed: seed, steps: 50), seed: seed).facts
            let until = (facts.last?.recordedAt ?? day(0)) + 400 * 86_400
            let ledger = AppLedger(bundleID: "app", facts: facts)
            for user in RandomHistory.users {
                var active: [String: Bool] = [:]
                var balances: [String: Int64] = [:]
                for change in ChangeLog.derive(bundleID: "app", userID: user, facts: facts, until: until) {
                    switch change.kind {
                    case .entitlementGranted, .entitlementRenewed: active[change.subject.entitlement!] = true
                    case .entitlementExpired, .entitlementRevoked: active[change.subject.entitlement!] = false
                    case .currencyGranted: balances[change.subject.currency!, default: 0] += change.subject.amount!
                    case .currencySpent, .currencyReversed, .currencyExpired:
                        balances[change.subject.currency!, default: 0] -= change.subject.amount!
                    default: break
                    }
                }
                let state = ledger.timeline(of: user).state(at: until)
                #expect(
                    active.filter(\.value).keys.sorted() == state.entitlements.filter(\.value.active).keys.sorted(),
                    "seed \(seed) user \(user)")
                #expect(balances.filter { $0.value != 0 } == state.balances.filter { $0.value != 0 }, "seed \(seed) user \(user)")
            }
        }
    }
}
