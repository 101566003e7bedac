import Foundation

/// How an app treats a transaction presented by a second user: a purchase replayed across accounts.
package enum RestorePolicy: String, Codable, Sendable {
    /// Ownership moves to the newcomer, recorded as `ownershipTransferred` (RevenueCat's default).
    case transfer
    /// The first owner keeps it; the newcomer's request is refused.
    case keep
    /// Ownership moves only when the purchase gives its current owner nothing active any more (a
    /// lapsed subscription, a refunded purchase): a shared Apple ID cannot pass a live
    /// subscription back and forth between two accounts, yet a new account inherits a dead one.
    case transferIfNoActive = "transfer_if_no_active"
}

/// Every fact the ledger records. `docs/events.md` lists each with its fields, the Apple evidence
/// that produces it, and its stream. Names are stable: they are stored as the event type.
///
/// Indirect: a payload lives in one box, so copying a fact (projections sort, filter and gather
/// them constantly) is one retain instead of one per string field — a rebuild's profile showed
/// those copies above the reducers themselves.
package indirect enum LedgerEvent: Sendable, Equatable {
    // App configuration (stream app:<bundle>)
    case appConfigured(AppSettings)
    case productConfigured(ProductDefinition)
    case currencyConfigured(CurrencyDefinition)

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
    case currencyGranted(CurrencyGrant)
    case spendReversed(SpendReversal)
    case promotionalGranted(PromotionalGrant)
    case promotionalRevoked(PromotionalRevocation)
    /// Currency moved between two accounts of one person when they were merged: recorded on both
    /// users' streams in one transaction (out of one, into the other).
    case balanceMoved(BalanceMove)
    /// The app's own purchase on an Apple account, presented for the user (AppTransaction).
    case appTransactionRecorded(AppTransactionFacts)
    /// A signature the ledger issued for the user (an offer, an introductory eligibility): audit only.
    case offerSigned(OfferSignature)
    /// What Apple was told to show the user about to cancel a subscription: audit and counts only.
    case retentionDecided(RetentionDecision)
    /// The user's identifiers were erased: recorded on the pseudonym's stream, naming only it.
    case userErased(UserErasure)
    /// Asked of Apple on the app's behalf (audit only; Apple's restated facts change the state).
    case renewalExtended(RenewalExtension)
    case massRenewalExtensionRequested(MassRenewalExtension)
    case appAccountTokenSent(AppAccountTokenSent)

    /// Any notification from Apple, kept verbatim as evidence, including types nothing acts on.
    case appleNotificationReceived(AppleNotification)
    /// What the ledger told Apple in answer to a CONSUMPTION_REQUEST (audit: what Apple was told).
    case consumptionInformationSent(ConsumptionAnswer)
    /// A parent or guardian withdrew consent for a child's use of the app (RESCIND_CONSENT): every
    /// user whose purchases carry the app transaction shows it. Nothing is revoked by it.
    case consentRescinded(ConsentRescission)

    /// The stored event type's name.
    package var typeName: String { type.rawValue }

    package var type: LedgerEventType {
        switch self {
        case .appConfigured: .appConfigured
        case .productConfigured: .productConfigured
        case .currencyConfigured: .currencyConfigured
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
        case .currencyGranted: .currencyGranted
        case .spendReversed: .spendReversed
        case .promotionalGranted: .promotionalGranted
        case .promotionalRevoked: .promotionalRevoked
        case .balanceMoved: .balanceMoved
        case .appTransactionRecorded: .appTransactionRecorded
        case .offerSigned: .offerSigned
        case .retentionDecided: .retentionDecided
        case .userErased: .userErased
        case .renewalExtended: .renewalExtended
        case .massRenewalExtensionRequested: .massRenewalExtensionRequested
        case .appAccountTokenSent: .appAccountTokenSent
        case .appleNotificationReceived: .appleNotificationReceived
        case .consumptionInformationSent: .consumptionInformationSent
        case .consentRescinded: .consentRescinded
        }
    }
}

