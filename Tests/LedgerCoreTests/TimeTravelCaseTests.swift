import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// The two axes of time, case by case: `at` (what the user was entitled to then, by everything
/// known now) and `knownAt` (what the ledger believed then). Facts here arrive late on purpose.
@Suite struct TimeTravelCaseTests {
    static func isActive(_ state: UserState, _ entitlement: String) -> Bool { state.entitlements[entitlement]?.active == true }

    /// Bought on day 0, posted by the app on day 40 (signed then, claimed then): owned from day 0.
    @Test func anOldPurchasePostedLateIsOwnedFromItsPurchase() {
        var s = Scenario()
        let bought = Scenario.transaction("t1", product: "lifetime", at: day(0))
        var signedLater = bought
        signedLater.signedDate = day(40)
        s.record(.purchased(signedLater), at: day(40))
        s.record(.transactionClaimed(Claim(originalTransactionID: "t1", userID: "alice")), at: day(40))
        #expect(Self.isActive(s.state(at: day(20)), "lifetime"), "everything known now: owned on day 20")
        #expect(!Self.isActive(s.state(at: day(20), knownAt: day(35)), "lifetime"), "on day 35 the ledger had not heard of it")
        #expect(!Self.isActive(s.state(at: day(35), knownAt: day(35)), "lifetime"), "nor had the live answer of day 35")
        #expect(Self.isActive(s.state(at: day(20), knownAt: day(41)), "lifetime"))
        #expect(s.state(at: day(20)).purchases.map(\.transactionID) == ["t1"])
        #expect(s.state(at: day(-1)).purchases.isEmpty && !Self.isActive(s.state(at: day(-1)), "lifetime"), "not before it was bought")
    }

    /// Alice bought it; Bob restored it on day 10 under the transfer policy.
    @Test func aTransferMovesOwnershipWhenItWasRecorded() {
        var s = Scenario()
        s.buy("t1", "lifetime", by: "alice", at: day(0))
        s.record(.ownershipTransferred(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")), at: day(10))
        #expect(Self.isActive(s.state("alice", at: day(5)), "lifetime") && !Self.isActive(s.state("bob", at: day(5)), "lifetime"))
        #expect(!Self.isActive(s.state("alice", at: day(15)), "lifetime") && Self.isActive(s.state("bob", at: day(15)), "lifetime"))
        #expect(Self.isActive(s.state("alice", at: day(15), knownAt: day(9)), "lifetime"), "before the transfer was recorded, Alice's")
        #expect(s.ledger.owner(of: "t1", at: day(5)) == "alice" && s.ledger.owner(of: "t1") == "bob")
    }

    /// The books close on day 30; a refund dated day 20 reaches the ledger on day 35.
    @Test func aRefundArrivingAfterTheCloseIsAbsentFromTheClosedBooksAndPresentAfter() {
        var late = Scenario()
        late.buy("t1", "lifetime", at: day(0))
        late.record(
            .refunded(
                RevocationFacts(
                    environment: .production, transactionID: "t1", originalTransactionID: "t1",
                    revocationDate: day(20), reason: 0, signedDate: day(20))), at: day(20), recorded: day(35))
        let close = day(30)
        #expect(Self.isActive(late.state(at: day(25), knownAt: close), "lifetime"), "at the close the refund was unknown")
        #expect(!Self.isActive(late.state(at: day(25)), "lifetime"), "known now: refunded on day 20")
        let closed = late.ledger.known(at: close).financeRows()
        #expect(closed.map(\.kind) == [.purchase])
        let now = late.ledger.financeRows()
        #expect(now.map(\.kind) == [.purchase, .refund])
        #expect(now[1].recordedAt == day(35) && now[1].occurredAt == day(20), "the row says it arrived after the close")
        #expect(now[0].recordedAt == day(0))
    }

    /// A renewal of day 30 (to day 60) is delivered on day 45.
    @Test func aRenewalPostedLateExtendsAccessFromItsPurchaseButNotWhatWasAnsweredBefore() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        var renewal = Scenario.transaction("t2", original: "t1", product: "pro.monthly", at: day(30), expires: day(60))
        renewal.signedDate = day(30)
        s.record(.renewed(renewal), at: day(30), recorded: day(45))
        #expect(Self.isActive(s.state(at: day(40)), "pro"), "known now: renewed on day 30")
        #expect(s.state(at: day(40)).entitlements["pro"]?.expiresAt == day(60))
        #expect(!Self.isActive(s.state(at: day(40), knownAt: day(40)), "pro"), "what the ledger answered on day 40")
        #expect(s.state(at: day(40), knownAt: day(40)).entitlements["pro"]?.expiresAt == day(30))
    }

    /// A knowledge time after everything recorded is the same as none; one before anything, nothing.
    @Test func knowledgeTimesAtTheEdges() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        #expect(s.state(at: day(10), knownAt: day(500)) == s.state(at: day(10)))
        #expect(s.state(at: day(10), knownAt: day(-200)).entitlements.isEmpty)
    }
}
