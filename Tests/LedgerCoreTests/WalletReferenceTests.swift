import Foundation
import LedgerDomainTestSupport
import PropertyBased
import Testing

@testable import LedgerCore

/// The wallet keeps running totals, an expiry queue and its lots by name so that a replay costs
/// the same for every entry however many lots the wallet gathered; `ReferenceWallet` answers each
/// question by scanning every lot. Over random entries both must give the same movements, lots,
/// debts and balances at every instant.
@Suite struct WalletReferenceTests {
    /// Random entries of two currencies, with what makes a wallet hard: lots expiring before,
    /// at and after the entries around them, several entries at one instant, spends beyond the
    /// balance (debt), refunds of a lot and their reversal after the lot expired, spends taken
    /// back after some of their lots expired, credits that pay a debt first.
    static func entries(seed: UInt64, count: Int) -> [BalanceEntry] {
        var rng = SplitMix64(state: seed)
        var entries: [BalanceEntry] = []
        var lots: [(currency: String, reference: String)] = [], spends: [(currency: String, key: String)] = []
        var clock = day(0)
        for step in 0..<count {
            if Int.random(in: 0..<4, using: &rng) > 0 { clock += Double(Int.random(in: 1...4, using: &rng)) * 21_600 }
            let currency = Bool.random(using: &rng) ? "gems" : "coins"
            let amount = Int64.random(in: 1...40, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3:
                let expiry: Date? =
                    Int.random(in: 0..<3, using: &rng) == 0 ? nil : clock + Double(Int.random(in: 0...12, using: &rng)) * 21_600
                let reference = "lot-\(step)"
                lots.append((currency, reference))
                entries.append(
                    BalanceEntry(
                        kind: .credit, currency: currency, amount: amount, at: clock, reference: reference, expiresAt: expiry,
                        origin: Bool.random(using: &rng) ? .grant : .purchase))
            case 4...6:
                let key = "spend-\(step)"
                spends.append((currency, key))
                entries.append(BalanceEntry(kind: .debit, currency: currency, amount: amount, at: clock, reference: key, origin: .spend))
            case 7:
                guard let lot = lots.randomElement(using: &rng) else { continue }
                entries.append(
                    BalanceEntry(
                        kind: .reversal, currency: lot.currency, amount: amount, at: clock, reference: lot.reference, origin: .refund))
            case 8:
                guard let lot = lots.randomElement(using: &rng) else { continue }
                entries.append(
                    BalanceEntry(
                        kind: .credit, currency: lot.currency, amount: amount, at: clock, reference: lot.reference, origin: .refundReversed)
                )
            default:
                guard let spend = spends.randomElement(using: &rng) else { continue }
                entries.append(
                    BalanceEntry(
                        kind: .credit, currency: spend.currency, amount: amount, at: clock, reference: spend.key, origin: .spendReversed))
            }
        }
        return entries
    }

    @Test func theWalletAgreesWithTheReferenceMovementForMovement() async {
        await propertyCheck(count: 100, input: Gen.uint64(in: 0 ... .max)) { seed in
            let entries = Self.entries(seed: seed, count: 120)
            guard let first = entries.first?.at, let last = entries.last?.at else { return }
            for instant in stride(from: first - 1, through: last + 4 * 86_400, by: 86_400) {
                let (wallet, movements) = Wallet.replay(entries, until: instant)
                let (reference, expected) = ReferenceWallet.replay(entries, until: instant)
                #expect(movements == expected, "seed \(seed) at \(instant)")
                #expect(wallet.lots == reference.lots, "seed \(seed) at \(instant)")
                #expect(wallet.debt == reference.debt, "seed \(seed) at \(instant)")
                #expect(wallet.balances == reference.balances, "seed \(seed) at \(instant)")
                #expect(Wallet.replayed(entries, until: instant).balances == reference.balances, "seed \(seed): without the records")
                #expect(wallet.nextExpiry(after: instant) == reference.nextExpiry(after: instant), "seed \(seed)")
                for currency in ["gems", "coins"] {
                    let drawOrder = reference.lots.filter { $0.currency == currency && $0.remaining > 0 }
                        .sorted { ($0.expiresAt ?? .distantFuture, $0.grantedAt) < ($1.expiresAt ?? .distantFuture, $1.grantedAt) }
                    #expect(wallet.openLots(of: currency) == drawOrder, "seed \(seed): the open lots in draw order")
                }
            }
        }
    }
}
