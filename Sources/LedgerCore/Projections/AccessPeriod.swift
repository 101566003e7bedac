import Foundation

/// One stretch of access to a set of entitlements, from one source.
package struct AccessPeriod: Codable, Sendable, Equatable {
    package enum Source: String, Sendable, Codable {
        case purchased
        case familyShared = "family_shared"
        case promotional
        /// Buying the app itself, under the app's `app_purchase` rule.
        case appPurchase = "app_purchase"
    }
    package var entitlements: [String]
    package var productID: String
    package var originalTransactionID: String?
    package var transactionID: String?
    package var start: Date
    /// Nil: lifetime (non-consumables, free subscriptions, open-ended grants) until revoked.
    package var end: Date?
    package var source: Source
    /// Subscriptions only: the latest renewal state.
    package var willRenew: Bool?
    package var billingRetry = false
    package var gracePeriodEnd: Date?

    func isActive(at instant: Date) -> Bool {
        guard start <= instant else { return false }
        if end.map({ instant < $0 }) ?? true { return true }
        return gracePeriodEnd.map { instant < $0 } ?? false
    }

    /// The later end wins; lifetime beats everything.
    func endsAfter(_ other: AccessPeriod) -> Bool {
        switch (effectiveEnd, other.effectiveEnd) {
        case (nil, nil): return start > other.start
        case (nil, _): return true
        case (_, nil): return false
        case (let a?, let b?): return a != b ? a > b : start > other.start
        }
    }

    /// The end including a grace period.
    var effectiveEnd: Date? {
        guard let end else { return nil }
        return max(end, gracePeriodEnd ?? end)
    }
}