/// The names events are stored under (`ledger.events.event_type`), one per case of `LedgerEvent`:
/// the one place they are spelled. Stable forever — stored events carry them.
package enum LedgerEventType: String, Sendable, CaseIterable {
    case appConfigured = "AppConfigured"
    case productConfigured = "ProductConfigured"
    case currencyConfigured = "CurrencyConfigured"
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
    case currencyGranted = "CurrencyGranted"
    case spendReversed = "SpendReversed"
    case promotionalGranted = "PromotionalGranted"
    case promotionalRevoked = "PromotionalRevoked"
    case balanceMoved = "BalanceMoved"
    case appTransactionRecorded = "AppTransactionRecorded"
    case offerSigned = "OfferSigned"
    case retentionDecided = "RetentionDecided"
    case userErased = "UserErased"
    case renewalExtended = "RenewalExtendedAtApple"
    case massRenewalExtensionRequested = "MassRenewalExtensionRequested"
    case appAccountTokenSent = "AppAccountTokenSentToApple"
    case appleNotificationReceived = "AppleNotificationReceived"
    case consumptionInformationSent = "ConsumptionInformationSent"
    case consentRescinded = "ConsentRescinded"

    /// Decisions about who owns an original transaction.
    package static let ownership: Set<LedgerEventType> = [.transactionClaimed, .ownershipTransferred]
}

package struct AppSettings: Codable, Sendable, Equatable {
    package var environments: [AppleEnvironment]
    package var appleAppID: Int64?
    package var restorePolicy: RestorePolicy
    /// How Apple's CONSUMPTION_REQUESTs are answered; none: they are kept, never answered.
    package var consumptionPolicy: ConsumptionPolicy?
    /// What buying the app itself grants (an app that went from paid to free); none: nothing.
    package var appPurchase: AppPurchaseRule?
    /// The app on Google Play; none: Google's purchases are refused.
    package var googlePlay: GooglePlaySettings?
    /// What Apple's realtime retention requests are answered with; none: they are refused and
    /// Apple shows its default message.
    package var retention: RetentionSettings?
    /// Whether the ledger finishes each recorded purchase at Apple (Finish Transaction), for an
    /// app that grants content from the server rather than calling finish() in the app.
    package var serverFinishesTransactions: Bool?

    package init(
        environments: [AppleEnvironment] = [.production, .sandbox], appleAppID: Int64? = nil, restorePolicy: RestorePolicy = .transfer,
        consumptionPolicy: ConsumptionPolicy? = nil, appPurchase: AppPurchaseRule? = nil, googlePlay: GooglePlaySettings? = nil,
        retention: RetentionSettings? = nil, serverFinishesTransactions: Bool? = nil
    ) {
        self.environments = environments
        self.appleAppID = appleAppID
        self.restorePolicy = restorePolicy
        self.consumptionPolicy = consumptionPolicy
        self.appPurchase = appPurchase
        self.googlePlay = googlePlay
        self.retention = retention
        self.serverFinishesTransactions = serverFinishesTransactions
    }
}

/// What the app declares for Apple's refund questions (CONSUMPTION_REQUEST). Apple accepts
/// consumption information only with the customer's consent, which the app collects: without
/// `customerConsented` nothing is sent.
package struct ConsumptionPolicy: Codable, Sendable, Equatable {
    package var customerConsented: Bool
    /// Apple's `refundPreference`: DECLINE, GRANT_FULL, GRANT_PRORATED; nil: no preference.
    package var refundPreference: String?
    /// Whether the app offered a free sample, trial or description of the content before purchase.
    package var sampleContentProvided: Bool

    package static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    package init(customerConsented: Bool, refundPreference: String? = nil, sampleContentProvided: Bool = false) {
        self.customerConsented = customerConsented
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

package struct RefundReversal: Codable, Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var signedDate: Date
    package init(transactionID: String, originalTransactionID: String, signedDate: Date) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.signedDate = signedDate
    }
}

package struct Claim: Codable, Sendable, Equatable {
    package var originalTransactionID: String
    package var userID: String
    package init(originalTransactionID: String, userID: String) {
        self.originalTransactionID = originalTransactionID
        self.userID = userID
    }
}

