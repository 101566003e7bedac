import Foundation

/// How an app treats a transaction presented by a second user (DESIGN-NOTES §3, "replay across accounts").
public enum RestorePolicy: String, Codable, Sendable {
    /// Ownership moves to the newcomer, recorded as `ownershipTransferred` (RevenueCat's default).
    case transfer
    /// The first owner keeps it; the newcomer's request is refused.
    case keep
}

/// Every fact the ledger records. `docs/events.md` lists each with its fields, the Apple evidence
/// that produces it, and its stream. Names are stable: they are stored as the event type.
///
/// Indirect: a payload lives in one box, so copying a fact (projections sort, filter and gather
/// them constantly) is one retain instead of one per string field — a rebuild's profile showed
/// those copies above the reducers themselves.
public indirect enum LedgerEvent: Sendable, Equatable {
    // App configuration (stream app:<bundle>)
    case appConfigured(AppSettings)
    case productConfigured(ProductDefinition)

    // Apple's facts about one original transaction (stream purchase:<bundle>:<original id>)
    case purchased(TransactionFacts)
    case restored(TransactionFacts)
    case renewed(TransactionFacts)
    /// A renewal that succeeded after billing retry or grace period.
    case recovered(TransactionFacts)
    case autoRenewChanged(RenewalFacts)
    /// Upgrade, downgrade or crossgrade chosen; a downgrade takes effect at the next renewal.
    case renewalPreferenceChanged(RenewalFacts)
    /// Billing failed: retrying, possibly inside a grace period.
    case renewalFailed(RenewalFacts)
    case expired(RenewalFacts)
    case refunded(RevocationFacts)
    /// Family sharing ended for this user.
    case revoked(RevocationFacts)
    case refundReversed(RefundReversal)

    // Users (ownership in the purchase stream; the rest in stream user:<bundle>:<user>)
    case transactionClaimed(Claim)
    case ownershipTransferred(Transfer)
    case consumed(Consumption)
    case promotionalGranted(PromotionalGrant)
    case promotionalRevoked(PromotionalRevocation)

    /// Any notification from Apple, kept verbatim as evidence, including types nothing acts on.
    case appleNotificationReceived(AppleNotification)
    /// What the ledger told Apple in answer to a CONSUMPTION_REQUEST (audit: what Apple was told).
    case consumptionInformationSent(ConsumptionAnswer)

    /// The stored event type's name.
    public var typeName: String { type.rawValue }

    public var type: LedgerEventType {
        switch self {
        case .appConfigured: .appConfigured
        case .productConfigured: .productConfigured
        case .purchased: .purchased
        case .restored: .restored
        case .renewed: .renewed
        case .recovered: .recovered
        case .autoRenewChanged: .autoRenewChanged
        case .renewalPreferenceChanged: .renewalPreferenceChanged
        case .renewalFailed: .renewalFailed
        case .expired: .expired
        case .refunded: .refunded
        case .revoked: .revoked
        case .refundReversed: .refundReversed
        case .transactionClaimed: .transactionClaimed
        case .ownershipTransferred: .ownershipTransferred
        case .consumed: .consumed
        case .promotionalGranted: .promotionalGranted
        case .promotionalRevoked: .promotionalRevoked
        case .appleNotificationReceived: .appleNotificationReceived
        case .consumptionInformationSent: .consumptionInformationSent
        }
    }
}

/// The names events are stored under (`ledger.events.event_type`), one per case of `LedgerEvent`:
/// the one place they are spelled. Stable forever — stored events carry them.
public enum LedgerEventType: String, Sendable, CaseIterable {
    case appConfigured = "AppConfigured"
    case productConfigured = "ProductConfigured"
    case purchased = "Purchased"
    case restored = "Restored"
    case renewed = "Renewed"
    case recovered = "Recovered"
    case autoRenewChanged = "AutoRenewChanged"
    case renewalPreferenceChanged = "RenewalPreferenceChanged"
    case renewalFailed = "RenewalFailed"
    case expired = "Expired"
    case refunded = "Refunded"
    case revoked = "Revoked"
    case refundReversed = "RefundReversed"
    case transactionClaimed = "TransactionClaimed"
    case ownershipTransferred = "OwnershipTransferred"
    case consumed = "Consumed"
    case promotionalGranted = "PromotionalGranted"
    case promotionalRevoked = "PromotionalRevoked"
    case appleNotificationReceived = "AppleNotificationReceived"
    case consumptionInformationSent = "ConsumptionInformationSent"

    /// Decisions about who owns an original transaction.
    public static let ownership: Set<LedgerEventType> = [.transactionClaimed, .ownershipTransferred]
}

