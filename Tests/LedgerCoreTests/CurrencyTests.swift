import Foundation
import LedgerCore
import LedgerDomainTestSupport
import PropertyBased
import Testing

/// Currencies as a game's economy uses them: granted by packs, by each paid month of a
/// subscription and by the game server, kept in lots that expire, spent soonest-expiring first.
@Suite struct CurrencyTests {
    static let tickets = CurrencyDefinition(code: "tickets", name: "Event tickets", expiresAfter: ISODuration("P7D"))
    static let ticketPack = ProductDefinition(productID: "tickets.10", type: .consumable, grants: ["tickets": 10])
    static let vip = ProductDefinition(productID: "vip.monthly", type: .autoRenewable, entitlements: ["vip"], grants: ["gems": 500])

    static func scenario() -> Scenario {
        var s = Scenario(catalogue: [ticketPack, vip, SampleCatalogue.coins])
        s.record(.currencyConfigured(tickets), at: day(-100))
        s.record(.currencyConfigured(CurrencyDefinition(code: "gems", name: "Gems")), at: day(-100))
        return s
    }

    static func movements(_ s: Scenario, _ currency: String, at instant: Date) -> [Wallet.Movement] {
        Wallet.replay(s.state(at: instant).balanceEntries.filter { $0.currency == currency }, until: instant).movements
    }

    @Test func lotsExpireAtTheirInstantAndSpendsDrawTheSoonestToExpireFirst() {
        var s = Self.scenario()
        s.buy("t1", "tickets.10", at: day(0)) // a lot of 10, until day 7
        s.record(
            .currencyGranted(
                CurrencyGrant(grantID: "g1", userID: "alice", currency: "tickets", amount: 5, reason: "login streak", expiresAt: day(4))),
            at: day(2))
        s.record(
            .consumed(
                Consumption(userID: "alice", currency: "tickets", amount: 3, idempotencyKey: "k1", reason: "raffle", reference: "r-9")),
            at: day(3))
        #expect(s.state(at: day(3)).balances["tickets"] == 12)
        let spent = Self.movements(s, "tickets", at: day(3)).last
        #expect(spent?.kind == .spent && spent?.lots == [Wallet.Share(lot: "grant:g1", amount: 3)], "the grant expires first: drawn first")
        #expect(spent?.reason == "raffle" && spent?.detail == "r-9")
        // Either side of each expiry.
        #expect(s.state(at: day(4) - 1).balances["tickets"] == 12)
        #expect(s.state(at: day(4)).balances["tickets"] == 10, "the grant's last 2 expire at its instant")
        #expect(s.state(at: day(7) - 1).balances["tickets"] == 10)
        #expect(s.state(at: day(7)).balances["tickets"] == 0)
        let history = Self.movements(s, "tickets", at: day(8))
        #expect(history.map(\.kind) == [.granted, .granted, .spent, .expired, .expired])
        #expect(history.filter { $0.kind == .expired }.map(\.at) == [day(4), day(7)])
        #expect(history.map(\.balanceAfter) == [10, 15, 12, 10, 0])
        // Known at: the grant was not known before it was recorded.
        #expect(s.state(at: day(3), knownAt: day(1)).balances["tickets"] == 10)
    }

    @Test func aSubscriptionRenewedTwelveTimesGrantsTwelveTimesAndARefundedMonthTakesItsGrantBack() {
        var s = Self.scenario()
        s.buy("v1", "vip.monthly", at: day(0), expires: day(30))
        for month in 1..<12 {
            s.renew("v1-\(month)", original: "v1", "vip.monthly", at: day(Double(30 * month)), expires: day(Double(30 * (month + 1))))
        }
        #expect(s.state(at: day(360)).balances["gems"] == 6_000)
        #expect(s.state(at: day(359)).balances["gems"] == 6_000)
        #expect(s.state(at: day(329)).balances["gems"] == 5_500, "a period grants when it is paid")
        s.record(.consumed(Consumption(userID: "alice", currency: "gems", amount: 5_800, idempotencyKey: "k")), at: day(341))
        s.refund("v1-11", original: "v1", at: day(345))
        #expect(s.state(at: day(346)).balances["gems"] == -300, "the refunded month's 500, of which 300 were spent: a debt")
        let reversed = Self.movements(s, "gems", at: day(346)).last
        #expect(reversed?.kind == .reversed && reversed?.lots.last == Wallet.Share(lot: Wallet.debtLot, amount: 300))
        s.renew("v1-12", original: "v1", "vip.monthly", at: day(360), expires: day(390))
        #expect(s.state(at: day(361)).balances["gems"] == 200, "the next month pays the debt first")
    }

