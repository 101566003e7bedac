import Foundation

@testable import LedgerCore

/// The wallet as it was first written: every question answered by scanning every lot (the
/// balance after each movement, the lots due to expire before each entry, a lot by its name).
/// Plain enough to read at a glance, and so the reference the ledger's `Wallet`, which keeps
/// running totals and an expiry queue instead, must agree with movement for movement.
struct ReferenceWallet {
    var lots: [Wallet.Lot] = []
    var debt: [String: Int64] = [:]
    /// What each spend drew, lot by lot, for its reversal.
    private var drawn: [String: [(lot: Int, amount: Int64)]] = [:]
    /// The instant of the last entry applied: nothing expires before what already happened.
    private var lastMoved = Date.distantPast

    /// Σ remaining − debt, per currency that ever moved.
    var balances: [String: Int64] {
        var result: [String: Int64] = [:]
        for lot in lots { result[lot.currency, default: 0] += lot.remaining }
        for (currency, owed) in debt { result[currency, default: 0] -= owed }
        return result
    }

    /// The wallet at `instant` and every movement up to it, expiries at their own instants.
    static func replay(_ entries: [BalanceEntry], until instant: Date) -> (wallet: ReferenceWallet, movements: [Wallet.Movement]) {
        var wallet = ReferenceWallet()
        var movements: [Wallet.Movement] = []
        for entry in entries.sorted(by: Self.order) where entry.at <= instant {
            movements += wallet.expire(upTo: entry.at)
            movements += wallet.apply(entry)
        }
        movements += wallet.expire(upTo: instant)
        return (wallet, movements)
    }

    /// The next instant after `instant` at which a lot with something left expires (what the
    /// change feed's clock waits for).
    func nextExpiry(after instant: Date) -> Date? {
        lots.filter { $0.remaining > 0 }.compactMap(\.expiresAt).filter { $0 > instant }.min()
    }

    static func order(_ a: BalanceEntry, _ b: BalanceEntry) -> Bool {
        (a.at, a.kind.rawValue, a.reference) < (b.at, b.kind.rawValue, b.reference)
    }

    private func balance(_ currency: String) -> Int64 { balances[currency] ?? 0 }

    /// Empties the lots that expire by `date` (a lot expiring at an instant is no longer there to
    /// spend at it), each at its own instant — or at `date`, for a lot given back after it.
    private mutating func expire(upTo date: Date) -> [Wallet.Movement] {
        let order = lots.indices.filter { lots[$0].remaining > 0 && lots[$0].expiresAt.map { $0 <= date } == true }
            .sorted { (lots[$0].expiresAt!, $0) < (lots[$1].expiresAt!, $1) }
        return order.map { index in
            let amount = lots[index].remaining
            lots[index].remaining = 0
            let lot = lots[index]
            return Wallet.Movement(
                kind: .expired, currency: lot.currency, amount: amount, at: max(lot.expiresAt!, lastMoved), reference: lot.reference,
                origin: nil, reason: nil, detail: nil, lots: [Wallet.Share(lot: lot.reference, amount: amount)],
                balanceAfter: balance(lot.currency))
        }
    }

    /// Lots of `currency` that may be drawn at `date`, soonest-expiring first (lots that never
    /// expire last), then oldest first.
    private func drawable(_ currency: String, at date: Date) -> [Int] {
        lots.indices.filter { lots[$0].currency == currency && lots[$0].remaining > 0 && (lots[$0].expiresAt.map { $0 > date } ?? true) }
            .sorted { a, b in
                (lots[a].expiresAt ?? .distantFuture, lots[a].grantedAt, a) < (lots[b].expiresAt ?? .distantFuture, lots[b].grantedAt, b)
            }
    }

    /// Takes `amount` from the lots in `order`; what they do not hold becomes debt.
    private mutating func take(_ amount: Int64, currency: String, from order: [Int]) -> [(lot: Int?, amount: Int64)] {
        var left = amount
        var taken: [(lot: Int?, amount: Int64)] = []
        for index in order where left > 0 {
            let part = min(left, lots[index].remaining)
            guard part > 0 else { continue }
            lots[index].remaining -= part
            left -= part
            taken.append((index, part))
        }
        if left > 0 {
            debt[currency, default: 0] += left
            taken.append((nil, left))
        }
        return taken
    }

    private func named(_ parts: [(lot: Int?, amount: Int64)]) -> [Wallet.Share] {
        parts.map { Wallet.Share(lot: $0.lot.map { lots[$0].reference } ?? Wallet.debtLot, amount: $0.amount) }
    }

    private mutating func apply(_ entry: BalanceEntry) -> [Wallet.Movement] {
        lastMoved = entry.at
        let currency = entry.currency
        func movement(_ kind: Wallet.Movement.Kind, _ amount: Int64, _ lots: [Wallet.Share]) -> Wallet.Movement {
            Wallet.Movement(
                kind: kind, currency: currency, amount: amount, at: entry.at, reference: entry.reference, origin: entry.origin,
                reason: entry.reason, detail: entry.detail, lots: lots, balanceAfter: balance(currency))
        }
        switch entry.kind {
        case .debit:
            let parts = take(entry.amount, currency: currency, from: drawable(currency, at: entry.at))
            drawn[entry.reference, default: []] += parts.compactMap { part in part.lot.map { ($0, part.amount) } }
            return [movement(.spent, entry.amount, named(parts))]
        case .reversal:
            // From the lot it granted first, then as a spend would, then as debt.
            let own = lots.indices.filter { lots[$0].reference == entry.reference && lots[$0].currency == currency }
            let parts = take(entry.amount, currency: currency, from: own + drawable(currency, at: entry.at).filter { !own.contains($0) })
            return [movement(.reversed, entry.amount, named(parts))]
        case .credit where entry.origin == .spendReversed:
            // Back to the lots the spend drew from, as far as they are still open.
            var left = entry.amount
            var given: [Wallet.Share] = []
            var parts = drawn[entry.reference] ?? []
            for (position, part) in parts.enumerated() where left > 0 {
                let amount = min(left, part.amount)
                parts[position].amount -= amount
                left -= amount
                guard lots[part.lot].expiresAt.map({ $0 > entry.at }) ?? true else { continue }
                lots[part.lot].remaining += amount
                given.append(Wallet.Share(lot: lots[part.lot].reference, amount: amount))
            }
            drawn[entry.reference] = parts
            let restored = given.map(\.amount).reduce(0, +)
            return restored > 0 ? [movement(.restored, restored, given)] : []
        case .credit:
            var left = entry.amount
            var parts: [Wallet.Share] = []
            if let owed = debt[currency], owed > 0 {
                let paid = min(owed, left)
                debt[currency] = owed - paid
                left -= paid
                parts.append(Wallet.Share(lot: Wallet.debtLot, amount: paid))
            }
            if left > 0 {
                if let index = lots.firstIndex(where: { $0.reference == entry.reference && $0.currency == currency }) {
                    lots[index].remaining += left // a refund reversed: the lot it took from again
                } else {
                    lots.append(
                        Wallet.Lot(
                            reference: entry.reference, currency: currency, granted: left, remaining: left, grantedAt: entry.at,
                            expiresAt: entry.expiresAt))
                }
                parts.append(Wallet.Share(lot: entry.reference, amount: left))
            }
            // A refund reversed after its lot expired gives back what then expires at once.
            return [movement(.granted, entry.amount, parts)] + expire(upTo: entry.at)
        }
    }
}
