import Foundation

/// One user-visible effect of the log on one user: what webhooks push and the change feed lists
/// (docs/webhooks.md). Derived from the facts (`ChangeLog`), never recorded as an event: the log
/// says what happened, a change says what it meant for the user.
package struct Change: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case entitlementGranted = "entitlement.granted"
        case entitlementRenewed = "entitlement.renewed"
        case entitlementExpired = "entitlement.expired"
        case entitlementRevoked = "entitlement.revoked"
        case autoRenewChanged = "subscription.auto_renew_changed"
        case billingIssue = "subscription.billing_issue"
        case gracePeriod = "subscription.grace_period"
        case productChanged = "subscription.product_changed"
        /// Currency granted, or given back (a refund reversed, a spend taken back).
        case currencyGranted = "currency.granted"
        case currencySpent = "currency.spent"
        /// A refund's share taken back.
        case currencyReversed = "currency.reversed"
        /// What was left of a lot when it expired.
        case currencyExpired = "currency.expired"
        case ownershipTransferred = "ownership.transferred"
        case purchaseRefunded = "purchase.refunded"
        case refundReversed = "purchase.refund_reversed"
        case consentRescinded = "consent.rescinded"
        case userErased = "user.erased"
        case retentionOffered = "retention.offered"
    }

    /// The names the currency's changes went by before 0.10 (`balance.*`), and theirs now: changes
    /// stored then keep them, and a webhook's types may name either (it is stored with both).
    package static let renamed: [String: Kind] = [
        "balance.credited": .currencyGranted, "balance.debited": .currencySpent, "balance.reversed": .currencyReversed,
    ]

    /// `types` with each renamed type's other name beside it, in order, once each.
    package static func withOtherNames(_ types: [String]) -> [String] {
        var all = types
        for type in types {
            if let now = renamed[type] { all.append(now.rawValue) }
            all += renamed.filter { $0.value.rawValue == type }.map(\.key)
        }
        return Array(Set(all)).sorted()
    }

    package var kind: Kind
    package var userID: String
    /// Business time: the fact's date, or the instant access ran out.
    package var occurredAt: Date
    /// When the ledger could tell: the fact's recording, or for an expiry the first fact or clock
    /// sweep after it.
    package var recordedAt: Date
    /// What tells this change from every other change of the same user and kind — the fact's log
    /// position and the subject, or an expiry's entitlement and instant. With the app, the user and
    /// the kind it makes the change's id, so deriving it twice (a sweep and a batch, a re-derivation
    /// from zero) announces it once.
    package var identity: String
    package var subject: Subject
    /// The user's state just after the change, at `recordedAt` (an expiry: at `occurredAt`).
    package var state: UserState

    /// What changed: the thing it concerns and its value before and after.
    package struct Subject: Sendable, Equatable {
        package var entitlement: String?
        package var productID: String?
        package var originalTransactionID: String?
        package var transactionID: String?
        package var currency: String?
        package var amount: Int64?
        /// Why: `refund`, `family_revocation`, `support`, `transferred` (revocations).
        package var reason: String?
        package var from: Value = .absent
        package var to: Value = .absent

    }

    /// An old or new value: an expiry (nil: never), a flag, a product or user, an amount.
    package enum Value: Sendable, Equatable {
        case absent
        case date(Date?)
        case flag(Bool?)
        case text(String?)
        case number(Int64)
    }
}