    @Test func aGooglePlaySubscriptionGrantsForEachPaidPeriodLikeApples() {
        var s = Self.scenario()
        s.record(
            .productConfigured(
                ProductDefinition(
                    productID: "vip.monthly", type: .autoRenewable, entitlements: ["vip"], grants: ["gems": 300], store: .googlePlay)),
            at: day(-100))
        var first = Scenario.transaction("GPA.1", product: "vip.monthly", at: day(0), expires: day(30))
        first.store = .googlePlay
        var renewal = Scenario.transaction("GPA.1..0", original: "GPA.1", product: "vip.monthly", at: day(30), expires: day(60))
        renewal.store = .googlePlay
        s.record(.purchased(first), at: day(0))
        s.record(.transactionClaimed(Claim(originalTransactionID: "GPA.1", userID: "alice")), at: day(0))
        s.record(.renewed(renewal), at: day(30))
        #expect(s.state(at: day(31)).balances["gems"] == 600, "Google's definition of the product, not Apple's 500")
        s.refund("GPA.1..0", original: "GPA.1", at: day(35))
        #expect(s.state(at: day(36)).balances["gems"] == 300)
    }

    @Test func trialAndOfferPeriodsGrantOnlyWhenTheProductSaysSo() {
        var trial = Scenario.transaction("v1", product: "vip.monthly", at: day(0), expires: day(7))
        trial.offerType = 1
        trial.offerDiscountType = "FREE_TRIAL"
        var s = Self.scenario()
        s.record(.purchased(trial), at: day(0))
        s.record(.transactionClaimed(Claim(originalTransactionID: "v1", userID: "alice")), at: day(0))
        #expect(s.state(at: day(1)).balances["gems"] == nil)
        var generous = Self.vip
        generous.grantsOnOffers = true
        s.record(.productConfigured(generous), at: day(-50))
        #expect(s.state(at: day(1)).balances["gems"] == 500)
    }

    @Test func aReversedSpendGoesBackToItsLotsAndWhatExpiredMeanwhileStaysExpired() {
        var s = Self.scenario()
        s.record(
            .currencyGranted(
                CurrencyGrant(grantID: "g1", userID: "alice", currency: "gems", amount: 10, reason: "event", expiresAt: day(5))),
            at: day(0))
        s.record(.currencyGranted(CurrencyGrant(grantID: "g2", userID: "alice", currency: "gems", amount: 10, reason: "gift")), at: day(0))
        s.record(.consumed(Consumption(userID: "alice", currency: "gems", amount: 15, idempotencyKey: "k1")), at: day(1))
        #expect(s.state(at: day(2)).balances["gems"] == 5)
        s.record(.spendReversed(SpendReversal(userID: "alice", idempotencyKey: "k1", reason: "sword refunded")), at: day(6))
        #expect(s.state(at: day(7)).balances["gems"] == 10, "the 5 from g2 come back; the 10 from g1 expired on day 5")
        let restored = Self.movements(s, "gems", at: day(7)).last
        #expect(restored?.kind == .restored && restored?.lots == [Wallet.Share(lot: "grant:g2", amount: 5)])
        // Reversed the same day it was spent, all of it comes back.
        var early = Self.scenario()
        early.record(
            .currencyGranted(
                CurrencyGrant(grantID: "g1", userID: "alice", currency: "gems", amount: 10, reason: "event", expiresAt: day(5))),
            at: day(0))
        early.record(.consumed(Consumption(userID: "alice", currency: "gems", amount: 4, idempotencyKey: "k1")), at: day(1))
        early.record(.spendReversed(SpendReversal(userID: "alice", idempotencyKey: "k1", reason: "undo")), at: day(2))
        #expect(early.state(at: day(3)).balances["gems"] == 10)
        #expect(early.state(at: day(5)).balances["gems"] == 0, "and expires with its lot")
    }