package struct Transfer: Codable, Sendable, Equatable {
    package var originalTransactionID: String
    package var fromUserID: String
    package var toUserID: String
    /// Why it moved: absent for a restore decided by the app's policy, `merged` when two accounts
    /// of one person became one.
    package var reason: String?
    package init(originalTransactionID: String, fromUserID: String, toUserID: String, reason: String? = nil) {
        self.originalTransactionID = originalTransactionID
        self.fromUserID = fromUserID
        self.toUserID = toUserID
        self.reason = reason
    }
}

/// One side of currency moved between accounts: `amount` is what it adds to `userID`'s balance
/// (negative on the account it left, which may move a debt as well as a credit).
package struct BalanceMove: Codable, Sendable, Equatable {
    package var userID: String
    package var counterpartUserID: String
    package var currency: String
    package var amount: Int64
    package var reason: String
    package init(userID: String, counterpartUserID: String, currency: String, amount: Int64, reason: String) {
        self.userID = userID
        self.counterpartUserID = counterpartUserID
        self.currency = currency
        self.amount = amount
        self.reason = reason
    }
}

package struct Consumption: Codable, Sendable, Equatable {
    package var userID: String
    package var currency: String
    package var amount: Int64
    package var idempotencyKey: String
    /// What it was spent on, in the game's words ("sword", "revive"); absent in spends recorded
    /// before spends carried one.
    package var reason: String?
    /// The game's own id of what it bought, for "what did the 120 gems buy?".
    package var reference: String?
    package init(userID: String, currency: String, amount: Int64, idempotencyKey: String, reason: String? = nil, reference: String? = nil) {
        self.userID = userID
        self.currency = currency
        self.amount = amount
        self.idempotencyKey = idempotencyKey
        self.reason = reason
        self.reference = reference
    }
}

package struct PromotionalGrant: Codable, Sendable, Equatable {
    package var grantID: String
    package var userID: String
    package var entitlement: String
    package var startsAt: Date
    /// Nil: until revoked.
    package var expiresAt: Date?
    package var reason: String
    /// Who granted it: the API key's name (console or API). Absent in grants recorded before it was kept.
    package var actor: String?
    package init(
        grantID: String, userID: String, entitlement: String, startsAt: Date, expiresAt: Date?, reason: String, actor: String? = nil
    ) {
        self.grantID = grantID
        self.userID = userID
        self.entitlement = entitlement
        self.startsAt = startsAt
        self.expiresAt = expiresAt
        self.reason = reason
        self.actor = actor
    }
}

package struct PromotionalRevocation: Codable, Sendable, Equatable {
    package var grantID: String
    package var userID: String
    package var reason: String
    /// Who revoked it: the API key's name.
    package var actor: String?
    package init(grantID: String, userID: String, reason: String, actor: String? = nil) {
        self.grantID = grantID
        self.userID = userID
        self.reason = reason
        self.actor = actor
    }
}

/// What an erasure did, kept on the pseudonym's stream (`user:<bundle>:erased:…`): never the id
/// nor the tokens it replaced.
package struct UserErasure: Codable, Sendable, Equatable {
    /// The pseudonym that now stands for the user everywhere (`ErasedUser`).
    package var userID: String
    /// The API key's name (or `cli`).
    package var actor: String
    /// How many appAccountTokens were replaced by pseudonymous ones.
    package var tokens: Int
    package var eventsRewritten: Int
    package var evidenceShredded: Int
    /// Each stream re-chained: its head hash (hex) before and after, so a head kept elsewhere can
    /// be followed to the new one.
    package var rechained: [Rechained]

    package struct Rechained: Codable, Sendable, Equatable {
        package var stream: String
        package var before: String
        package var after: String
        package init(stream: String, before: String, after: String) {
            self.stream = stream
            self.before = before
            self.after = after
        }
    }

    package init(userID: String, actor: String, tokens: Int, eventsRewritten: Int, evidenceShredded: Int, rechained: [Rechained]) {
        self.userID = userID
        self.actor = actor
        self.tokens = tokens
        self.eventsRewritten = eventsRewritten
        self.evidenceShredded = evidenceShredded
        self.rechained = rechained
    }
}

