import Foundation

/// A user's access and money over time, independent of the instant asked about: what the stored
/// projection keeps. "Active" is never stored — it goes stale as time passes without any event —
/// it is evaluated from the timeline at the instant of the question.
package struct UserTimeline: Codable, Sendable, Equatable {
    package var userID: String
    package var periods: [AccessPeriod]
    package var subscriptions: [SubscriptionTimeline]
    package var purchases: [PurchaseSummary]
    package var balanceEntries: [BalanceEntry]
    /// When a parent or guardian withdrew consent for the app these purchases were made in.
    package var consentRescindedAt: Date?
    /// The app itself, as the user bought it on an Apple account (AppTransaction).
    package var appPurchase: AppPurchaseSummary?

    package init(
        userID: String, periods: [AccessPeriod] = [], subscriptions: [SubscriptionTimeline] = [],
        purchases: [PurchaseSummary] = [], balanceEntries: [BalanceEntry] = [], consentRescindedAt: Date? = nil,
        appPurchase: AppPurchaseSummary? = nil
    ) {
        self.userID = userID
        self.periods = periods
        self.subscriptions = subscriptions
        self.purchases = purchases
        self.balanceEntries = balanceEntries
        self.consentRescindedAt = consentRescindedAt
        self.appPurchase = appPurchase
    }

    /// The entitlements alone at `instant`: what a question about access needs, without the
    /// balances' replay.
    package func entitlements(at instant: Date) -> [String: Entitlement] {
        UserState.entitlements(from: periods, at: instant)
    }

    package func state(at instant: Date) -> UserState {
        let entries = balanceEntries.filter { $0.at <= instant }
        return UserState(
            userID: userID, asOf: instant,
            entitlements: entitlements(at: instant),
            balances: UserState.balances(of: entries, at: instant),
            // A subscription is listed from its first period on (asked about the past, one bought
            // later is not there yet).
            subscriptions: subscriptions.filter { subscription in
                periods.contains { $0.originalTransactionID == subscription.originalTransactionID && $0.start <= instant }
            }.map { $0.summary(at: instant) },
            purchases: purchases.filter { $0.purchaseDate <= instant },
            balanceEntries: entries,
            consentRescindedAt: consentRescindedAt.flatMap { $0 <= instant ? $0 : nil },
            appPurchase: appPurchase.flatMap { ($0.originalPurchaseDate ?? instant) <= instant ? $0 : nil })
    }
}

/// One auto-renewable subscription's latest period and renewal state.
package struct SubscriptionTimeline: Codable, Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String
    package var accessEnd: Date?
    package var revokedAt: Date?
    package var gracePeriodEnd: Date?
    package var billingRetry: Bool
    package var willRenew: Bool?
    package var pendingProductID: String?
    package var expirationIntent: Int?
    /// The latest transaction's billing plan (`MONTHLY`: a monthly plan with a 12-month commitment).
    package var billingPlanType: String? = nil
    /// When that plan's commitment ends.
    package var commitmentExpiresAt: Date? = nil
    /// The offer the latest period was bought with (Apple's offerType and offerIdentifier).
    package var offerType: Int? = nil
    package var offerIdentifier: String? = nil
    /// The store, when not the App Store (see `Store`).
    package var store: Store? = nil

    func summary(at instant: Date) -> SubscriptionSummary {
        let status: SubscriptionSummary.Status
        if revokedAt.map({ $0 <= instant }) ?? false {
            status = .revoked
        } else if accessEnd.map({ instant < $0 }) ?? true {
            status = .active
        } else if let gracePeriodEnd, instant < gracePeriodEnd {
            status = .gracePeriod
        } else if billingRetry {
            status = .billingRetry
        } else {
            status = .expired
        }
        return SubscriptionSummary(
            originalTransactionID: originalTransactionID, productID: productID, status: status,
            expiresAt: accessEnd, willRenew: willRenew, pendingProductID: pendingProductID,
            expirationIntent: expirationIntent, billingPlanType: billingPlanType,
            commitmentExpiresAt: commitmentExpiresAt, offerType: offerType, offerIdentifier: offerIdentifier, store: store ?? .appStore)
    }
}
