import Foundation
import LedgerCore
import LedgerDomainTestSupport
import PropertyBased
import Testing

/// The four properties issue 3 asks for, over random histories (seeded: a failure names its seed).
@Suite struct LedgerPropertyTests {
    static let seeds = Gen.uint64(in: 0 ... .max)

    @Test func rebuildingFromZeroInAnyOrderEqualsIncrementalState() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 60)
            var incremental = AppLedger(bundleID: "com.example.app")
            for fact in history.facts { incremental.apply(fact) }
            let rebuilt = AppLedger(bundleID: "com.example.app", facts: history.facts.sorted(by: RecordedFact.businessOrder).reversed())
            for user in RandomHistory.users {
                for instant in history.instants.striding(8) {
                    #expect(incremental.userState(user, at: instant) == rebuilt.userState(user, at: instant), "seed \(seed), \(user) at \(instant)")
                }
                #expect(incremental.auditTrail(user) == rebuilt.auditTrail(user), "seed \(seed)")
            }
            #expect(incremental.financeRows() == rebuilt.financeRows(), "seed \(seed)")
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

    @Test func stateAsOfAnInstantEqualsTheStateOfThePrefixUpToIt() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 60)
            let full = AppLedger(bundleID: "com.example.app", facts: history.facts)
            for instant in history.instants.striding(6) {
                let prefix = AppLedger(bundleID: "com.example.app", facts: history.facts.filter { $0.occurredAt <= instant })
                for user in RandomHistory.users {
                    #expect(full.userState(user, at: instant) == prefix.userState(user, at: instant), "seed \(seed), \(user) at \(instant)")
                }
            }
        }
    }

    @Test func balancesAreCreditsMinusDebitsMinusReversalsAndSpendingNeverOverdraws() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let history = RandomHistory(seed: seed, steps: 80)
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            for user in RandomHistory.users {
                for instant in history.instants.striding(5) {
                    let state = ledger.userState(user, at: instant)
                    let expected = BalanceOracle.balance(of: user, at: instant, facts: history.facts, ledger: ledger)
                    #expect((state.balances["coins"] ?? 0) == expected, "seed \(seed), \(user) at \(instant)")
                    let byKind = Dictionary(grouping: state.balanceEntries, by: \.kind).mapValues { $0.reduce(0) { $0 + $1.amount } }
                    #expect((state.balances["coins"] ?? 0) == (byKind[.credit] ?? 0) - (byKind[.debit] ?? 0) - (byKind[.reversal] ?? 0))
                }
            }
            // Right after every accepted consumption, the spender's balance is not negative.
            for fact in history.facts {
                guard case .consumed(let c) = fact.event else { continue }
                #expect((ledger.userState(c.userID, at: fact.occurredAt).balances["coins"] ?? 0) >= 0, "seed \(seed)")
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
                    redelivered.sequence = Int64(index + 1)  // the store numbers them as they arrive
                    return redelivered
                }
            let inOrder = AppLedger(bundleID: "com.example.app", facts: history.facts)
            let shuffled = AppLedger(bundleID: "com.example.app", facts: delivered)
            for user in RandomHistory.users {
                for instant in history.instants.striding(8) {
                    #expect(inOrder.userState(user, at: instant) == shuffled.userState(user, at: instant), "seed \(seed), \(user) at \(instant)")
                }
            }
            #expect(inOrder.financeRows() == shuffled.financeRows(), "seed \(seed)")
        }
    }
}

/// An independent account of a user's coins, straight from the facts: what the reducers must agree with.
enum BalanceOracle {
    static func balance(of user: String, at instant: Date, facts: [RecordedFact], ledger: AppLedger) -> Int64 {
        let known = facts.filter { $0.occurredAt <= instant }
        var catalogue: [(Date, Int64)] = []
        var purchases: [String: TransactionFacts] = [:]
        var revoked: [String: Bool] = [:]
        var debits: Int64 = 0
        for fact in known.sorted(by: RecordedFact.businessOrder) {
            switch fact.event {
            case .productConfigured(let d) where d.productID == "coins.100": catalogue.append((fact.occurredAt, d.grants["coins"] ?? 0))
            case .purchased(let t) where t.productID == "coins.100": purchases[t.transactionID] = t
            case .refunded(let r), .revoked(let r): revoked[r.transactionID] = true
            case .refundReversed(let r): revoked[r.transactionID] = false
            case .consumed(let c) where c.userID == user: debits += c.amount
            default: break
            }
        }
        var total: Int64 = -debits
        for t in purchases.values where ledger.owner(of: t.originalTransactionID, at: instant) == user {
            let perUnit = catalogue.last { $0.0 <= t.purchaseDate }?.1 ?? catalogue.first!.1
            let credit = perUnit * Int64(t.quantity)
            total += credit
            if revoked[t.transactionID] == true { total -= credit }
        }
        return total
    }
}

extension RecordedFact {
    var isFromApple: Bool {
        switch event {
        case .purchased, .restored, .renewed, .recovered, .autoRenewChanged, .renewalPreferenceChanged, .renewalFailed,
             .expired, .refunded, .revoked, .refundReversed, .appleNotificationReceived: true
        default: false
        }
    }
}