public struct AppSettings: Codable, Sendable, Equatable {
    public var environments: [AppleEnvironment]
    public var appleAppID: Int64?
    public var restorePolicy: RestorePolicy
    /// How Apple's CONSUMPTION_REQUESTs are answered; none: they are kept, never answered.
    public var consumptionPolicy: ConsumptionPolicy?

    public init(environments: [AppleEnvironment] = [.production, .sandbox], appleAppID: Int64? = nil, restorePolicy: RestorePolicy = .transfer,
                consumptionPolicy: ConsumptionPolicy? = nil) {
        self.environments = environments
        self.appleAppID = appleAppID
        self.restorePolicy = restorePolicy
        self.consumptionPolicy = consumptionPolicy
    }
}

/// What the app declares for Apple's refund questions (CONSUMPTION_REQUEST). Apple accepts
/// consumption information only with the customer's consent, which the app collects: without
/// `customerConsented` nothing is sent.
public struct ConsumptionPolicy: Codable, Sendable, Equatable {
    public var customerConsented: Bool
    /// Apple's `refundPreference`: DECLINE, GRANT_FULL, GRANT_PRORATED; nil: no preference.
    public var refundPreference: String?
    /// Whether the app offered a free sample, trial or description of the content before purchase.
    public var sampleContentProvided: Bool

    public static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public init(customerConsented: Bool, refundPreference: String? = nil, sampleContentProvided: Bool = false) {
        self.customerConsented = customerConsented
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

public struct RefundReversal: Codable, Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var signedDate: Date
    public init(transactionID: String, originalTransactionID: String, signedDate: Date) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.signedDate = signedDate
    }
}

public struct Claim: Codable, Sendable, Equatable {
    public var originalTransactionID: String
    public var userID: String
    public init(originalTransactionID: String, userID: String) {
        self.originalTransactionID = originalTransactionID
        self.userID = userID
    }
}

public struct Transfer: Codable, Sendable, Equatable {
    public var originalTransactionID: String
    public var fromUserID: String
    public var toUserID: String
    public init(originalTransactionID: String, fromUserID: String, toUserID: String) {
        self.originalTransactionID = originalTransactionID
        self.fromUserID = fromUserID
        self.toUserID = toUserID
    }
}

public struct Consumption: Codable, Sendable, Equatable {
    public var userID: String
    public var currency: String
    public var amount: Int64
    public var idempotencyKey: String
    public init(userID: String, currency: String, amount: Int64, idempotencyKey: String) {
        self.userID = userID
        self.currency = currency
        self.amount = amount
        self.idempotencyKey = idempotencyKey
    }
}

public struct PromotionalGrant: Codable, Sendable, Equatable {
    public var grantID: String
    public var userID: String
    public var entitlement: String
    public var startsAt: Date
    /// Nil: until revoked.
    public var expiresAt: Date?
    public var reason: String
    public init(grantID: String, userID: String, entitlement: String, startsAt: Date, expiresAt: Date?, reason: String) {
        self.grantID = grantID
        self.userID = userID
        self.entitlement = entitlement
        self.startsAt = startsAt
        self.expiresAt = expiresAt
        self.reason = reason
    }
}

public struct PromotionalRevocation: Codable, Sendable, Equatable {
    public var grantID: String
    public var userID: String
    public var reason: String
    public init(grantID: String, userID: String, reason: String) {
        self.grantID = grantID
        self.userID = userID
        self.reason = reason
    }
}

public struct AppleNotification: Codable, Sendable, Equatable {
    /// "1" (legacy server notifications) or "2".
    public var version: String
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String?
    public var environment: AppleEnvironment?
    public var originalTransactionID: String?
    public var signedDate: Date?
    public init(version: String, notificationType: String, subtype: String? = nil, notificationUUID: String? = nil,
                environment: AppleEnvironment? = nil, originalTransactionID: String? = nil, signedDate: Date? = nil) {
        self.version = version
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.signedDate = signedDate
    }
}

/// The consumption information sent to Apple for one CONSUMPTION_REQUEST, as Apple received it.
public struct ConsumptionAnswer: Codable, Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    /// The request answered (Apple's notificationUUID).
    public var notificationUUID: String
    public var environment: AppleEnvironment
    public var customerConsented: Bool
    /// Thousandths of a percent consumed (0…100,000); nil: not stated.
    public var consumptionPercentage: Int?
    /// DELIVERED or UNDELIVERED_OTHER (nobody in this ledger owns the purchase).
    public var deliveryStatus: String
    public var refundPreference: String?
    public var sampleContentProvided: Bool
    public var sentAt: Date

    public init(transactionID: String, originalTransactionID: String, notificationUUID: String, environment: AppleEnvironment,
                customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: String, refundPreference: String?,
                sampleContentProvided: Bool, sentAt: Date) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.notificationUUID = notificationUUID
        self.environment = environment
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
        self.sentAt = sentAt
    }
}