    /// Over random histories (the sample app's gems: a subscription that grants each month, the
    /// game server's grants expiring sooner or not, spends decided against the balance, spends
    /// taken back, refunds and their reversals, transfers): the balance is what the movements add
    /// up to and what the lots hold less the debt; a spend never draws a lot while one expiring
    /// sooner had something left; nothing is drawn from a lot past its expiry.
    @Test func movementsAddUpToTheBalanceAndSpendsDrawTheLotsInExpiryOrder() async {
        await propertyCheck(count: 60, input: Gen.uint64(in: 0 ... .max)) { seed in
            let history = RandomHistory(seed: seed, steps: 80)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let transferredAway = Set(
                history.facts.compactMap { fact -> String? in
                    if case .ownershipTransferred(let t) = fact.event { t.fromUserID } else { nil }
                })
            for user in RandomHistory.users {
                for instant in history.instants.striding(6) {
                    let state = ledger.userState(user, at: instant)
                    let (wallet, movements) = Wallet.replay(state.balanceEntries, until: instant)
                    for currency in Set(state.balanceEntries.map(\.currency)) {
                        let own = movements.filter { $0.currency == currency }
                        let net = own.reduce(Int64(0)) { sum, m in
                            sum + ([.granted, .restored].contains(m.kind) ? m.amount : -m.amount)
                        }
                        let lots = wallet.lots.filter { $0.currency == currency }.map(\.remaining).reduce(0, +)
                        #expect(net == state.balances[currency], "seed \(seed), \(user), \(currency)")
                        #expect(lots - (wallet.debt[currency] ?? 0) == state.balances[currency], "seed \(seed)")
                        #expect(own.last.map { $0.balanceAfter == state.balances[currency] } ?? true, "seed \(seed)")
                    }
                    #expect(
                        wallet.lots.allSatisfy { $0.remaining >= 0 && ($0.expiresAt.map { $0 > instant } ?? true || $0.remaining == 0) })
                    Self.checkDrawOrder(state.balanceEntries, movements: movements, seed: seed)
                    // Never negative but by a refund's debt — for a user who never handed a purchase
                    // to another (a transfer takes its lots back from the past, as it takes access).
                    if !transferredAway.contains(user) {
                        #expect(!movements.contains { $0.kind == .spent && $0.lots.contains { $0.lot == Wallet.debtLot } }, "seed \(seed)")
                        for (currency, balance) in state.balances where balance < 0 {
                            #expect(
                                movements.contains { $0.currency == currency && $0.kind == .reversed },
                                "seed \(seed), \(user): \(currency) \(balance) with no refund")
                        }
                    }
                }
            }
        }
    }

    /// Replays the entries movement by movement: each spend's lots, in the order drawn, are the
    /// open lots soonest to expire.
    static func checkDrawOrder(_ entries: [BalanceEntry], movements: [Wallet.Movement], seed: UInt64) {
        let expiries = Dictionary(
            entries.filter { $0.kind == .credit && $0.origin != .spendReversed }.map { ($0.reference, $0.expiresAt) },
            uniquingKeysWith: { first, _ in first })
        for spend in movements where spend.kind == .spent {
            let drawn = spend.lots.filter { $0.lot != Wallet.debtLot }.map { expiries[$0.lot] ?? nil }
            let order = drawn.map { $0 ?? .distantFuture }
            #expect(order == order.sorted(), "seed \(seed): \(spend.reference) drew \(spend.lots)")
            #expect(order.allSatisfy { $0 > spend.at }, "seed \(seed): \(spend.reference) drew an expired lot")
        }
    }
}

/// The currency ledger finance closes: per currency and day, opening, issued, spent, expired,
/// reversed, closing — each day's closing the next day's opening, the last closing what the users
/// hold, every figure from the users' movements.
@Suite struct CurrencyLedgerTests {
    static func timelines(_ ledger: AppLedger) -> [UserTimeline] { ledger.users.map { ledger.timeline(of: $0) } }

    /// Midnight UTC, n days after the one the sample calendar starts in (books are kept by UTC day).
    static func midnight(_ n: Double) -> Date { CurrencyLedger.day(of: day(0)) + n * 86_400 }

