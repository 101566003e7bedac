import Foundation
import LedgerCore

/// A verifyReceipt answer (or a V1 notification's `unified_receipt`), with every field the ledger
/// uses. Built only from Apple's JSON; parsing never fails on a missing optional field.
package struct ReceiptResponse: Sendable, Equatable {
    package var status: Int
    package var isRetryable: Bool
    package var environment: AppleEnvironment?
    package var bundleID: String?
    /// When Apple answered (`receipt.request_date_ms`): the instant the whole answer is true at.
    package var requestDate: Date?
    package var inApp: [ReceiptLine]
    /// Authoritative for subscriptions: every transaction of every subscription, newest included.
    package var latestReceiptInfo: [ReceiptLine]
    package var pendingRenewalInfo: [PendingRenewal]
    /// The base64 receipt Apple returns for the next call (never stored in events).
    package var latestReceipt: String?

    /// Parses a verifyReceipt response body. Throws only when it is not a JSON object with a status.
    package init(json: Data) throws {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw LedgerError(.appleUnavailable, "verifyReceipt answered something that is not a JSON object")
        }
        try self.init(LegacyFields(object))
    }

    init(_ fields: LegacyFields) throws {
        guard let status = fields.int("status") else {
            throw LedgerError(.malformed, "the receipt answer has no status")
        }
        self.status = status
        self.isRetryable = fields.bool("is-retryable") ?? false
        self.environment = fields.string("environment").flatMap(AppleEnvironment.init(legacy:))
        let receipt = LegacyFields(fields.object["receipt"]) ?? LegacyFields([:])
        // iOS 7+ receipts say bundle_id; iOS 6-style ones say bid.
        self.bundleID = receipt.string("bundle_id") ?? receipt.string("bid")
        self.requestDate = receipt.date("request_date")
        self.inApp = receipt.objects("in_app").compactMap(ReceiptLine.init)
        // iOS 6-style: the receipt itself is the one transaction, and expired ones come apart.
        var latest = fields.objects("latest_receipt_info").compactMap(ReceiptLine.init)
        if receipt.object["in_app"] == nil, let line = ReceiptLine(receipt) { inApp = [line] }
        if let expired = fields.objects("latest_expired_receipt_info").first.flatMap(ReceiptLine.init) { latest.append(expired) }
        self.latestReceiptInfo = latest
        var pending = fields.objects("pending_renewal_info").compactMap(PendingRenewal.init)
        if pending.isEmpty, let product = fields.string("auto_renew_product_id"), let original = latest.last?.originalTransactionID {
            pending = [PendingRenewal(fields, originalTransactionID: original, productID: latest.last?.productID ?? product)]
        }
        self.pendingRenewalInfo = pending
        self.latestReceipt = fields.string("latest_receipt")
    }

    /// Every transaction named anywhere in the answer, once per transaction id (the
    /// `latest_receipt_info` copy wins: it is the one that carries cancellations).
    package var transactions: [ReceiptLine] {
        var byID: [String: ReceiptLine] = [:]
        for line in inApp { byID[line.transactionID] = line }
        for line in latestReceiptInfo { byID[line.transactionID] = line }
        return byID.values.sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
    }
}

