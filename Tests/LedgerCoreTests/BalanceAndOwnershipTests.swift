import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

@Suite struct BalanceTests {
    @Test func aPurchaseCreditsQuantityTimesTheGrantPerUnit() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(0), quantity: 3)
        #expect(s.state(at: day(1)).balances == ["coins": 300])
    }

    @Test func changingTheCatalogueDoesNotChangeYesterdaysBalances() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(0))
        s.record(.productConfigured(ProductDefinition(productID: "coins.100", type: .consumable, grants: ["coins": 150])), at: day(5))
        s.buy("c2", "coins.100", at: day(6))
        #expect(s.state(at: day(7)).balances == ["coins": 250], "100 from before the change, 150 after")
    }

    @Test func aRefundOfSpentCurrencyIsARecordedDebt() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(0))
        s.record(.consumed(Consumption(userID: "alice", currency: "coins", amount: 80, idempotencyKey: "k1")), at: day(1))
        s.refund("c1", at: day(2))
        let state = s.state(at: day(3))
        #expect(state.balances == ["coins": -80])
        #expect(state.balanceEntries.map(\.kind) == [.credit, .debit, .reversal])
    }

    /// A 100-coin pack bought for 4.99, 30 spent, refunded half (Apple's prorated refund, or a
    /// store's partial one), then in full: coins and money leave in the same shares, and never
    /// more than the pack gave; a reversal gives back what its refund took.
    @Test func aProratedRefundTakesItsShareAndRefundsNeverTakeMoreThanThePurchaseGave() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(0))
        s.record(.consumed(Consumption(userID: "alice", currency: "coins", amount: 30, idempotencyKey: "k1")), at: day(1))
        s.refund("c1", at: day(2), kind: .refundProrated, percentage: 50_000)
        #expect(s.state(at: day(3)).balances == ["coins": 20])
        #expect(s.ledger.financeRows().map(\.price) == [4990, -2495])
        s.refund("c1", at: day(4))
        #expect(s.state(at: day(5)).balances == ["coins": -30], "the full refund takes the rest: a debt of what was spent")
        #expect(s.ledger.financeRows().map(\.price) == [4990, -2495, -2495], "4.99 refunded in all, not 7.485")
        s.record(.refundReversed(RefundReversal(transactionID: "c1", originalTransactionID: "c1", signedDate: day(6))), at: day(6))
        #expect(s.state(at: day(7)).balances == ["coins": 20], "the last refund's share comes back")
        #expect(s.ledger.financeRows().map(\.price) == [4990, -2495, -2495, 2495])
    }

    @Test func aConsumptionIsRefusedWhenTheBalanceDoesNotCoverIt() {
        let request = Consumption(userID: "alice", currency: "coins", amount: 50, idempotencyKey: "k")
        #expect(Decide.consumption(request, balance: 49) == .failure(.insufficientBalance(currency: "coins", balance: 49, requested: 50)))
        #expect(Decide.consumption(request, balance: 50) == .success(request))
        var zero = request
        zero.amount = 0
        #expect(Decide.consumption(zero, balance: 100) == .failure(.invalidAmount))
    }
}

@Suite struct OwnershipTests {
    @Test func theRestorePolicyDecidesWhoOwnsATransaction() {
        #expect(
            Decide.claim("t1", by: "bob", currentOwner: nil, policy: .keep) == .claim(Claim(originalTransactionID: "t1", userID: "bob")))
        #expect(Decide.claim("t1", by: "alice", currentOwner: "alice", policy: .transfer) == .alreadyOwned)
        #expect(
            Decide.claim("t1", by: "bob", currentOwner: "alice", policy: .transfer)
                == .transfer(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")))
        #expect(Decide.claim("t1", by: "bob", currentOwner: "alice", policy: .keep) == .refused(owner: "alice"))
        #expect(Decide.claim("t1", by: "bob", currentOwner: "alice", policy: .transferIfNoActive) { true } == .refused(owner: "alice"))
        #expect(
            Decide.claim("t1", by: "bob", currentOwner: "alice", policy: .transferIfNoActive) { false }
                == .transfer(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")))
    }

    /// An erased user holds on to nothing: the purchase goes to whoever presents it, even under
    /// `keep` and while it is active.
    @Test func anErasedOwnersPurchaseGoesToTheNextPresenterUnderAnyPolicy() {
        let erased = ErasedUser.makePseudonym()
        #expect(ErasedUser.isPseudonym(erased) && erased.count == "erased:".count + 32 && erased != ErasedUser.makePseudonym())
        for policy in [RestorePolicy.keep, .transfer, .transferIfNoActive] {
            #expect(
                Decide.claim("t1", by: "bob", currentOwner: erased, policy: policy) { true }
                    == .transfer(Transfer(originalTransactionID: "t1", fromUserID: erased, toUserID: "bob", reason: "owner_erased")),
                "\(policy)")
        }
    }