    @Test func aMonthOfGemsClosesDayByDayToWhatTheUsersHold() async {
        await propertyCheck(count: 40, input: Gen.uint64(in: 0 ... .max)) { seed in
            let history = RandomHistory(seed: seed, steps: 80)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let from = Self.midnight(10), to = Self.midnight(70)
            let days = CurrencyLedger.days(of: Self.timelines(ledger), from: from, to: to)
            for currency in Set(days.map(\.currency)) {
                let own = days.filter { $0.currency == currency }
                #expect(own.count == 60, "seed \(seed): one row a day")
                for (today, tomorrow) in zip(own, own.dropFirst()) {
                    #expect(today.closing == tomorrow.opening, "seed \(seed), \(currency) \(today.day)")
                }
                func held(at instant: Date) -> Int64 {
                    RandomHistory.users.map { ledger.userState($0, at: instant).balances[currency] ?? 0 }.reduce(0, +)
                }
                #expect(own.first?.opening == held(at: from - 0.001), "seed \(seed), \(currency)")
                #expect(own.last?.closing == held(at: to - 0.001), "seed \(seed), \(currency)")
                #expect(own.allSatisfy { $0.moved == 0 || RandomHistory.users.count > 1 })
            }
            // As known at a close: the books of that instant, whatever was recorded after it.
            let close = history.facts[history.facts.count / 2].recordedAt
            let then = AppLedger(bundleID: "com.example.app", facts: history.facts.filter { $0.recordedAt <= close })
            #expect(
                CurrencyLedger.days(of: Self.timelines(ledger.known(at: close)), from: from, to: to)
                    == CurrencyLedger.days(of: Self.timelines(then), from: from, to: to), "seed \(seed)")
        }
    }

    @Test func aGrantIsFreeWhateverWordsItsReasonUses() {
        var s = CurrencyTests.scenario()
        for (index, reason) in ["purchase", "renewal", "spend_reversed", "refund_reversed", "ledger:moved"].enumerated() {
            s.record(
                .currencyGranted(CurrencyGrant(grantID: "g\(index)", userID: "alice", currency: "gems", amount: 10, reason: reason)),
                at: Self.midnight(0.5))
        }
        let days = CurrencyLedger.days(of: [s.ledger.timeline(of: "alice")], from: Self.midnight(0), to: Self.midnight(1))
        #expect(days.map(\.issuedFree) == [50] && days.map(\.issuedPaid) == [0] && days.map(\.closing) == [50])
        #expect(s.state(at: Self.midnight(1)).balances["gems"] == 50)
    }

    @Test func eachMovementLandsInItsColumn() {
        var s = CurrencyTests.scenario()
        s.buy("v1", "vip.monthly", at: Self.midnight(0.5), expires: Self.midnight(30))
        s.record(
            .currencyGranted(
                CurrencyGrant(grantID: "g", userID: "alice", currency: "gems", amount: 40, reason: "event", expiresAt: Self.midnight(1.5))),
            at: Self.midnight(0.6))
        s.record(.consumed(Consumption(userID: "alice", currency: "gems", amount: 100, idempotencyKey: "k")), at: Self.midnight(0.7))
        s.record(.spendReversed(SpendReversal(userID: "alice", idempotencyKey: "k", reason: "undo")), at: Self.midnight(0.8))
        s.record(.consumed(Consumption(userID: "alice", currency: "gems", amount: 30, idempotencyKey: "k2")), at: Self.midnight(0.9))
        s.refund("v1", at: Self.midnight(2.5), kind: .refundProrated, percentage: 50_000)
        let days = CurrencyLedger.days(of: [s.ledger.timeline(of: "alice")], from: Self.midnight(0), to: Self.midnight(3)).filter {
            $0.currency == "gems"
        }
        #expect(days.map(\.issuedPaid) == [500, 0, 0] && days.map(\.issuedFree) == [40, 0, 0])
        #expect(days.map(\.spent) == [30, 0, 0], "100 spent and taken back, then 30")
        #expect(days.map(\.expired) == [0, 10, 0], "what was left of the grant on day 1.5")
        #expect(days.map(\.reversed) == [0, 0, 250])
        #expect(days.map(\.closing) == [510, 500, 250])
    }
}
