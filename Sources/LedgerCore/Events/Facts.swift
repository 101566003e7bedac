import Foundation

/// Apple's environments. Sandbox is kept apart from Production everywhere money is counted.
public enum AppleEnvironment: String, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"
}

/// Whether the user bought it or a family member shares it (`inAppOwnershipType`).
public enum OwnershipType: String, Codable, Sendable {
    case purchased = "PURCHASED"
    case familyShared = "FAMILY_SHARED"
}

/// One transaction as Apple signed it (a StoreKit 2 transaction, or a legacy receipt line).
/// Every field Apple gives is kept; the reducers use a few of them.
public struct TransactionFacts: Codable, Sendable, Equatable {
    public var environment: AppleEnvironment
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var purchaseDate: Date
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    public var quantity: Int
    public var ownership: OwnershipType
    /// True on the old transaction when the user upgraded mid-period (access ends at the upgrade).
    public var isUpgraded: Bool
    public var price: Int64?          // milliunits, as Apple gives it
    public var currency: String?
    public var storefront: String?
    public var webOrderLineItemID: String?
    public var appAccountToken: UUID?
    public var offerType: Int?
    public var offerIdentifier: String?
    /// Set when Apple already revoked it (a refunded transaction re-presented later).
    public var revocationDate: Date?
    public var revocationReason: Int?
    public var signedDate: Date

    public init(environment: AppleEnvironment, transactionID: String, originalTransactionID: String, productID: String,
                purchaseDate: Date, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, quantity: Int = 1,
                ownership: OwnershipType = .purchased, isUpgraded: Bool = false, price: Int64? = nil, currency: String? = nil,
                storefront: String? = nil, webOrderLineItemID: String? = nil, appAccountToken: UUID? = nil,
                offerType: Int? = nil, offerIdentifier: String? = nil, revocationDate: Date? = nil, revocationReason: Int? = nil,
                signedDate: Date) {
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
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.signedDate = signedDate
    }
}

/// The state of a subscription's renewal, as Apple's renewal info states it at `signedDate`.
public struct RenewalFacts: Codable, Sendable, Equatable {
    public var environment: AppleEnvironment
    public var originalTransactionID: String
    public var productID: String
    /// The product the next renewal will be (differs from `productID` after a downgrade or crossgrade).
    public var autoRenewProductID: String
    public var willAutoRenew: Bool
    /// 1 cancelled, 2 billing error, 3 price increase declined, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var isInBillingRetry: Bool
    public var gracePeriodExpiresDate: Date?
    public var signedDate: Date

    public init(environment: AppleEnvironment, originalTransactionID: String, productID: String, autoRenewProductID: String? = nil,
                willAutoRenew: Bool, expirationIntent: Int? = nil, isInBillingRetry: Bool = false,
                gracePeriodExpiresDate: Date? = nil, signedDate: Date) {
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = autoRenewProductID ?? productID
        self.willAutoRenew = willAutoRenew
        self.expirationIntent = expirationIntent
        self.isInBillingRetry = isInBillingRetry
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.signedDate = signedDate
    }
}

/// A refund or a family-sharing revocation of one transaction.
public struct RevocationFacts: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case refundFull = "REFUND_FULL"
        case refundProrated = "REFUND_PRORATED"
        case familyRevoke = "FAMILY_REVOKE"
    }
    public var environment: AppleEnvironment
    public var transactionID: String
    public var originalTransactionID: String
    public var revocationDate: Date
    /// Apple's revocationReason: 0 other, 1 an issue in the app.
    public var reason: Int?
    public var kind: Kind
    /// Prorated share refunded, in thousandths (Apple's revocationPercentage); nil means all.
    public var percentage: Int?
    public var signedDate: Date

    public init(environment: AppleEnvironment, transactionID: String, originalTransactionID: String, revocationDate: Date,
                reason: Int? = nil, kind: Kind = .refundFull, percentage: Int? = nil, signedDate: Date) {
        self.environment = environment
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.revocationDate = revocationDate
        self.reason = reason
        self.kind = kind
        self.percentage = percentage
        self.signedDate = signedDate
    }
}
