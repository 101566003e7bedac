import Foundation
import LedgerCore
import LedgerDomainTestSupport

/// A tiny DSL that records facts the way the ledger would, so each test reads like its rule.
struct Scenario {
    var ledger = AppLedger(bundleID: "com.example.app")
    private var sequence: Int64 = 0
    /// Everything recorded, in recording order.
    private(set) var facts: [RecordedFact] = []

    static let monthly = SampleCatalogue.monthly
    static let yearly = SampleCatalogue.yearly
    static let premium = SampleCatalogue.premium
    static let lifetime = SampleCatalogue.lifetime
    static let coins = SampleCatalogue.coins
    static let season = SampleCatalogue.season
    static let free = SampleCatalogue.free

    init(catalogue: [ProductDefinition] = [monthly, yearly, premium, lifetime, coins, season, free]) {
        for definition in catalogue { record(.productConfigured(definition), at: day(-100)) }
    }

    /// `recorded`: when it reached the ledger, if later than it happened (a late delivery).
    mutating func record(_ event: LedgerEvent, at date: Date, recorded: Date? = nil) {
        sequence += 1
        let fact = RecordedFact(event: event, occurredAt: date, recordedAt: recorded, sequence: sequence, evidence: "sha256:\(sequence)")
        facts.append(fact)
        ledger.apply(fact)
    }

    func state(_ user: String = "alice", at date: Date, knownAt: Date? = nil) -> UserState {
        ledger.userState(user, at: date, knownAt: knownAt)
    }

    static func transaction(
        _ id: String, original: String? = nil, product: String, at date: Date, expires: Date? = nil,
        quantity: Int = 1, ownership: OwnershipType = .purchased, upgraded: Bool = false,
        environment: AppleEnvironment = .production
    ) -> TransactionFacts {
        SampleCatalogue.transaction(
            id, original: original, product: product, at: date, expires: expires, quantity: quantity,
            ownership: ownership, upgraded: upgraded, environment: environment)
    }

    /// A first purchase, claimed by `user` at the same moment.
    mutating func buy(
        _ id: String, _ product: String, by user: String = "alice", at date: Date, expires: Date? = nil,
        quantity: Int = 1, ownership: OwnershipType = .purchased, environment: AppleEnvironment = .production
    ) {
        record(
            .purchased(
                Self.transaction(
                    id, product: product, at: date, expires: expires, quantity: quantity,
                    ownership: ownership, environment: environment)), at: date)
        record(.transactionClaimed(Claim(originalTransactionID: id, userID: user)), at: date)
    }

    mutating func renew(_ id: String, original: String, _ product: String, at date: Date, expires: Date, signed: Date? = nil) {
        var facts = Self.transaction(id, original: original, product: product, at: date, expires: expires)
        facts.signedDate = signed ?? date
        record(.renewed(facts), at: signed ?? date)
    }

    mutating func refund(
        _ id: String, original: String? = nil, at date: Date, kind: RevocationFacts.Kind = .refundFull,
        percentage: Int? = nil, signed: Date? = nil
    ) {
        let facts = RevocationFacts(
            environment: .production, transactionID: id, originalTransactionID: original ?? id,
            revocationDate: date, reason: 0, kind: kind, percentage: percentage, signedDate: signed ?? date)
        record(kind == .familyRevoke ? .revoked(facts) : .refunded(facts), at: signed ?? date)
    }

    mutating func renewalInfo(
        _ original: String, product: String = "pro.monthly", next: String? = nil, willRenew: Bool = true,
        billingRetry: Bool = false, graceUntil: Date? = nil, intent: Int? = nil, at date: Date,
        as make: (RenewalFacts) -> LedgerEvent = LedgerEvent.autoRenewChanged
    ) {
        record(
            make(
                RenewalFacts(
                    environment: .production, originalTransactionID: original, productID: product,
                    autoRenewProductID: next, willAutoRenew: willRenew, expirationIntent: intent,
                    isInBillingRetry: billingRetry, gracePeriodExpiresDate: graceUntil, signedDate: date)), at: date)
    }
}
