import Foundation

/// What one user owns at one instant, and why: the answer a game server, a content server and a
/// support agent all ask for.
public struct UserState: Sendable, Equatable {
    public var userID: String
    public var asOf: Date
    public var entitlements: [String: Entitlement]
    /// Currency → balance. May be negative: a refund of spent currency is a debt, shown, not hidden.
    public var balances: [String: Int64]
    public var subscriptions: [SubscriptionSummary]
    public var purchases: [PurchaseSummary]
    /// Every credit, debit and reversal behind `balances`.
    public var balanceEntries: [BalanceEntry]
}

public struct Entitlement: Sendable, Equatable {
    public var active: Bool
    public var productID: String
    public var expiresAt: Date?
    public var willRenew: Bool?
    public var gracePeriodExpiresAt: Date?
    public var billingRetry: Bool
    public var ownership: AccessPeriod.Source
    public var originalTransactionID: String?
    /// Start of the unbroken run of access this entitlement is in (or was in, when inactive).
    public var since: Date
}

public struct SubscriptionSummary: Sendable, Equatable {
    public enum Status: String, Sendable { case active, gracePeriod = "grace_period", billingRetry = "billing_retry", expired, revoked }
    public var originalTransactionID: String
    public var productID: String
    public var status: Status
    public var expiresAt: Date?
    public var willRenew: Bool?
    /// The product the next renewal switches to (a pending downgrade or crossgrade).
    public var pendingProductID: String?
    public var expirationIntent: Int?
}

public struct PurchaseSummary: Codable, Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var type: ProductType?
    public var purchaseDate: Date
    public var quantity: Int
    public var revokedAt: Date?
}

public struct BalanceEntry: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case credit, debit, reversal }
    public var kind: Kind
    public var currency: String
    /// Always positive; `kind` says which way it moves the balance.
    public var amount: Int64
    public var at: Date
    /// The purchase (credit, reversal) or the idempotency key (debit).
    public var reference: String
}

extension UserState {
    /// Balance = credits − debits − reversals, exactly (the invariant the property tests check).
    static func balances(of entries: [BalanceEntry]) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for entry in entries {
            result[entry.currency, default: 0] += entry.kind == .credit ? entry.amount : -entry.amount
        }
        return result
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