/// One transaction line (`in_app`, `latest_receipt_info`).
package struct ReceiptLine: Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    package var quantity: Int
    package var purchaseDate: Date
    package var originalPurchaseDate: Date?
    package var expiresDate: Date?
    package var cancellationDate: Date?
    package var cancellationReason: Int?
    package var webOrderLineItemID: String?
    package var isTrialPeriod: Bool
    package var isInIntroOfferPeriod: Bool
    package var isUpgraded: Bool
    package var ownership: OwnershipType
    package var subscriptionGroupIdentifier: String?
    package var promotionalOfferID: String?
    package var offerCodeRefName: String?
    package var appAccountToken: UUID?

    init?(_ fields: LegacyFields) {
        guard let transactionID = fields.string("transaction_id"), let productID = fields.string("product_id"),
            let purchaseDate = fields.date("purchase_date")
        else { return nil }
        self.transactionID = transactionID
        self.originalTransactionID = fields.string("original_transaction_id") ?? transactionID
        self.productID = productID
        self.quantity = fields.int("quantity") ?? 1
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = fields.date("original_purchase_date")
        self.expiresDate = fields.date("expires_date")
        self.cancellationDate = fields.date("cancellation_date")
        self.cancellationReason = fields.int("cancellation_reason")
        self.webOrderLineItemID = fields.string("web_order_line_item_id")
        self.isTrialPeriod = fields.bool("is_trial_period") ?? false
        self.isInIntroOfferPeriod = fields.bool("is_in_intro_offer_period") ?? false
        self.isUpgraded = fields.bool("is_upgraded") ?? false
        self.ownership = fields.string("in_app_ownership_type").flatMap(OwnershipType.init(rawValue:)) ?? .purchased
        self.subscriptionGroupIdentifier = fields.string("subscription_group_identifier")
        self.promotionalOfferID = fields.string("promotional_offer_id")
        self.offerCodeRefName = fields.string("offer_code_ref_name")
        self.appAccountToken = fields.string("app_account_token").flatMap(UUID.init(uuidString:))
    }

    /// The line as the domain's transaction facts, stated by Apple at `statedAt`.
    package func facts(environment: AppleEnvironment, statedAt: Date) -> TransactionFacts {
        TransactionFacts(
            environment: environment, transactionID: transactionID, originalTransactionID: originalTransactionID,
            productID: productID, purchaseDate: purchaseDate, originalPurchaseDate: originalPurchaseDate,
            expiresDate: expiresDate, quantity: quantity, ownership: ownership, isUpgraded: isUpgraded,
            webOrderLineItemID: webOrderLineItemID, appAccountToken: appAccountToken,
            offerType: isTrialPeriod || isInIntroOfferPeriod ? 1 : (promotionalOfferID != nil ? 2 : (offerCodeRefName != nil ? 3 : nil)),
            offerIdentifier: promotionalOfferID ?? offerCodeRefName,
            revocationDate: cancellationDate, revocationReason: cancellationReason, signedDate: statedAt)
    }
}

/// One subscription's renewal state (`pending_renewal_info`).
package struct PendingRenewal: Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String
    package var autoRenewProductID: String
    package var willAutoRenew: Bool
    package var expirationIntent: Int?
    package var isInBillingRetryPeriod: Bool
    package var gracePeriodExpiresDate: Date?
    package var priceConsentStatus: Int?

    init?(_ fields: LegacyFields) {
        guard let original = fields.string("original_transaction_id") else { return nil }
        self.init(
            fields, originalTransactionID: original, productID: fields.string("product_id") ?? fields.string("auto_renew_product_id") ?? "")
    }

    /// Also reads iOS 6-style answers, whose renewal fields sit at the top level.
    init(_ fields: LegacyFields, originalTransactionID: String, productID: String) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = fields.string("auto_renew_product_id") ?? productID
        self.willAutoRenew = fields.bool("auto_renew_status") ?? false
        self.expirationIntent = fields.int("expiration_intent")
        self.isInBillingRetryPeriod = fields.bool("is_in_billing_retry_period") ?? false
        self.gracePeriodExpiresDate = fields.date("grace_period_expires_date")
        self.priceConsentStatus = fields.int("price_consent_status")
    }

    package func facts(environment: AppleEnvironment, statedAt: Date) -> RenewalFacts {
        RenewalFacts(
            environment: environment, originalTransactionID: originalTransactionID, productID: productID,
            autoRenewProductID: autoRenewProductID, willAutoRenew: willAutoRenew, expirationIntent: expirationIntent,
            isInBillingRetry: isInBillingRetryPeriod, gracePeriodExpiresDate: gracePeriodExpiresDate, signedDate: statedAt)
    }
}

extension AppleEnvironment {
    /// Legacy spellings: verifyReceipt says "Production"/"Sandbox", V1 notifications "PROD"/"Sandbox".
    package init?(legacy: String) {
        switch legacy.lowercased() {
        case "production", "prod": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }
}