    @Test func aTransferMovesAccessFromTheTransferOn() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", by: "alice", at: day(0), expires: day(30))
        s.record(.ownershipTransferred(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")), at: day(10))
        #expect(s.state("alice", at: day(5)).entitlements["pro"]?.active == true)
        #expect(s.state("alice", at: day(11)).entitlements["pro"] == nil)
        #expect(s.state("bob", at: day(11)).entitlements["pro"]?.active == true)
        #expect(s.ledger.owner(of: "t1") == "bob")
    }

    @Test func aNotificationBeforeAnyClaimIsKeptAndAttachedWhenClaimed() {
        var s = Scenario()
        // Apple's SUBSCRIBED notification arrives first; nobody owns t1 yet.
        s.record(
            .appleNotificationReceived(
                AppleNotification(
                    version: "2", notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY",
                    notificationUUID: "n-1", originalTransactionID: "t1", signedDate: day(0))), at: day(0))
        s.record(.purchased(Scenario.transaction("t1", product: "pro.monthly", at: day(0), expires: day(30))), at: day(0))
        #expect(s.ledger.owner(of: "t1") == nil)
        #expect(s.state("alice", at: day(1)).entitlements.isEmpty)
        // The app posts the transaction with its user an hour later.
        s.record(.transactionClaimed(Claim(originalTransactionID: "t1", userID: "alice")), at: day(0.04))
        #expect(s.state("alice", at: day(1)).entitlements["pro"]?.active == true)
        let trail = s.ledger.auditTrail("alice").map(\.event.typeName)
        #expect(trail == ["AppleNotificationReceived", "Purchased", "TransactionClaimed"])
    }

    @Test func theAuditTrailShowsEachOwnerTheirPartOfTheStory() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", by: "alice", at: day(0), expires: day(30))
        s.record(.ownershipTransferred(Transfer(originalTransactionID: "t1", fromUserID: "alice", toUserID: "bob")), at: day(10))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        #expect(s.ledger.auditTrail("alice").map(\.event.typeName) == ["Purchased", "TransactionClaimed", "OwnershipTransferred"])
        #expect(s.ledger.auditTrail("bob").map(\.event.typeName) == ["OwnershipTransferred", "Renewed"])
        #expect(s.ledger.auditTrail("alice").allSatisfy { $0.evidence != nil }, "every entry points at its evidence")
    }
}

@Suite struct FinanceViewTests {
    @Test func oneRowPerMoneyMovingFactAndSandboxKeptApart() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0), expires: day(30))
        s.record(.restored(Scenario.transaction("t1", product: "pro.monthly", at: day(0), expires: day(30))), at: day(3))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30), expires: day(60))
        s.refund("t2", original: "t1", at: day(40), kind: .refundProrated, percentage: 50_000)
        s.record(.refundReversed(RefundReversal(transactionID: "t2", originalTransactionID: "t1", signedDate: day(45))), at: day(45))
        s.buy("sb1", "pro.monthly", by: "bob", at: day(1), expires: day(31), environment: .sandbox)

        let rows = s.ledger.financeRows()
        #expect(rows.map(\.kind) == [.purchase, .renewal, .refund, .refundReversed], "the restore is not a sale")
        #expect(rows.map(\.price) == [4990, 4990, -2495, 2495], "a reversed prorated refund returns what it refunded")
        #expect(rows.allSatisfy { $0.userID == "alice" && $0.environment == .production && $0.currency == "EUR" && $0.storefront == "FRA" })
        #expect(s.ledger.financeRows(environment: .sandbox).map(\.transactionID) == ["sb1"])
    }
}

@Suite struct EventCodingTests {
    @Test func everyEventRoundTripsThroughItsStoredForm() throws {
        let transaction = Scenario.transaction("t1", product: "pro.monthly", at: day(0), expires: day(30))
        let renewal = RenewalFacts(
            environment: .sandbox, originalTransactionID: "t1", productID: "p", willAutoRenew: true, signedDate: day(1))
        let revocation = RevocationFacts(
            environment: .production, transactionID: "t1", originalTransactionID: "t1", revocationDate: day(2), signedDate: day(2))
        let events: [LedgerEvent] = [
            .appConfigured(AppSettings(appleAppID: 1234, restorePolicy: .keep)), .productConfigured(Scenario.season),
            .purchased(transaction), .restored(transaction), .renewed(transaction), .recovered(transaction),
            .autoRenewChanged(renewal), .renewalPreferenceChanged(renewal), .renewalFailed(renewal), .expired(renewal),
            .refunded(revocation), .revoked(revocation),
            .refundReversed(RefundReversal(transactionID: "t1", originalTransactionID: "t1", signedDate: day(3))),
            .transactionClaimed(Claim(originalTransactionID: "t1", userID: "u")),
            .ownershipTransferred(Transfer(originalTransactionID: "t1", fromUserID: "u", toUserID: "v")),
            .consumed(Consumption(userID: "u", currency: "coins", amount: 5, idempotencyKey: "k")),
            .promotionalGranted(
                PromotionalGrant(grantID: "g", userID: "u", entitlement: "pro", startsAt: day(0), expiresAt: nil, reason: "r")),
            .promotionalRevoked(PromotionalRevocation(grantID: "g", userID: "u", reason: "r")),
            .appleNotificationReceived(AppleNotification(version: "2", notificationType: "TEST")),
        ]
        #expect(Set(events.map(\.typeName)).count == events.count, "type names are distinct")
        for event in events {
            #expect(try LedgerEvent(typeName: event.typeName, data: event.encodedData()) == event)
        }
        #expect(throws: LedgerEvent.UnknownType.self) { try LedgerEvent(typeName: "Nope", data: Data("{}".utf8)) }
    }

