import Foundation

/// Which stream each fact belongs to. Streams are the unit of ordering and of optimistic
/// concurrency, so they follow who decides: the app's configuration, Apple's story of one original
/// transaction (notifications need no user to be recorded), and a user's own actions.
package enum LedgerStream {
    /// The first part of every stream name the domain writes (`kind:<bundle>[:<rest>]`): a stream
    /// of another kind is not the domain's.
    package static let kinds = ["app", "purchase", "user", "notifications", "consent"]

    package static func app(_ bundleID: String) -> String { "app:\(bundleID)" }
    package static func purchase(_ bundleID: String, originalTransactionID: String) -> String {
        "purchase:\(bundleID):\(originalTransactionID)"
    }
    package static func user(_ bundleID: String, userID: String) -> String { "user:\(bundleID):\(userID)" }
    /// Notifications that name no transaction (TEST, summaries, consent): kept per app.
    package static func notifications(_ bundleID: String) -> String { "notifications:\(bundleID)" }
    /// Consent rescinded for app transactions: few, and read with every user of the app (a user's
    /// state shows it when one of the user's purchases carries the app transaction).
    package static func consent(_ bundleID: String) -> String { "consent:\(bundleID)" }

    /// The app a stream belongs to: `kind:<bundle>[:<rest>]`, for the kinds above (bundle ids
    /// never contain colons); nil for a stream that is not the domain's. On the UTF-8 bytes: a
    /// rebuild asks this a million times, and splitting by Character (grapheme rules) showed in
    /// its profile.
    package static func bundleID(of stream: String) -> String? {
        let utf8 = stream.utf8
        guard let first = utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let kind = utf8[..<first]
        guard kindBytes.contains(where: { $0.elementsEqual(kind) }) else { return nil }
        let rest = utf8[utf8.index(after: first)...]
        return String(rest.prefix { $0 != UInt8(ascii: ":") })
    }

    private static let kindBytes = kinds.map { Array($0.utf8) }

    /// Whether a stream is one original transaction's: the streams whose writer decides ownership.
    package static func isPurchase(_ stream: String) -> Bool { stream.utf8.starts(with: "purchase:".utf8) }

    /// The SQL expression of `purchase(_:originalTransactionID:)` for two text expressions, for
    /// statements that find a user's purchase streams through the owners table.
    package static func purchaseSQL(bundle: String, originalTransactionID: String) -> String {
        "'purchase:' || \(bundle) || ':' || \(originalTransactionID)"
    }

    /// The SQL expression of `user(_:userID:)` for two text expressions.
    package static func userSQL(bundle: String, userID: String) -> String {
        "'user:' || \(bundle) || ':' || \(userID)"
    }

    /// The SQL pattern (`LIKE`) of every app's configuration stream.
    package static let appStreamsPattern = "app:%"

    package static func stream(of event: LedgerEvent, bundleID: String) -> String {
        switch event {
        case .appConfigured, .productConfigured, .currencyConfigured:
            return app(bundleID)
        case .consentRescinded:
            return consent(bundleID)
        case .transactionClaimed, .ownershipTransferred:
            return purchase(bundleID, originalTransactionID: event.originalTransactionID!)
        default:
            if let original = event.originalTransactionID { return purchase(bundleID, originalTransactionID: original) }
            if let userID = event.userID { return user(bundleID, userID: userID) }
            return notifications(bundleID)
        }
    }
}

extension LedgerEvent {
    /// The original transaction a fact is about, if any.
    package var originalTransactionID: String? {
        switch self {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t): t.originalTransactionID
        case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r): r.originalTransactionID
        case .refunded(let r), .revoked(let r): r.originalTransactionID
        case .refundReversed(let r): r.originalTransactionID
        case .transactionClaimed(let c): c.originalTransactionID
        case .ownershipTransferred(let t): t.originalTransactionID
        case .appleNotificationReceived(let n): n.originalTransactionID
        case .consumptionInformationSent(let a): a.originalTransactionID
        case .renewalExtended(let e): e.originalTransactionID
        case .appAccountTokenSent(let t): t.originalTransactionID
        default: nil
        }
    }

    /// The transaction Apple signed, for the facts that are one.
    package var transactionFacts: TransactionFacts? {
        switch self {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t): t
        default: nil
        }
    }

    /// The user a fact is by or about directly (not through a transaction).
    package var userID: String? {
        switch self {
        case .consumed(let c): c.userID
        case .currencyGranted(let g): g.userID
        case .spendReversed(let r): r.userID
        case .promotionalGranted(let g): g.userID
        case .promotionalRevoked(let r): r.userID
        case .userErased(let e): e.userID
        case .balanceMoved(let m): m.userID
        case .appTransactionRecorded(let a): a.userID
        case .offerSigned(let o): o.userID
        case .retentionDecided(let r): r.userID
        default: nil
        }
    }
}

extension LedgerEvent {
    /// Business time of a fact Apple stated: its signed date (evidence that carries none, like
    /// legacy receipts, is stamped with the time Apple stated it).
    package var appleSignedDate: Date? {
        switch self {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t): t.signedDate
        case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r): r.signedDate
        case .refunded(let r), .revoked(let r): r.signedDate
        case .refundReversed(let r): r.signedDate
        case .appleNotificationReceived(let n): n.signedDate
        case .consentRescinded(let c): c.rescindedAt
        case .appTransactionRecorded(let a): a.originalPurchaseDate ?? a.preorderDate
        default: nil
        }
    }
}
