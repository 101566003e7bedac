import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// Withdrawn consent (Apple's RESCIND_CONSENT) names the app's purchase on an Apple account; every
/// user of the game holding a purchase made in it shows it, from when Apple said so, and nothing
/// they own changes.
@Suite struct ConsentTests {
    func buy(_ s: inout Scenario, _ id: String, by user: String, in copy: String?, at date: Date) {
        var facts = Scenario.transaction(id, product: "pro.monthly", at: date, expires: date + 30 * 86_400)
        facts.appTransactionID = copy
        s.record(.purchased(facts), at: date)
        s.record(.transactionClaimed(Claim(originalTransactionID: id, userID: user)), at: date)
    }

    func rescind(_ s: inout Scenario, _ copy: String, at date: Date) {
        s.record(
            .consentRescinded(
                ConsentRescission(appTransactionID: copy, environment: .production, rescindedAt: date, notificationUUID: "n-\(copy)")),
            at: date)
    }

    @Test func holdersOfTheAppTransactionShowItFromWhenAppleSaidSoAndKeepWhatTheyOwn() {
        var s = Scenario()
        buy(&s, "t1", by: "alice", in: "app-1", at: day(0))
        buy(&s, "t2", by: "bob", in: "app-2", at: day(0))
        buy(&s, "t3", by: "erin", in: nil, at: day(0))
        rescind(&s, "app-1", at: day(5))
        rescind(&s, "app-1", at: day(6)) // said again later: the first withdrawal counts
        #expect(s.state("alice", at: day(4)).consentRescindedAt == nil, "not before Apple said so")
        #expect(s.state("alice", at: day(7)).consentRescindedAt == day(5))
        #expect(s.state("alice", at: day(7)).entitlements["pro"]?.active == true, "nothing is revoked")
        #expect(s.state("bob", at: day(7)).consentRescindedAt == nil && s.state("erin", at: day(7)).consentRescindedAt == nil)
        // A purchase made later in the same copy, by another account of the game.
        buy(&s, "t4", by: "carol", in: "app-1", at: day(8))
        #expect(s.state("carol", at: day(9)).consentRescindedAt == day(5))
        // Known-time travel: before the rescission was recorded, nobody showed it.
        #expect(s.state("alice", at: day(7), knownAt: day(4)).consentRescindedAt == nil)
        #expect(s.ledger.auditTrail("alice").contains { if case .consentRescinded = $0.event { true } else { false } }, "support sees why")
    }

    @Test func theChangeIsAnnouncedOnceToEachHolder() {
        var s = Scenario()
        buy(&s, "t1", by: "alice", in: "app-1", at: day(0))
        rescind(&s, "app-1", at: day(5))
        rescind(&s, "app-1", at: day(6))
        let alice = ChangeLog.derive(bundleID: "com.example.app", userID: "alice", facts: s.facts, until: day(7)).filter {
            $0.kind == .consentRescinded
        }
        #expect(alice.count == 1 && alice.first?.subject.to == .date(day(5)) && alice.first?.state.consentRescindedAt == day(5))
    }
}
