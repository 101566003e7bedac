import Foundation

/// What one user owns at one instant, and why: the answer a game server, a content server and a
/// support agent all ask for.
package struct UserState: Sendable, Equatable {
    package var userID: String
    package var asOf: Date
    package var entitlements: [String: Entitlement]
    /// Currency → balance. May be negative: a refund of spent currency is a debt, shown, not hidden.
    package var balances: [String: Int64]
    package var subscriptions: [SubscriptionSummary]
    package var purchases: [PurchaseSummary]
    /// Every credit, debit and reversal behind `balances`.
    package var balanceEntries: [BalanceEntry]
    /// A parent or guardian withdrew consent for the child's use of the app (Apple's
    /// RESCIND_CONSENT). Nothing is revoked by it: what to do is the app's decision.
    package var consentRescindedAt: Date? = nil
    /// The app itself, as the user bought it (the earliest Apple account's purchase presented).
    package var appPurchase: AppPurchaseSummary? = nil
}

package struct Entitlement: Sendable, Equatable {
    package var active: Bool
    package var productID: String
    package var expiresAt: Date?
    package var willRenew: Bool?
    package var gracePeriodExpiresAt: Date?
    package var billingRetry: Bool
    package var ownership: AccessPeriod.Source
    package var originalTransactionID: String?
    /// Start of the unbroken run of access this entitlement is in (or was in, when inactive).
    package var since: Date
}

package struct SubscriptionSummary: Sendable, Equatable {
    package enum Status: String, Sendable { case active, gracePeriod = "grace_period", billingRetry = "billing_retry", expired, revoked }
    package var originalTransactionID: String
    package var productID: String
    package var status: Status
    package var expiresAt: Date?
    package var willRenew: Bool?
    /// The product the next renewal switches to (a pending downgrade or crossgrade).
    package var pendingProductID: String?
    package var expirationIntent: Int?
    package var billingPlanType: String? = nil
    package var commitmentExpiresAt: Date? = nil
    package var offerType: Int? = nil
    package var offerIdentifier: String? = nil
    package var store: Store = .appStore
}

package struct PurchaseSummary: Codable, Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    package var type: ProductType?
    package var purchaseDate: Date
    package var quantity: Int
    package var revokedAt: Date?
    /// The store, when not the App Store (see `Store`).
    package var store: Store? = nil
}

package struct BalanceEntry: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable { case credit, debit, reversal }
    package var kind: Kind
    package var currency: String
    /// Always positive; `kind` says which way it moves the balance.
    package var amount: Int64
    package var at: Date
    /// The purchase or grant (credit, reversal: the lot's name) or the idempotency key (debit, and
    /// the credit of a spend reversed).
    package var reference: String
    /// When a credit's lot expires (nil: never).
    package var expiresAt: Date? = nil
    /// What moved it: the lots, finance's columns and the changes go by this, never by `reason`,
    /// which is whoever moved it's own words (a grant's, a spend's, a reversal's).
    package var origin: Origin? = nil
    package var reason: String? = nil
    /// A spend's reference: the game's id of what it bought.
    package var detail: String? = nil

    package enum Origin: String, Codable, Sendable {
        /// A purchase, or a subscription's first period; a renewal's period.
        case purchase, renewal
        /// The game server's grant.
        case grant
        case spend
        /// A store's refund taking its share back, and the store reversing it.
        case refund, refundReversed = "refund_reversed"
        /// A spend the game took back: its amount returns to the lots it drew from.
        case spendReversed = "spend_reversed"
        /// A balance moved between two accounts merged.
        case moved
    }
}

extension UserState {
    /// Balance = what is left in the lots − debt, with every lot past its expiry emptied (the
    /// invariant the property tests check; `Wallet` keeps the lots).
    static func balances(of entries: [BalanceEntry], at instant: Date) -> [String: Int64] {
        Wallet.replayed(entries, until: instant).balances
    }

    /// Collapses periods into one entitlement per name: an active source wins, the one lasting
    /// longest; with none active, the one that ended last (so support sees why). While active,
    /// `expiresAt` follows the unbroken run forward through periods already paid for (a stacked
    /// non-renewing pass that starts when the current one ends).
    static func entitlements(from periods: [AccessPeriod], at instant: Date) -> [String: Entitlement] {
        var byName: [String: [AccessPeriod]] = [:]
        for period in periods {
            for name in period.entitlements { byName[name, default: []].append(period) }
        }
        return byName.compactMapValues { all in
            let started = all.filter { $0.start <= instant }
            let active = started.filter { $0.isActive(at: instant) }
            guard let chosen = (active.isEmpty ? started : active).max(by: { $1.endsAfter($0) }) else { return nil }
            let isActive = !active.isEmpty
            let inGrace = isActive && (chosen.end.map { instant >= $0 } ?? false)
            return Entitlement(
                active: isActive, productID: chosen.productID,
                expiresAt: isActive ? runEnd(from: chosen, among: all) : chosen.end,
                willRenew: chosen.willRenew, gracePeriodExpiresAt: chosen.gracePeriodEnd,
                billingRetry: chosen.billingRetry || inGrace, ownership: chosen.source,
                originalTransactionID: chosen.originalTransactionID, since: runStart(of: chosen, among: started))
        }
    }

    /// Follows `period` forward through periods that start before (or as) the run ends.
    private static func runEnd(from period: AccessPeriod, among candidates: [AccessPeriod]) -> Date? {
        guard var end = period.end else { return nil }
        for other in candidates.sorted(by: { $0.start < $1.start }) where other.start > period.start && other.start <= end {
            guard let otherEnd = other.end else { return nil }
            end = max(end, otherEnd)
        }
        return end
    }

    /// Walks back from `period` through overlapping or touching periods of the same entitlement.
    private static func runStart(of period: AccessPeriod, among candidates: [AccessPeriod]) -> Date {
        var since = period.start
        let sorted = candidates.sorted { $0.start > $1.start }
        var changed = true
        while changed {
            changed = false
            for other in sorted where other.start < since {
                if other.effectiveEnd.map({ $0 >= since }) ?? true {
                    since = other.start
                    changed = true
                }
            }
        }
        return since
    }
}
