import Foundation

/// One StoreKit 2 transaction, with Apple's field names, for any scenario: a purchase, a renewal
/// (same original id, later dates), an upgrade (`isUpgraded` on the old one), a refund or family
/// revocation (`revocationDate`), a family-shared copy (`ownership`).
package struct SimulatedTransaction: Sendable {
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    /// "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription".
    package var type: String
    package var purchaseDate: Date
    package var originalPurchaseDate: Date?
    package var expiresDate: Date?
    package var quantity = 1
    package var ownership = "PURCHASED"
    package var price: Int64? = 9_990
    package var currency: String? = "USD"
    package var storefront: String? = "USA"
    package var appAccountToken: UUID?
    package var transactionReason: String?
    package var isUpgraded = false
    package var revocationDate: Date?
    package var revocationReason: Int?
    package var revocationType: String?
    package var revocationPercentage: Int?
    /// The app's own purchase the transaction was made in (StoreKit since iOS 18.4).
    package var appTransactionID: String?
    package var offerType: Int?
    package var offerIdentifier: String?
    package var offerDiscountType: String?
    package var offerPeriod: String?
    /// `MONTHLY` with `commitmentExpiresDate`: a monthly plan with a 12-month commitment.
    package var billingPlanType: String?
    package var commitmentExpiresDate: Date?

    package init(
        transactionID: String, originalTransactionID: String? = nil, productID: String,
        type: String = "Auto-Renewable Subscription", purchaseDate: Date, expiresDate: Date? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID ?? transactionID
        self.productID = productID
        self.type = type
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.transactionReason = originalTransactionID == nil || originalTransactionID == transactionID ? "PURCHASE" : "RENEWAL"
    }

    /// The next period of this subscription: a new transaction id, same original, `period` later.
    package func renewed(transactionID: String, period: TimeInterval) -> SimulatedTransaction {
        var next = self
        next.transactionID = transactionID
        next.transactionReason = "RENEWAL"
        next.purchaseDate = expiresDate ?? purchaseDate
        next.expiresDate = next.purchaseDate.addingTimeInterval(period)
        return next
    }

    /// This transaction refunded (or, with `type` FAMILY_REVOKE, revoked) at `date`.
    package func revoked(at date: Date, type: String = "REFUND_FULL", reason: Int = 0, percentage: Int? = nil) -> SimulatedTransaction {
        var copy = self
        copy.revocationDate = date
        copy.revocationReason = reason
        copy.revocationType = type
        copy.revocationPercentage = percentage
        return copy
    }

    func payload(bundleID: String, environment: String, signedDate: Date) -> [String: Any] {
        var fields: [String: Any] = [
            "transactionId": transactionID, "originalTransactionId": originalTransactionID, "bundleId": bundleID,
            "productId": productID, "type": type, "purchaseDate": ms(purchaseDate), "quantity": quantity,
            "inAppOwnershipType": ownership, "environment": environment, "signedDate": ms(signedDate), "isUpgraded": isUpgraded,
        ]
        fields["originalPurchaseDate"] = originalPurchaseDate.map(ms)
        fields["expiresDate"] = expiresDate.map(ms)
        fields["price"] = price
        fields["currency"] = currency
        fields["storefront"] = storefront
        fields["appAccountToken"] = appAccountToken?.uuidString.lowercased()
        fields["transactionReason"] = transactionReason
        fields["revocationDate"] = revocationDate.map(ms)
        fields["revocationReason"] = revocationReason
        fields["revocationType"] = revocationType
        fields["revocationPercentage"] = revocationPercentage
        fields["appTransactionId"] = appTransactionID
        fields["offerType"] = offerType
        fields["offerIdentifier"] = offerIdentifier
        fields["offerDiscountType"] = offerDiscountType
        fields["offerPeriod"] = offerPeriod
        fields["billingPlanType"] = billingPlanType
        if let commitmentExpiresDate {
            fields["commitmentInfo"] =
                [
                    "billingPeriodNumber": 1, "totalBillingPeriods": 12, "commitmentExpiresDate": ms(commitmentExpiresDate),
                    "commitmentPrice": (price ?? 0) * 12,
                ] as [String: Any]
        }
        if type == "Auto-Renewable Subscription" { fields["webOrderLineItemId"] = "w" + transactionID }
        return fields
    }

    /// The same transaction as a legacy receipt line (strings everywhere, dates three ways).
    func legacyLine() -> [String: Any] {
        var line: [String: Any] = [
            "transaction_id": transactionID, "original_transaction_id": originalTransactionID, "product_id": productID,
            "quantity": String(quantity), "is_trial_period": "false", "is_in_intro_offer_period": "false",
            "in_app_ownership_type": ownership,
        ]
        for (name, date) in [
            ("purchase_date", purchaseDate), ("original_purchase_date", originalPurchaseDate),
            ("expires_date", expiresDate), ("cancellation_date", revocationDate),
        ] {
            guard let date else { continue }
            line[name + "_ms"] = String(ms(date))
            line[name] = Self.legacyDate(date)
        }
        if let revocationReason { line["cancellation_reason"] = String(revocationReason) }
        if isUpgraded { line["is_upgraded"] = "true" }
        return line
    }

    static func legacyDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date) + " Etc/GMT"
    }
}

/// A subscription's renewal info.
package struct SimulatedRenewal: Sendable {
    package var originalTransactionID: String
    package var productID: String
    package var autoRenewProductID: String
    package var autoRenewStatus = true
    package var expirationIntent: Int?
    package var isInBillingRetryPeriod = false
    package var gracePeriodExpiresDate: Date?

    package init(originalTransactionID: String, productID: String, autoRenewProductID: String? = nil, autoRenewStatus: Bool = true) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = autoRenewProductID ?? productID
        self.autoRenewStatus = autoRenewStatus
    }

    func payload(environment: String, signedDate: Date) -> [String: Any] {
        var fields: [String: Any] = [
            "originalTransactionId": originalTransactionID, "productId": productID, "autoRenewProductId": autoRenewProductID,
            "autoRenewStatus": autoRenewStatus ? 1 : 0, "isInBillingRetryPeriod": isInBillingRetryPeriod,
            "environment": environment, "signedDate": ms(signedDate),
        ]
        fields["expirationIntent"] = expirationIntent
        fields["gracePeriodExpiresDate"] = gracePeriodExpiresDate.map(ms)
        return fields
    }

    func legacy() -> [String: Any] {
        var fields: [String: Any] = [
            "original_transaction_id": originalTransactionID, "product_id": productID,
            "auto_renew_product_id": autoRenewProductID, "auto_renew_status": autoRenewStatus ? "1" : "0",
            "is_in_billing_retry_period": isInBillingRetryPeriod ? "1" : "0",
        ]
        if let expirationIntent { fields["expiration_intent"] = String(expirationIntent) }
        if let grace = gracePeriodExpiresDate { fields["grace_period_expires_date_ms"] = String(ms(grace)) }
        return fields
    }
}

func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
