import Foundation

/// Apple's environments. Sandbox is kept apart from Production everywhere money is counted.
package enum AppleEnvironment: String, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"
}

/// Whether the user bought it or a family member shares it (`inAppOwnershipType`).
package enum OwnershipType: String, Codable, Sendable {
    case purchased = "PURCHASED"
    case familyShared = "FAMILY_SHARED"
}

/// One transaction as Apple signed it (a StoreKit 2 transaction, or a legacy receipt line).
/// Every field Apple gives is kept; the reducers use a few of them.
package struct TransactionFacts: Codable, Sendable, Equatable {
    package var environment: AppleEnvironment
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    package var purchaseDate: Date
    package var originalPurchaseDate: Date?
    package var expiresDate: Date?
    package var quantity: Int
    package var ownership: OwnershipType
    /// True on the old transaction when the user upgraded mid-period (access ends at the upgrade).
    package var isUpgraded: Bool
    package var price: Int64? // milliunits, as Apple gives it
    package var currency: String?
    package var storefront: String?
    package var webOrderLineItemID: String?
    package var appAccountToken: UUID?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back; kept raw, as Apple adds kinds.
    package var offerType: Int?
    package var offerIdentifier: String?
    /// FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT, ONE_TIME (raw: Apple adds values).
    package var offerDiscountType: String?
    /// The offer's duration, ISO 8601 (`P1M`).
    package var offerPeriod: String?
    /// The app's own purchase on the buyer's account (StoreKit since iOS 18.4): what a
    /// RESCIND_CONSENT names, and what ties a purchase to its AppTransaction.
    package var appTransactionID: String?
    /// How the subscription bills: `MONTHLY` for a monthly plan with a 12-month commitment; nil
    /// for an ordinary subscription.
    package var billingPlanType: String?
    package var commitment: Commitment?
    /// Set when Apple already revoked it (a refunded transaction re-presented later).
    package var revocationDate: Date?
    package var revocationReason: Int?
    package var signedDate: Date
    /// The store, when not the App Store (see `Store`).
    package var store: Store?

    package init(
        environment: AppleEnvironment, transactionID: String, originalTransactionID: String, productID: String,
        purchaseDate: Date, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, quantity: Int = 1,
        ownership: OwnershipType = .purchased, isUpgraded: Bool = false, price: Int64? = nil, currency: String? = nil,
        storefront: String? = nil, webOrderLineItemID: String? = nil, appAccountToken: UUID? = nil,
        offerType: Int? = nil, offerIdentifier: String? = nil, offerDiscountType: String? = nil, offerPeriod: String? = nil,
        appTransactionID: String? = nil, billingPlanType: String? = nil, commitment: Commitment? = nil,
        revocationDate: Date? = nil, revocationReason: Int? = nil, signedDate: Date, store: Store = .appStore
    ) {
        self.environment = environment
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.ownership = ownership
        self.isUpgraded = isUpgraded
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.webOrderLineItemID = webOrderLineItemID
        self.appAccountToken = appAccountToken
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.appTransactionID = appTransactionID
        self.billingPlanType = billingPlanType
        self.commitment = commitment
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.signedDate = signedDate
        self.store = store.stored
    }
}

/// A monthly plan's 12-month commitment, as a transaction states it: which month of how many this
/// payment is, when the commitment ends and what it costs in all (milliunits).
package struct Commitment: Codable, Sendable, Equatable {
    package var billingPeriodNumber: Int?
    package var totalBillingPeriods: Int?
    package var expiresDate: Date?
    package var price: Int64?

    package init(billingPeriodNumber: Int? = nil, totalBillingPeriods: Int? = nil, expiresDate: Date? = nil, price: Int64? = nil) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.expiresDate = expiresDate
        self.price = price
    }
}

/// The state of a subscription's renewal, as Apple's renewal info states it at `signedDate`.
package struct RenewalFacts: Codable, Sendable, Equatable {
    package var environment: AppleEnvironment
    package var originalTransactionID: String
    package var productID: String
    /// The product the next renewal will be (differs from `productID` after a downgrade or crossgrade).
    package var autoRenewProductID: String
    package var willAutoRenew: Bool
    /// 1 cancelled, 2 billing error, 3 price increase declined, 4 product unavailable, 5 other.
    package var expirationIntent: Int?
    package var isInBillingRetry: Bool
    package var gracePeriodExpiresDate: Date?
    /// The billing plan the next renewal takes (`MONTHLY`: the commitment's monthly plan).
    package var renewalBillingPlanType: String?
    /// The offer the next renewal applies (a win-back or promotional offer the customer redeemed).
    package var offerType: Int?
    package var offerIdentifier: String?
    package var signedDate: Date
    /// The store, when not the App Store (see `Store`).
    package var store: Store?
    /// Until when the subscriber paused it (Google Play's pause): no access before then.
    package var pausedUntil: Date?

    package init(
        environment: AppleEnvironment, originalTransactionID: String, productID: String, autoRenewProductID: String? = nil,
        willAutoRenew: Bool, expirationIntent: Int? = nil, isInBillingRetry: Bool = false,
        gracePeriodExpiresDate: Date? = nil, renewalBillingPlanType: String? = nil, offerType: Int? = nil,
        offerIdentifier: String? = nil, signedDate: Date, store: Store = .appStore, pausedUntil: Date? = nil
    ) {
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = autoRenewProductID ?? productID
        self.willAutoRenew = willAutoRenew
        self.expirationIntent = expirationIntent
        self.isInBillingRetry = isInBillingRetry
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.renewalBillingPlanType = renewalBillingPlanType
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.store = store.stored
        self.pausedUntil = pausedUntil
    }
}

/// A refund or a family-sharing revocation of one transaction.
package struct RevocationFacts: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case refundFull = "REFUND_FULL"
        case refundProrated = "REFUND_PRORATED"
        case familyRevoke = "FAMILY_REVOKE"
        /// A newer purchase took this one's place (Google Play's `linkedPurchaseToken`: an upgrade,
        /// a downgrade, a resubscription): access ends for good, and no later fact re-opens it.
        case replaced = "REPLACED"
    }
    package var environment: AppleEnvironment
    package var transactionID: String
    package var originalTransactionID: String
    package var revocationDate: Date
    /// Apple's revocationReason: 0 other, 1 an issue in the app.
    package var reason: Int?
    package var kind: Kind
    /// Prorated share refunded, in thousandths (Apple's revocationPercentage); nil means all.
    package var percentage: Int?
    package var signedDate: Date
    /// The store, when not the App Store (see `Store`).
    package var store: Store?
    /// The purchase that replaced this one (`replaced` only).
    package var replacedBy: String?

    package init(
        environment: AppleEnvironment, transactionID: String, originalTransactionID: String, revocationDate: Date,
        reason: Int? = nil, kind: Kind = .refundFull, percentage: Int? = nil, signedDate: Date, store: Store = .appStore,
        replacedBy: String? = nil
    ) {
        self.environment = environment
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.revocationDate = revocationDate
        self.reason = reason
        self.kind = kind
        self.percentage = percentage
        self.signedDate = signedDate
        self.store = store.stored
        self.replacedBy = replacedBy
    }
}