/// The pseudonyms that stand for erased users: `erased:` and 32 random hex digits. The prefix is
/// refused in the user ids clients send, so a pseudonym is never a live account.
package enum ErasedUser {
    package static let prefix = "erased:"

    package static func isPseudonym(_ userID: String) -> Bool { userID.hasPrefix(prefix) }

    package static func makePseudonym() -> String {
        var generator = SystemRandomNumberGenerator()
        return prefix + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

package struct AppleNotification: Codable, Sendable, Equatable {
    /// "1" (legacy server notifications) or "2".
    package var version: String
    package var notificationType: String
    package var subtype: String?
    package var notificationUUID: String?
    package var environment: AppleEnvironment?
    package var originalTransactionID: String?
    package var signedDate: Date?
    /// The app transaction a RESCIND_CONSENT (or any `appData` body) is about.
    package var appTransactionID: String?
    /// A mass renewal extension's outcome (RENEWAL_EXTENSION / SUMMARY).
    package var summary: ExtensionSummary?
    /// A token of a purchase made outside the App Store (EXTERNAL_PURCHASE_TOKEN).
    package var externalPurchaseToken: ExternalPurchaseToken?

    package init(
        version: String, notificationType: String, subtype: String? = nil, notificationUUID: String? = nil,
        environment: AppleEnvironment? = nil, originalTransactionID: String? = nil, signedDate: Date? = nil,
        appTransactionID: String? = nil, summary: ExtensionSummary? = nil, externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        self.version = version
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.signedDate = signedDate
        self.appTransactionID = appTransactionID
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
    }
}

/// What Apple reports when it finished extending every active subscriber of a product.
package struct ExtensionSummary: Codable, Sendable, Equatable {
    /// The `request_id` the extension was asked with.
    package var requestIdentifier: String
    package var productID: String?
    /// Storefronts the extension was limited to (ISO 3166-1 alpha-3); empty: all.
    package var storefrontCountryCodes: [String]
    package var succeededCount: Int64?
    package var failedCount: Int64?

    package init(
        requestIdentifier: String, productID: String?, storefrontCountryCodes: [String] = [], succeededCount: Int64?, failedCount: Int64?
    ) {
        self.requestIdentifier = requestIdentifier
        self.productID = productID
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// An external purchase token Apple tells the app's server about (alternative payment
/// providers): kept so the app can report the purchase to Apple.
package struct ExternalPurchaseToken: Codable, Sendable, Equatable {
    /// Sandbox tokens start with `SANDBOX`.
    package var externalPurchaseID: String
    package var tokenCreationDate: Date?

    package init(externalPurchaseID: String, tokenCreationDate: Date?) {
        self.externalPurchaseID = externalPurchaseID
        self.tokenCreationDate = tokenCreationDate
    }
}

/// Consent for a child's use of the app withdrawn by a parent or guardian, as of `rescindedAt`
/// (when Apple signed the notification).
package struct ConsentRescission: Codable, Sendable, Equatable {
    package var appTransactionID: String
    package var environment: AppleEnvironment
    package var rescindedAt: Date
    /// The notification that said so.
    package var notificationUUID: String?

    package init(appTransactionID: String, environment: AppleEnvironment, rescindedAt: Date, notificationUUID: String?) {
        self.appTransactionID = appTransactionID
        self.environment = environment
        self.rescindedAt = rescindedAt
        self.notificationUUID = notificationUUID
    }
}

/// The consumption information sent to Apple for one CONSUMPTION_REQUEST, as Apple received it.
package struct ConsumptionAnswer: Codable, Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    /// The request answered (Apple's notificationUUID).
    package var notificationUUID: String
    package var environment: AppleEnvironment
    package var customerConsented: Bool
    /// Thousandths of a percent consumed (0…100,000); nil: not stated.
    package var consumptionPercentage: Int?
    /// DELIVERED or UNDELIVERED_OTHER (nobody in this ledger owns the purchase).
    package var deliveryStatus: String
    package var refundPreference: String?
    package var sampleContentProvided: Bool
    package var sentAt: Date

    package init(
        transactionID: String, originalTransactionID: String, notificationUUID: String, environment: AppleEnvironment,
        customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: String, refundPreference: String?,
        sampleContentProvided: Bool, sentAt: Date
    ) {
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
