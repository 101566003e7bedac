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
    /// Σ remaining per currency that ever had a lot: the balance after each movement, without a
    /// pass over every lot (a wallet gathers lots with every purchase and grant).
    private var held: [String: Int64] = [:]
    /// Each lot by its currency and name: a credit to a lot that exists (a refund reversed) and a
    /// reversal's own lot are found at once.
    private var named: [LotName: Int] = [:]
    /// The lots of each currency that may still hold something, in the order spends draw them;
    /// the ones spends emptied leave it from the front, others when next drawn past.
    private var open: [String: [Int]] = [:]
    /// The lots with an expiry that may still hold something, soonest last, so the next to expire
    /// is looked at without a pass over the others; one emptied by spending leaves it lazily.
    private var expiring: [Int] = []
    /// What each spend drew, lot by lot, for its reversal.
    private var drawn: [String: [(lot: Int, amount: Int64)]] = [:]
    /// The instant of the last entry applied: nothing expires before what already happened.
    private var lastMoved = Date.distantPast

    private struct LotName: Hashable {
        var currency: String
        var reference: String
    }

    package init() {}

    /// Σ remaining − debt, per currency that ever moved.
    package var balances: [String: Int64] {
        var result = held
        for (currency, owed) in debt { result[currency, default: 0] -= owed }
        return result
    }

    /// The wallet at `instant` and every movement up to it, expiries at their own instants.
    package static func replay(_ entries: [BalanceEntry], until instant: Date) -> (wallet: Wallet, movements: [Movement]) {
        var movements: [Movement]? = []
        let wallet = replay(entries, until: instant, recording: &movements)
        return (wallet, movements ?? [])
    }

    /// The wallet at `instant` alone: what a balance needs, without the movements' records.
    package static func replayed(_ entries: [BalanceEntry], until instant: Date) -> Wallet {
        var none: [Movement]? = nil
        return replay(entries, until: instant, recording: &none)
    }

    private static func replay(_ entries: [BalanceEntry], until instant: Date, recording movements: inout [Movement]?) -> Wallet {
        var wallet = Wallet()
        for entry in entries.sorted(by: Self.order) where entry.at <= instant {
            wallet.expire(upTo: entry.at, recording: &movements)
            wallet.apply(entry, recording: &movements)
        }
        wallet.expire(upTo: instant, recording: &movements)
        return wallet
    }

    /// The lots of `currency` that still hold something, in the order the next spend draws them.
    package func openLots(of currency: String) -> [Lot] {
        (open[currency] ?? []).filter { lots[$0].remaining > 0 }.map { lots[$0] }
    }

    /// The next instant after `instant` at which a lot with something left expires (what the
    /// change feed's clock waits for).
    package func nextExpiry(after instant: Date) -> Date? {
        lots.filter { $0.remaining > 0 }.compactMap(\.expiresAt).filter { $0 > instant }.min()
    }

    static func order(_ a: BalanceEntry, _ b: BalanceEntry) -> Bool {
        (a.at, a.kind.rawValue, a.reference) < (b.at, b.kind.rawValue, b.reference)
    }

    private func balance(_ currency: String) -> Int64 { (held[currency] ?? 0) - (debt[currency] ?? 0) }

    // MARK: Lots

    /// Whether `a` expires before `b`: by instant, then by age in the wallet.
    private func expiresBefore(_ a: Int, _ b: Int) -> Bool { (lots[a].expiresAt!, a) < (lots[b].expiresAt!, b) }

    /// Adds to a lot's remaining, putting a lot that was empty back among the open and expiring.
    private mutating func refill(_ index: Int, by amount: Int64) {
        let wasEmpty = lots[index].remaining == 0
        lots[index].remaining += amount
        held[lots[index].currency, default: 0] += amount
        guard wasEmpty else { return }
        let currency = lots[index].currency
        if !open[currency, default: []].contains(index) {
            let position = open[currency, default: []].firstIndex { drawsBefore(index, $0) } ?? open[currency, default: []].endIndex
            open[currency, default: []].insert(index, at: position)
        }
        if lots[index].expiresAt != nil, !expiring.contains(index) {
            // Soonest last: everything after the insertion point expires before this lot.
            let position = expiring.firstIndex { expiresBefore($0, index) } ?? expiring.endIndex
            expiring.insert(index, at: position)
        }
    }

    private mutating func draw(_ amount: Int64, from index: Int) {
        lots[index].remaining -= amount
        held[lots[index].currency, default: 0] -= amount
    }

    /// Empties the lots that expire by `date` (a lot expiring at an instant is no longer there to
    /// spend at it), each at its own instant — or at `date`, for a lot given back after it.
    private mutating func expire(upTo date: Date, recording movements: inout [Movement]?) {
        while let index = expiring.last, lots[index].expiresAt! <= date {
            expiring.removeLast()
            let amount = lots[index].remaining
            guard amount > 0 else { continue }
            draw(amount, from: index)
            let lot = lots[index]
            movements?.append(
                Movement(
                    kind: .expired, currency: lot.currency, amount: amount, at: max(lot.expiresAt!, lastMoved), reference: lot.reference,
                    origin: nil, reason: nil, detail: nil, lots: [Share(lot: lot.reference, amount: amount)],
                    balanceAfter: balance(lot.currency)))
        }
    }

    /// Whether a spend draws `a` before `b`: soonest-expiring first (lots that never expire
    /// last), then oldest first.
    private func drawsBefore(_ a: Int, _ b: Int) -> Bool {
        (lots[a].expiresAt ?? .distantFuture, lots[a].grantedAt, a) < (lots[b].expiresAt ?? .distantFuture, lots[b].grantedAt, b)
    }

    /// The open lots of `currency` in the order a spend draws them. Expiries are applied up to
    /// each entry before it, so none of them is past its expiry; an emptied lot among them is
    /// passed over by `take`.
    private mutating func drawable(_ currency: String) -> [Int] {
        guard let holding = open[currency] else { return [] }
        let drained = holding.firstIndex { lots[$0].remaining > 0 } ?? holding.endIndex
        guard drained > 0 else { return holding }
        open[currency]?.removeFirst(drained)
        return open[currency] ?? []
    }

    /// Takes `amount` from the lots in `order`; what they do not hold becomes debt.
    private mutating func take(_ amount: Int64, currency: String, from order: [Int]) -> [(lot: Int?, amount: Int64)] {
        var left = amount
        var taken: [(lot: Int?, amount: Int64)] = []
        for index in order {
            guard left > 0 else { break }
            let part = min(left, lots[index].remaining)
            guard part > 0 else { continue }
            draw(part, from: index)
            left -= part
            taken.append((index, part))
        }
        if left > 0 {
            debt[currency, default: 0] += left
            taken.append((nil, left))
        }
        return taken
    }

    private func shares(_ parts: [(lot: Int?, amount: Int64)]) -> [Share] {
        parts.map { Share(lot: $0.lot.map { lots[$0].reference } ?? Self.debtLot, amount: $0.amount) }
    }

    // MARK: Entries

    private mutating func apply(_ entry: BalanceEntry, recording movements: inout [Movement]?) {
        lastMoved = entry.at
        let currency = entry.currency
        func record(_ kind: Movement.Kind, _ amount: Int64, _ lots: @autoclosure () -> [Share]) {
            guard movements != nil else { return }
            movements?.append(
                Movement(
                    kind: kind, currency: currency, amount: amount, at: entry.at, reference: entry.reference, origin: entry.origin,
                    reason: entry.reason, detail: entry.detail, lots: lots(), balanceAfter: balance(currency)))
        }
        let own = named[LotName(currency: currency, reference: entry.reference)]
        switch entry.kind {
        case .debit:
            let parts = take(entry.amount, currency: currency, from: drawable(currency))
            drawn[entry.reference, default: []] += parts.compactMap { part in part.lot.map { ($0, part.amount) } }
            record(.spent, entry.amount, shares(parts))
        case .reversal:
            // From the lot it granted first, then as a spend would, then as debt.
            let order = own.map { own in [own] + drawable(currency).filter { $0 != own } } ?? drawable(currency)
            let parts = take(entry.amount, currency: currency, from: order)
            record(.reversed, entry.amount, shares(parts))
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
                refill(part.lot, by: amount)
                given.append(Share(lot: lots[part.lot].reference, amount: amount))
            }
            drawn[entry.reference] = parts
            let restored = given.map(\.amount).reduce(0, +)
            if restored > 0 { record(.restored, restored, given) }
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
                if let own {
                    refill(own, by: left) // a refund reversed: the lot it took from again
                } else {
                    named[LotName(currency: currency, reference: entry.reference)] = lots.count
                    lots.append(
                        Lot(
                            reference: entry.reference, currency: currency, granted: left, remaining: 0, grantedAt: entry.at,
                            expiresAt: entry.expiresAt))
                    refill(lots.count - 1, by: left)
                }
                parts.append(Share(lot: entry.reference, amount: left))
            }
            record(.granted, entry.amount, parts)
            // A refund reversed after its lot expired gives back what then expires at once.
            expire(upTo: entry.at, recording: &movements)
        }
    }
}
