import Foundation
import LedgerCore

/// Day n after a fixed instant: scenarios read as a calendar.
func day(_ n: Double) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + n * 86_400) }

/// A tiny DSL that records facts the way the ledger would, so each test reads like its rule.
struct Scenario {
    var ledger = AppLedger(bundleID: "com.example.app")
    private var sequence: Int64 = 0

    static let monthly = ProductDefinition(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"])
    static let yearly = ProductDefinition(productID: "pro.yearly", type: .autoRenewable, entitlements: ["pro"])
    static let premium = ProductDefinition(productID: "premium.monthly", type: .autoRenewable, entitlements: ["pro", "premium"])
    static let lifetime = ProductDefinition(productID: "lifetime", type: .nonConsumable, entitlements: ["pro", "lifetime"])
    static let coins = ProductDefinition(productID: "coins.100", type: .consumable, grants: ["coins": 100])
    static let season = ProductDefinition(productID: "season.pass", type: .nonRenewing, entitlements: ["season"], duration: ISODuration("P30D"))
    static let free = ProductDefinition(productID: "free.tier", type: .freeSubscription, entitlements: ["basic"])

    init(catalogue: [ProductDefinition] = [monthly, yearly, premium, lifetime, coins, season, free]) {
        for definition in catalogue { record(.productConfigured(definition), at: day(-100)) }
    }

    mutating func record(_ event: LedgerEvent, at date: Date) {
        sequence += 1
        ledger.apply(RecordedFact(event: event, occurredAt: date, sequence: sequence, evidence: "sha256:\(sequence)"))
    }

    func state(_ user: String = "alice", at date: Date) -> UserState { ledger.userState(user, at: date) }

    static func transaction(_ id: String, original: String? = nil, product: String, at date: Date, expires: Date? = nil,
                            quantity: Int = 1, price: Int64? = 4990, ownership: OwnershipType = .purchased,
                            upgraded: Bool = false, environment: AppleEnvironment = .production) -> TransactionFacts {
        TransactionFacts(environment: environment, transactionID: id, originalTransactionID: original ?? id, productID: product,
                         purchaseDate: date, expiresDate: expires, quantity: quantity, ownership: ownership, isUpgraded: upgraded,
                         price: price, currency: "EUR", storefront: "FRA", signedDate: date)
    }

    /// A first purchase, claimed by `user` at the same moment.
    mutating func buy(_ id: String, _ product: String, by user: String = "alice", at date: Date, expires: Date? = nil,
                      quantity: Int = 1, ownership: OwnershipType = .purchased, environment: AppleEnvironment = .production) {
        record(.purchased(Self.transaction(id, product: product, at: date, expires: expires, quantity: quantity,
                                           ownership: ownership, environment: environment)), at: date)
        record(.transactionClaimed(Claim(originalTransactionID: id, userID: user)), at: date)
    }

    mutating func renew(_ id: String, original: String, _ product: String, at date: Date, expires: Date, signed: Date? = nil) {
        var facts = Self.transaction(id, original: original, product: product, at: date, expires: expires)
        facts.signedDate = signed ?? date
        record(.renewed(facts), at: signed ?? date)
    }

    mutating func refund(_ id: String, original: String? = nil, at date: Date, kind: RevocationFacts.Kind = .refundFull,
                         percentage: Int? = nil, signed: Date? = nil) {
        let facts = RevocationFacts(environment: .production, transactionID: id, originalTransactionID: original ?? id,
                                    revocationDate: date, reason: 0, kind: kind, percentage: percentage, signedDate: signed ?? date)
        record(kind == .familyRevoke ? .revoked(facts) : .refunded(facts), at: signed ?? date)
    }

    mutating func renewalInfo(_ original: String, product: String = "pro.monthly", next: String? = nil, willRenew: Bool = true,
                              billingRetry: Bool = false, graceUntil: Date? = nil, intent: Int? = nil, at date: Date,
                              as make: (RenewalFacts) -> LedgerEvent = LedgerEvent.autoRenewChanged) {
        record(make(RenewalFacts(environment: .production, originalTransactionID: original, productID: product,
                                 autoRenewProductID: next, willAutoRenew: willRenew, expirationIntent: intent,
                                 isInBillingRetry: billingRetry, gracePeriodExpiresDate: graceUntil, signedDate: date)), at: date)
    }
}
