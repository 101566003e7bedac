import Foundation

/// A user's currencies as lots: every credit is a lot with its own expiry, a spend draws from the
/// lots that expire soonest, a lot past its expiry is emptied at that instant, and what a refund
/// takes back beyond what is left becomes a debt that the next credits pay first. Replayed from
/// the balance entries in time order, so the balance at any instant — and every movement up to
/// it, with the lots it touched — follows from the facts alone.
package struct Wallet: Sendable {
    package struct Lot: Sendable, Equatable {
        /// The purchase, period or grant it came from.
        package var reference: String
        package var currency: String
        package var granted: Int64
        package var remaining: Int64
        package var grantedAt: Date
        package var expiresAt: Date?
    }

    /// One change of a balance, as the history pages it.
    package struct Movement: Sendable, Equatable {
        package enum Kind: String, Sendable { case granted, spent, expired, reversed, restored }
        package var kind: Kind
        package var currency: String
        /// Always positive; `kind` says which way.
        package var amount: Int64
        package var at: Date
        /// The lot (granted, expired, reversed) or the spend's idempotency key (spent, restored).
        package var reference: String
        /// What moved it (nil: an expiry, which time did).
        package var origin: BalanceEntry.Origin?
        package var reason: String?
        /// A spend's reference: the game's id of what it bought.
        package var detail: String?
        /// The lots it drew from or gave back to, with how much; debt as the lot named `debt`.
        package var lots: [Share]
        package var balanceAfter: Int64
    }

    /// A part of a movement: how much of it one lot (or the debt) took or gave.
    package struct Share: Sendable, Equatable {
        package var lot: String
        package var amount: Int64

        package init(lot: String, amount: Int64) {
            self.lot = lot
            self.amount = amount
        }
    }

    /// The name debt goes by in a movement's lots.
    package static let debtLot = "debt"

    package private(set) var lots: [Lot] = []
    package private(set) var debt: [String: Int64] = [:]
    /// What each spend drew, lot by lot, for its reversal.
    private var drawn: [String: [(lot: Int, amount: Int64)]] = [:]
    /// The instant of the last entry applied: nothing expires before what already happened.
    private var lastMoved = Date.distantPast

    package init() {}

    /// Σ remaining − debt, per currency that ever moved.
    package var balances: [String: Int64] {
        var result: [String: Int64] = [:]
        for lot in lots { result[lot.currency, default: 0] += lot.remaining }
        for (currency, owed) in debt { result[currency, default: 0] -= owed }
        return result
    }

    /// The wallet at `instant` and every movement up to it, expiries at their own instants.
    package static func replay(_ entries: [BalanceEntry], until instant: Date) -> (wallet: Wallet, movements: [Movement]) {
        var wallet = Wallet()
        var movements: [Movement] = []
        for entry in entries.sorted(by: Self.order) where entry.at <= instant {
            movements += wallet.expire(upTo: entry.at)
            movements += wallet.apply(entry)
        }
        movements += wallet.expire(upTo: instant)
        return (wallet, movements)
    }

    /// The next instant after `instant` at which a lot with something left expires (what the
    /// change feed's clock waits for).
    package func nextExpiry(after instant: Date) -> Date? {
        lots.filter { $0.remaining > 0 }.compactMap(\.expiresAt).filter { $0 > instant }.min()
    }

    static func order(_ a: BalanceEntry, _ b: BalanceEntry) -> Bool {
        (a.at, a.kind.rawValue, a.reference) < (b.at, b.kind.rawValue, b.reference)
    }

    private func balance(_ currency: String) -> Int64 { balances[currency] ?? 0 }

    /// Empties the lots that expire by `date` (a lot expiring at an instant is no longer there to
    /// spend at it), each at its own instant — or at `date`, for a lot given back after it.
    private mutating func expire(upTo date: Date) -> [Movement] {
        let order = lots.indices.filter { lots[$0].remaining > 0 && lots[$0].expiresAt.map { $0 <= date } == true }
            .sorted { (lots[$0].expiresAt!, $0) < (lots[$1].expiresAt!, $1) }
        return order.map { index in
            let amount = lots[index].remaining
            lots[index].remaining = 0
            let lot = lots[index]
            return Movement(
                kind: .expired, currency: lot.currency, amount: amount, at: max(lot.expiresAt!, lastMoved), reference: lot.reference,
                origin: nil, reason: nil, detail: nil, lots: [Share(lot: lot.reference, amount: amount)],
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

    private func named(_ parts: [(lot: Int?, amount: Int64)]) -> [Share] {
        parts.map { Share(lot: $0.lot.map { lots[$0].reference } ?? Self.debtLot, amount: $0.amount) }
    }

    private mutating func apply(_ entry: BalanceEntry) -> [Movement] {
        lastMoved = entry.at
        let currency = entry.currency
        func movement(_ kind: Movement.Kind, _ amount: Int64, _ lots: [Share]) -> Movement {
            Movement(
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
            var given: [Share] = []
            var parts = drawn[entry.reference] ?? []
            for (position, part) in parts.enumerated() where left > 0 {
                let amount = min(left, part.amount)
                parts[position].amount -= amount
                left -= amount
                guard lots[part.lot].expiresAt.map({ $0 > entry.at }) ?? true else { continue }
                lots[part.lot].remaining += amount
                given.append(Share(lot: lots[part.lot].reference, amount: amount))
            }
            drawn[entry.reference] = parts
            let restored = given.map(\.amount).reduce(0, +)
            return restored > 0 ? [movement(.restored, restored, given)] : []
        case .credit:
            var left = entry.amount
            var parts: [Share] = []
            if let owed = debt[currency], owed > 0 {
                let paid = min(owed, left)
                debt[currency] = owed - paid
                left -= paid
                parts.append(Share(lot: Self.debtLot, amount: paid))
            }
            if left > 0 {
                if let index = lots.firstIndex(where: { $0.reference == entry.reference && $0.currency == currency }) {
                    lots[index].remaining += left // a refund reversed: the lot it took from again
                } else {
                    lots.append(
                        Lot(
                            reference: entry.reference, currency: currency, granted: left, remaining: left, grantedAt: entry.at,
                            expiresAt: entry.expiresAt))
                }
                parts.append(Share(lot: entry.reference, amount: left))
            }
            // A refund reversed after its lot expired gives back what then expires at once.
            return [movement(.granted, entry.amount, parts)] + expire(upTo: entry.at)
        }
    }
}
