import Foundation

/// The app's own purchase (StoreKit's AppTransaction) on one Apple account, presented for one
/// user of the game. Only what stays true of that purchase is kept — not when the app last
/// fetched it, nor the version it runs today — so presenting it again records nothing.
package struct AppTransactionFacts: Codable, Sendable, Equatable {
    package var userID: String
    /// Apple's id of the app's purchase on the account; every in-app transaction made in the app
    /// carries it (iOS 18.4+). Older AppTransactions have none.
    package var appTransactionID: String?
    package var environment: AppleEnvironment
    /// The version the account first bought or downloaded (CFBundleVersion on iOS, the build).
    package var originalApplicationVersion: String?
    package var originalPurchaseDate: Date?
    package var preorderDate: Date?
    package var originalPlatform: String?

    package init(
        userID: String, appTransactionID: String?, environment: AppleEnvironment, originalApplicationVersion: String?,
        originalPurchaseDate: Date?, preorderDate: Date? = nil, originalPlatform: String? = nil
    ) {
        self.userID = userID
        self.appTransactionID = appTransactionID
        self.environment = environment
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.preorderDate = preorderDate
        self.originalPlatform = originalPlatform
    }
}

/// An app that went from paid to free keeps its early buyers' access: users whose original
/// purchase of the app came before a version, or before a date, hold these entitlements.
package struct AppPurchaseRule: Codable, Sendable, Equatable {
    package var entitlements: [String]
    /// Bought (or first downloaded) a version before this one: "2.0", or a build number.
    package var originallyBeforeVersion: String?
    package var originallyPurchasedBefore: Date?

    package init(entitlements: [String], originallyBeforeVersion: String? = nil, originallyPurchasedBefore: Date? = nil) {
        self.entitlements = entitlements
        self.originallyBeforeVersion = originallyBeforeVersion
        self.originallyPurchasedBefore = originallyPurchasedBefore
    }

    /// Either condition given suffices; a rule with neither covers nobody.
    package func covers(_ purchase: AppTransactionFacts) -> Bool {
        if let before = originallyBeforeVersion, let version = purchase.originalApplicationVersion,
            Self.compare(version, before) == .orderedAscending
        {
            return true
        }
        if let before = originallyPurchasedBefore, let bought = purchase.originalPurchaseDate, bought < before { return true }
        return false
    }

    /// Versions compared part by part, numbers as numbers ("1.10" after "1.9", "1.4" before "2.0",
    /// "2" equal to "2.0"); a part that is not a number compares as text.
    package static func compare(_ a: String, _ b: String) -> ComparisonResult {
        let left = a.split(separator: ".", omittingEmptySubsequences: false),
            right = b.split(separator: ".", omittingEmptySubsequences: false)
        for index in 0..<max(left.count, right.count) {
            let x = index < left.count ? left[index] : "0", y = index < right.count ? right[index] : "0"
            if let m = Int(x), let n = Int(y) {
                if m != n { return m < n ? .orderedAscending : .orderedDescending }
            } else if x != y {
                return x < y ? .orderedAscending : .orderedDescending
            }
        }
        return .orderedSame
    }
}

/// The user's own purchase of the app as the user's state shows it: the earliest the user presented.
package struct AppPurchaseSummary: Codable, Sendable, Equatable {
    package var appTransactionID: String?
    package var environment: AppleEnvironment
    package var originalApplicationVersion: String?
    package var originalPurchaseDate: Date?
    package var originalPlatform: String?

    package init(_ facts: AppTransactionFacts) {
        appTransactionID = facts.appTransactionID
        environment = facts.environment
        originalApplicationVersion = facts.originalApplicationVersion
        originalPurchaseDate = facts.originalPurchaseDate
        originalPlatform = facts.originalPlatform
    }
}

/// A signature the ledger issued with the app's In-App Purchase key for one user — a promotional
/// offer (StoreKit 2's JWS or the legacy SKPaymentDiscount) or an introductory-offer eligibility —
/// kept so that support and finance can tell who was offered what, when and why.
package struct OfferSignature: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case promotionalOffer = "promotional_offer"
        case promotionalOfferLegacy = "promotional_offer_legacy"
        case introductoryEligibility = "introductory_offer_eligibility"
    }
    package var userID: String
    package var kind: Kind
    package var productID: String
    package var offerID: String?
    /// Introductory eligibility: what the signature tells StoreKit.
    package var eligible: Bool?
    /// The signature's nonce: StoreKit accepts each once.
    package var nonce: String
    package var transactionID: String?
    package var keyID: String
    package var signedAt: Date
    /// Why the user was eligible (or, for an introductory offer, not).
    package var reason: String

    package init(
        userID: String, kind: Kind, productID: String, offerID: String?, eligible: Bool?, nonce: String, transactionID: String?,
        keyID: String, signedAt: Date, reason: String
    ) {
        self.userID = userID
        self.kind = kind
        self.productID = productID
        self.offerID = offerID
        self.eligible = eligible
        self.nonce = nonce
        self.transactionID = transactionID
        self.keyID = keyID
        self.signedAt = signedAt
        self.reason = reason
    }
}