    @Test func durationsParseLikeISO8601() {
        #expect(ISODuration("P30D")?.added(to: day(0)) == day(30))
        #expect(ISODuration("P1W")?.added(to: day(0)) == day(7))
        #expect(ISODuration("PT12H")?.added(to: day(0)) == day(0.5))
        #expect(ISODuration("P1Y2M3DT4H5M6S") != nil)
        for bad in ["", "P", "30D", "P3X", "PT", "P1.5D", "P-1D"] { #expect(ISODuration(bad) == nil, "\(bad)") }
    }
}

/// The hand-written time format agrees with Foundation's, across centuries and leap days.
struct RFC3339Tests {
    @Test func formatsLikeFoundationAndParsesBack() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        for seconds in [0.0, 951_782_400.5, 1_709_164_800.125, 1_790_000_000.875, -86_400.25, 4_102_444_800, 253_402_300_799.5] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(RFC3339.string(date) == date.formatted(style), "\(seconds)")
            #expect(RFC3339.parse(RFC3339.string(date)).map { abs($0.timeIntervalSince(date)) < 0.001 } == true)
        }
        #expect(RFC3339.parse("2026-01-31T23:59:59Z") == Date(timeIntervalSince1970: 1_769_903_999))
        #expect(RFC3339.parse("yesterday") == nil)
    }
}

/// `Decide.merge`: what moves besides purchases when two accounts become one.
@Suite struct AccountMergeDecisionTests {
    @Test func balancesBothWaysAndActiveGrantsMoveAndNothingElse() {
        let grant = PromotionalGrant(
            grantID: "g1", userID: "anon", entitlement: "vip", startsAt: day(0), expiresAt: day(10), reason: "welcome")
        let lapsed = PromotionalGrant(
            grantID: "g2", userID: "anon", entitlement: "old", startsAt: day(0), expiresAt: day(1), reason: "once")
        let revoked = PromotionalGrant(grantID: "g3", userID: "anon", entitlement: "gone", startsAt: day(0), expiresAt: nil, reason: "oops")
        let facts: [LedgerEvent] = [
            .promotionalGranted(grant), .promotionalGranted(lapsed), .promotionalGranted(revoked),
            .promotionalRevoked(PromotionalRevocation(grantID: "g3", userID: "anon", reason: "mistake")),
        ]
        let merge = Decide.merge(
            from: "anon", into: "sam", balances: ["coins": 70, "gems": -5, "stars": 0], userFacts: facts, intoGrantIDs: ["g1"], now: day(2))
        #expect(
            merge.fromEvents == [
                .balanceMoved(BalanceMove(userID: "anon", counterpartUserID: "sam", currency: "coins", amount: -70, reason: "merged")),
                .balanceMoved(BalanceMove(userID: "anon", counterpartUserID: "sam", currency: "gems", amount: 5, reason: "merged")),
                .promotionalRevoked(PromotionalRevocation(grantID: "g1", userID: "anon", reason: "merged")),
            ])
        var moved = grant
        moved.userID = "sam"
        moved.grantID = "g1-merged"
        moved.startsAt = day(2)
        moved.reason = "merged: welcome"
        #expect(
            merge.intoEvents == [
                .balanceMoved(BalanceMove(userID: "sam", counterpartUserID: "anon", currency: "coins", amount: 70, reason: "merged")),
                .balanceMoved(BalanceMove(userID: "sam", counterpartUserID: "anon", currency: "gems", amount: -5, reason: "merged")),
                .promotionalGranted(moved),
            ])
        #expect(Decide.merge(from: "anon", into: "sam", balances: ["coins": 0], userFacts: [], intoGrantIDs: [], now: day(2)).isEmpty)
    }

    /// Moved currency counts where it went, from when it moved.
    @Test func aMovedBalanceCountsFromTheMove() {
        var ledger = AppLedger(bundleID: "com.example.app")
        ledger.apply(
            RecordedFact(
                event: .balanceMoved(
                    BalanceMove(userID: "sam", counterpartUserID: "anon", currency: "coins", amount: 70, reason: "merged")),
                occurredAt: day(5), sequence: 1))
        #expect(ledger.userState("sam", at: day(6)).balances["coins"] == 70)
        #expect(ledger.userState("sam", at: day(4)).balances["coins"] == nil)
    }
}
