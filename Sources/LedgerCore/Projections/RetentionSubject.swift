import Foundation

/// What retention rules may ask about the subscriber Apple names in a realtime request: the
/// subscription being viewed, the customer's locale, and — when the ledger knows who owns the
/// subscription — that owner's history with it. Pure, so the endpoint, the console and the tests
/// read a subscriber the same way.
package struct RetentionSubject: Sendable, Equatable {
    package var productID: String
    package var locale: String
    /// Nil when the ledger knows no owner of the subscription: no condition on history holds.
    package var history: History?

    package struct History: Sendable, Equatable {
        /// Days paid for with this subscription: each paid period from its start to its expiry,
        /// its refund or now, whichever is first; free trials not counted.
        package var paidDays: Int
        package var renewals: Int
        /// Apple is retrying a failed renewal (with or without a grace period).
        package var inBillingRetry: Bool
        /// Any of the user's purchases was ever refunded or revoked.
        package var refundedBefore: Bool

        package init(paidDays: Int, renewals: Int, inBillingRetry: Bool, refundedBefore: Bool) {
            self.paidDays = paidDays
            self.renewals = renewals
            self.inBillingRetry = inBillingRetry
            self.refundedBefore = refundedBefore
        }
    }

    package init(productID: String, locale: String, history: History?) {
        self.productID = productID
        self.locale = locale
        self.history = history
    }

    /// `userID`'s history with `originalTransactionID` as the ledger holds it at `now`.
    package static func of(
        _ ledger: AppLedger, userID: String, originalTransactionID: String, productID: String, locale: String, now: Date
    ) -> RetentionSubject {
        let owned = ledger.transactions(ownedBy: userID)
        let subscription = owned.filter { $0.originalTransactionID == originalTransactionID }
        // Refunds are kept beside the transactions they take back, by each purchase's history.
        func revoked(_ transaction: TransactionFacts) -> Date? {
            transaction.revocationDate ?? ledger.history(of: transaction.originalTransactionID).revocationDate(of: transaction)
        }
        var paid: TimeInterval = 0
        for transaction in subscription where !transaction.isFreeTrial {
            guard let expires = transaction.expiresDate else { continue }
            let end = min(expires, revoked(transaction) ?? expires, now)
            if end > transaction.purchaseDate { paid += end.timeIntervalSince(transaction.purchaseDate) }
        }
        let summary = ledger.userState(userID, at: now).subscriptions.first { $0.originalTransactionID == originalTransactionID }
        let history = History(
            paidDays: Int(paid / 86_400), renewals: max(0, subscription.count - 1),
            inBillingRetry: summary.map { $0.status == .billingRetry || $0.status == .gracePeriod } ?? false,
            refundedBefore: owned.contains { revoked($0) != nil })
        return RetentionSubject(productID: productID, locale: locale, history: history)
    }
}

extension TransactionFacts {
    /// A free introductory period: Apple's FREE_TRIAL discount, or a period sold at no price.
    var isFreeTrial: Bool { offerDiscountType == "FREE_TRIAL" || price == 0 }
}

/// Which of an app's retention rules hold for a subscriber, in the app's order.
package enum RetentionPolicy {
    package static func matching(_ settings: RetentionSettings, _ subject: RetentionSubject) -> [RetentionRule] {
        settings.rules.filter { holds($0.when, for: subject) }
    }

    static func holds(_ condition: RetentionCondition, for subject: RetentionSubject) -> Bool {
        if let products = condition.product, !products.contains(subject.productID) { return false }
        if let locales = condition.locale, !locales.contains(where: { matches(locale: subject.locale, $0) }) { return false }
        guard condition.needsHistory else { return true }
        guard let history = subject.history else { return false }
        if let days = condition.paidDaysAtLeast, history.paidDays < days { return false }
        if let renewals = condition.renewalsAtLeast, history.renewals < renewals { return false }
        if let retry = condition.inBillingRetry, history.inBillingRetry != retry { return false }
        if let refunded = condition.refundedBefore, history.refundedBefore != refunded { return false }
        return true
    }

    /// `en` matches `en`, `en-US` and `en_GB`; `en-US` only itself (case aside).
    static func matches(locale: String, _ wanted: String) -> Bool {
        let locale = locale.lowercased().replacingOccurrences(of: "_", with: "-")
        let wanted = wanted.lowercased().replacingOccurrences(of: "_", with: "-")
        return locale == wanted || locale.hasPrefix(wanted + "-")
    }
}
