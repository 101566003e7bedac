import Foundation
import LedgerCore
import LedgerDomainTestSupport
import PropertyBased
import Testing

/// The properties of issues 3 and 11 over random histories (seeded: a failure names its seed),
/// with late and out-of-order arrivals where knowledge time matters.
@Suite struct LedgerPropertyTests {
    static let seeds = Gen.uint64(in: 0 ... .max)

    @Test func rebuildingFromZeroInAnyOrderAnswersEveryValidAndKnowledgeTimeAlike() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let arrivals = LateArrivals(RandomHistory(seed: seed, steps: 60), seed: seed)
            var incremental = AppLedger(bundleID: "com.example.app")
            for fact in arrivals.facts { incremental.apply(fact) }
            let rebuilt = AppLedger(bundleID: "com.example.app", facts: arrivals.facts.sorted(by: RecordedFact.businessOrder).reversed())
            let knowledge = arrivals.recordingInstants.striding(4)
            for user in RandomHistory.users {
                for instant in arrivals.recordingInstants.striding(6) {
                    for known in [nil] + knowledge {
                        #expect(
                            incremental.userState(user, at: instant, knownAt: known)
                                == rebuilt.userState(user, at: instant, knownAt: known),
                            "seed \(seed), \(user) at \(instant) known at \(String(describing: known))")
                    }
                }
                #expect(incremental.auditTrail(user) == rebuilt.auditTrail(user), "seed \(seed)")
            }
            #expect(incremental.financeRows() == rebuilt.financeRows(), "seed \(seed)")
        }
    }

    /// Balances and books agree on every refund, whatever its kind and place in the sequence
    /// (prorated, full after prorated, reversed): what a consumable's refunds took back of its
    /// currency is the share they refunded of its price, and never more than all. (A family-sharing
    /// revocation takes the currency back and moves no money: such purchases are left out.)
    @Test func everyRefundTakesTheSameShareOfCurrencyAsOfMoney() async {
        await propertyCheck(count: 80, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 80)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let last = history.facts.map(\.occurredAt).max()!
            let entries = RandomHistory.users.flatMap { ledger.userState($0, at: last + 86_400).balanceEntries }
            let familyRevoked = Set(
                history.facts.compactMap { fact -> String? in
                    if case .revoked(let r) = fact.event { r.transactionID } else { nil }
                })
            for purchase in ledger.financeRows().filter({ $0.kind == .purchase && $0.productID == SampleCatalogue.coins.productID }) {
                guard let price = purchase.price, price > 0, !familyRevoked.contains(purchase.transactionID) else { continue }
                let own = entries.filter { $0.reference == purchase.transactionID && $0.currency == "coins" }
                guard let credit = own.first(where: { $0.kind == .credit })?.amount else { continue }
                let reversed = own.filter { $0.kind == .reversal }.map(\.amount).reduce(0, +)
                let given = own.filter { $0.kind == .credit }.map(\.amount).reduce(0, +) - credit
                let rows = ledger.financeRows().filter { $0.transactionID == purchase.transactionID && $0.kind != .purchase }
                let refunded = -rows.compactMap(\.price).reduce(0, +)
                // Currency is whole units: each refund's share of it is rounded down, so the two
                // agree to within a unit per refund row.
                let exact = Double(refunded) * Double(credit) / Double(price)
                #expect(abs(Double(reversed - given) - exact) <= Double(rows.count), "seed \(seed), \(purchase.transactionID)")
                #expect(refunded >= 0 && refunded <= price, "seed \(seed): never more than the purchase gave")
            }
        }
    }

    @Test func theStoredTimelineEvaluatedNowEqualsTheComputedState() async {
        // What the projection stores (the timeline from everything known) answers "now" exactly
        // like a computation from the facts, at every instant after the last fact.
        await propertyCheck(count: 40, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 60)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let last = history.facts.map(\.occurredAt).max()!
            for user in RandomHistory.users {
                let stored = try! LedgerEvent.decoder.decode(UserTimeline.self, from: LedgerEvent.encoder.encode(ledger.timeline(of: user)))
                for instant in [last, last + 86_400, last + 400 * 86_400] {
                    #expect(stored.state(at: instant) == ledger.userState(user, at: instant), "seed \(seed), \(user)")
                }
            }
        }
    }

    /// (1) The answer given live at K — the projection's timeline from what had arrived, evaluated
    /// at K — is what `known_at: K` answers afterwards, however much arrived late since; (4) a
    /// knowledge time at or after the last recording is the same as none.
    @Test func liveAnswersAreReproducedByTheirKnowledgeTime() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let arrivals = LateArrivals(RandomHistory(seed: seed, steps: 60), seed: seed)
            let full = AppLedger(bundleID: "com.example.app", facts: arrivals.facts)
            for known in arrivals.recordingInstants.striding(10) {
                let live = AppLedger(bundleID: "com.example.app", facts: arrivals.facts.filter { $0.recordedAt <= known })
                for user in RandomHistory.users {
                    #expect(
                        full.userState(user, at: known, knownAt: known) == live.timeline(of: user).state(at: known),
                        "seed \(seed), \(user) known at \(known)")
                }
            }
            let last = arrivals.recordingInstants.last!
            for user in RandomHistory.users {
                for instant in arrivals.recordingInstants.striding(6) {
                    #expect(full.userState(user, at: instant, knownAt: last) == full.userState(user, at: instant), "seed \(seed), \(user)")
                    #expect(
                        full.userState(user, at: instant, knownAt: last + 86_400) == full.userState(user, at: instant),
                        "seed \(seed), \(user)")
                }
            }
        }
    }

    /// (2) With everything known, the answer at any instant equals an independent reference model:
    /// active entitlements and the coin balance, straight from the facts.
    @Test func validTimeAnswersEqualTheReferenceModel() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let arrivals = LateArrivals(RandomHistory(seed: seed, steps: 80), seed: seed)
            let ledger = AppLedger(bundleID: "com.example.app", facts: arrivals.facts)
            let instants = Array(Set(arrivals.facts.map(\.occurredAt) + arrivals.facts.map { $0.occurredAt + 1_800 })).sorted()
            for user in RandomHistory.users {
                for instant in instants.striding(12) {
                    #expect(
                        ValidTimeOracle.answer(of: ledger.userState(user, at: instant))
                            == ValidTimeOracle.answer(for: user, at: instant, facts: arrivals.facts),
                        "seed \(seed), \(user) at \(instant)")
                }
            }
        }
    }

    @Test func balancesAreCreditsMinusDebitsMinusReversalsAndSpendingNeverOverdrawsWhatWasKnown() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 80)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            for user in RandomHistory.users {
                for instant in history.instants.striding(5) {
                    let state = ledger.userState(user, at: instant)
                    // Coins never expire: their lots add up to the entries.
                    let coins = state.balanceEntries.filter { $0.currency == "coins" }
                    let byKind = Dictionary(grouping: coins, by: \.kind).mapValues { $0.reduce(0) { $0 + $1.amount } }
                    #expect((state.balances["coins"] ?? 0) == (byKind[.credit] ?? 0) - (byKind[.debit] ?? 0) - (byKind[.reversal] ?? 0))
                }
            }
            // Right after every accepted consumption, the spender's balance of what was spent, as
            // known then, is not negative (another currency may hold a refund's debt).
            for fact in history.facts {
                guard case .consumed(let c) = fact.event else { continue }
                #expect(
                    (ledger.userState(c.userID, at: fact.occurredAt, knownAt: fact.recordedAt).balances[c.currency] ?? 0) >= 0,
                    "seed \(seed), \(c.currency)")
            }
        }
    }

    @Test func shufflingTheDeliveryOfApplesNotificationsChangesNothing() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 60)
            var rng = SplitMix64(state: seed ^ 0xA5A5)
            // Apple's facts arrive in a random order; the app's own (claims, consumptions, grants) keep theirs.
            let apple = history.facts.filter(\.isFromApple).shuffled(using: &rng)
            var appleIterator = apple.makeIterator()
            let delivered = history.facts.map { $0.isFromApple ? appleIterator.next()! : $0 }
                .enumerated().map { index, fact in
                    var redelivered = fact
                    redelivered.sequence = Int64(index + 1) // the store numbers them as they arrive
                    return redelivered
                }
            let inOrder = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let shuffled = AppLedger(bundleID: "com.example.app", facts: delivered)
            for user in RandomHistory.users {
                for instant in history.instants.striding(8) {
                    #expect(
                        inOrder.userState(user, at: instant) == shuffled.userState(user, at: instant), "seed \(seed), \(user) at \(instant)"
                    )
                }
            }
            // The same rows, each from the same fact wherever the store numbered it.
            let unnumbered = { (rows: [FinanceRow]) in
                rows.map { row in
                    var row = row; row.position = nil; return row
                }
            }
            #expect(unnumbered(inOrder.financeRows()) == unnumbered(shuffled.financeRows()), "seed \(seed)")
        }
    }
}
