import Foundation
import LedgerCore

/// Day n after a fixed instant: scenarios read as a calendar.
package func day(_ n: Double) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + n * 86_400) }

/// The sample app's products, shared by the domain tests and the projection tests.
package enum SampleCatalogue {
    package static let monthly = ProductDefinition(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"])
    package static let yearly = ProductDefinition(productID: "pro.yearly", type: .autoRenewable, entitlements: ["pro"])
    package static let premium = ProductDefinition(productID: "premium.monthly", type: .autoRenewable, entitlements: ["pro", "premium"])
    package static let lifetime = ProductDefinition(productID: "lifetime", type: .nonConsumable, entitlements: ["pro", "lifetime"])
    package static let coins = ProductDefinition(productID: "coins.100", type: .consumable, grants: ["coins": 100])
    package static let season = ProductDefinition(
        productID: "season.pass", type: .nonRenewing, entitlements: ["season"], duration: ISODuration("P30D"))
    package static let free = ProductDefinition(productID: "free.tier", type: .freeSubscription, entitlements: ["basic"])
    /// A subscription that grants gems for each period paid (trials too).
    package static let vip = ProductDefinition(
        productID: "vip.monthly", type: .autoRenewable, entitlements: ["vip"], grants: ["gems": 500], grantsOnOffers: true)
    /// Gems: each grant lasts 20 days.
    package static let gems = CurrencyDefinition(code: "gems", name: "Gems", expiresAfter: ISODuration("P20D"))
    package static let all = [monthly, yearly, premium, lifetime, coins, season, free, vip]

    package static func transaction(
        _ id: String, original: String? = nil, product: String, at date: Date, expires: Date? = nil,
        quantity: Int = 1, price: Int64? = 4990, ownership: OwnershipType = .purchased,
        upgraded: Bool = false, environment: AppleEnvironment = .production
    ) -> TransactionFacts {
        TransactionFacts(
            environment: environment, transactionID: id, originalTransactionID: original ?? id, productID: product,
            purchaseDate: date, expiresDate: expires, quantity: quantity, ownership: ownership, isUpgraded: upgraded,
            price: price, currency: "EUR", storefront: "FRA", signedDate: date)
    }
}

/// SplitMix64: a tiny seeded generator, so a failing history is reproduced from its seed.
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64
    package init(state: UInt64) { self.state = state }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A random but plausible history of one app: every product type, renewals, refunds and their
/// reversals, billing retry with and without grace, auto-renew changes, transfers, promotional
/// grants, a catalogue change, raw notifications, and consumptions *decided* against the state at
/// their time, as the server would. Business times are distinct and increase in generation order.
package struct RandomHistory {
    package static let users = ["u1", "u2", "u3"]
    package private(set) var facts: [RecordedFact] = []
    private var rng: SplitMix64
    private var clock = day(0)
    private var ledger = AppLedger(bundleID: "com.example.app")
    private var originals: [(id: String, product: ProductDefinition, owner: String)] = []
    private var transactions: [(id: String, original: String)] = []
    private var refunded: [(id: String, original: String)] = []
    private var grants: [(id: String, user: String)] = []
    private var spends: [(key: String, user: String)] = []
    private var counter = 0

    package init(seed: UInt64, steps: Int) {
        rng = SplitMix64(state: seed)
        for definition in [
            SampleCatalogue.monthly, SampleCatalogue.yearly, SampleCatalogue.premium, SampleCatalogue.lifetime, SampleCatalogue.coins,
            SampleCatalogue.season,
            SampleCatalogue.free, SampleCatalogue.vip,
        ] {
            record(.productConfigured(definition), at: day(-100))
        }
        record(.currencyConfigured(SampleCatalogue.gems), at: day(-100))
        // The app was paid before version 2: its buyers keep `founder`.
        record(
            .appConfigured(AppSettings(appPurchase: AppPurchaseRule(entitlements: ["founder"], originallyBeforeVersion: "2.0"))),
            at: day(-100))
        for _ in 0..<steps { step() }
    }

    private mutating func next() -> String {
        counter += 1
        return "x\(counter)"
    }

    private mutating func record(_ event: LedgerEvent, at date: Date? = nil) {
        let at = date ?? clock
        let fact = RecordedFact(event: event, occurredAt: at, sequence: Int64(facts.count + 1), evidence: "sha256:\(facts.count)")
        facts.append(fact)
        ledger.apply(fact)
    }

    private mutating func step() {
        clock += Double(Int.random(in: 1...300, using: &rng)) * 3_600 // 1 hour … 12.5 days, always forward
        let user = Self.users.randomElement(using: &rng)!
        switch Int.random(in: 0..<15, using: &rng) {
        case 13, 14: gems(user)
        case 0, 1, 2: buy(user)
        case 3, 4: renew()
        case 5: refund()
        case 6: reverseRefund()
        case 7: renewalChange()
        case 8, 9: consume(user)
        case 10: grantOrRevoke(user)
        case 12: rescindConsent()
        default: transferOrReconfigure(user)
        }
    }

    private mutating func buy(_ user: String) {
        let product = [
            SampleCatalogue.monthly, SampleCatalogue.yearly, SampleCatalogue.premium, SampleCatalogue.lifetime, SampleCatalogue.coins,
            SampleCatalogue.coins,
            SampleCatalogue.season, SampleCatalogue.free, SampleCatalogue.vip,
        ]
        .randomElement(using: &rng)!
        let id = next()
        let expires = product.type == .autoRenewable ? clock + (product.productID == "pro.yearly" ? 365 : 30) * 86_400 : nil
        var facts = SampleCatalogue.transaction(
            id, product: product.productID, at: clock, expires: expires, quantity: Int.random(in: 1...3, using: &rng))
        // Each user buys in their own copy of the app, but a transfer hands a purchase (and its
        // app transaction) to another user.
        facts.appTransactionID = "app-\(user)"
        if counter % 4 == 1 { // now and then the app's own purchase too, early or late (no draw)
            record(
                .appTransactionRecorded(
                    AppTransactionFacts(
                        userID: user, appTransactionID: "app-\(user)", environment: .production,
                        originalApplicationVersion: counter % 8 == 1 ? "1.\(counter)" : "2.\(counter)",
                        originalPurchaseDate: clock - 86_400)))
        }
        if counter % 3 == 0 { // every third purchase with an introductory offer (no draw: the histories stay as they were)
            facts.offerType = 1
            facts.offerIdentifier = "intro-\(product.productID)"
            facts.offerDiscountType = "FREE_TRIAL"
        }
        if Bool.random(using: &rng) {
            // The notification first, the app's claim a little later (or never).
            record(
                .appleNotificationReceived(
                    AppleNotification(
                        version: "2", notificationType: "SUBSCRIBED", notificationUUID: next(),
                        originalTransactionID: id, signedDate: clock)))
        }
        record(.purchased(facts))
        originals.append((id, product, user))
        transactions.append((id, id))
        if Int.random(in: 0..<5, using: &rng) > 0 {
            record(.transactionClaimed(Claim(originalTransactionID: id, userID: user)), at: clock + 60)
            clock += 60
        }
    }

    /// A parent withdraws consent for one copy of the app (sometimes one nobody bought in yet).
    private mutating func rescindConsent() {
        let copy = "app-" + (Self.users + ["u9"]).randomElement(using: &rng)!
        record(
            .consentRescinded(
                ConsentRescission(appTransactionID: copy, environment: .production, rescindedAt: clock, notificationUUID: next())))
    }

    private mutating func renew() {
        guard let original = originals.filter({ $0.product.type == .autoRenewable }).randomElement(using: &rng) else { return }
        let id = next()
        let product =
            original.product.productID == SampleCatalogue.vip.productID
            ? original.product.productID : [original.product.productID, "premium.monthly", "pro.monthly"].randomElement(using: &rng)!
        let recovered = Int.random(in: 0..<4, using: &rng) == 0
        let facts = SampleCatalogue.transaction(id, original: original.id, product: product, at: clock, expires: clock + 30 * 86_400)
        record(recovered ? .recovered(facts) : .renewed(facts))
        transactions.append((id, original.id))
    }

    private mutating func refund() {
        guard let transaction = transactions.randomElement(using: &rng) else { return }
        let kind: RevocationFacts.Kind = [.refundFull, .refundProrated, .familyRevoke].randomElement(using: &rng)!
        let facts = RevocationFacts(
            environment: .production, transactionID: transaction.id, originalTransactionID: transaction.original,
            revocationDate: clock - 3_600, kind: kind, percentage: kind == .refundProrated ? 40_000 : nil, signedDate: clock)
        record(kind == .familyRevoke ? .revoked(facts) : .refunded(facts))
        refunded.append(transaction)
    }

    private mutating func reverseRefund() {
        guard let transaction = refunded.randomElement(using: &rng) else { return }
        record(
            .refundReversed(RefundReversal(transactionID: transaction.id, originalTransactionID: transaction.original, signedDate: clock)))
    }

    private mutating func renewalChange() {
        guard let original = originals.filter({ $0.product.type == .autoRenewable }).randomElement(using: &rng) else { return }
        let retry = Bool.random(using: &rng)
        let facts = RenewalFacts(
            environment: .production, originalTransactionID: original.id, productID: original.product.productID,
            autoRenewProductID: Bool.random(using: &rng) ? "pro.monthly" : nil, willAutoRenew: Bool.random(using: &rng),
            expirationIntent: retry ? 2 : nil, isInBillingRetry: retry,
            gracePeriodExpiresDate: retry && Bool.random(using: &rng) ? clock + 6 * 86_400 : nil, signedDate: clock)
        let events: [(RenewalFacts) -> LedgerEvent] = [
            LedgerEvent.autoRenewChanged, LedgerEvent.renewalFailed, LedgerEvent.expired, LedgerEvent.renewalPreferenceChanged,
        ]
        record(events.randomElement(using: &rng)!(facts))
    }

    private mutating func consume(_ user: String) {
        let balance = ledger.userState(user, at: clock).balances["coins"] ?? 0
        let request = Consumption(userID: user, currency: "coins", amount: Int64.random(in: 1...250, using: &rng), idempotencyKey: next())
        if case .success(let accepted) = Decide.consumption(request, balance: balance) { record(.consumed(accepted)) }
    }

    /// The game server's side of gems: a grant (now and then expiring sooner than the currency's
    /// policy), a spend decided against the balance at its time, or a spend taken back.
    private mutating func gems(_ user: String) {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0:
            let expires: Date? = Bool.random(using: &rng) ? clock + Double(Int.random(in: 1...10, using: &rng)) * 86_400 : nil
            record(
                .currencyGranted(
                    CurrencyGrant(
                        grantID: next(), userID: user, currency: "gems", amount: Int64.random(in: 10...300, using: &rng), reason: "event",
                        expiresAt: expires)))
        case 1:
            let balance = ledger.userState(user, at: clock).balances["gems"] ?? 0
            let request = Consumption(
                userID: user, currency: "gems", amount: Int64.random(in: 1...400, using: &rng), idempotencyKey: next(), reason: "item",
                reference: "sku-\(counter)")
            if case .success(let accepted) = Decide.consumption(request, balance: balance) {
                record(.consumed(accepted))
                spends.append((accepted.idempotencyKey, user))
            }
        default:
            guard let spend = spends.randomElement(using: &rng) else { return }
            record(.spendReversed(SpendReversal(userID: spend.user, idempotencyKey: spend.key, reason: "item refunded")))
        }
    }

    private mutating func grantOrRevoke(_ user: String) {
        if let grant = grants.randomElement(using: &rng), Bool.random(using: &rng) {
            record(.promotionalRevoked(PromotionalRevocation(grantID: grant.id, userID: grant.user, reason: "support")))
        } else {
            let id = next()
            let expires: Date? = Bool.random(using: &rng) ? clock + Double(Int.random(in: 1...40, using: &rng)) * 86_400 : nil
            record(
                .promotionalGranted(
                    PromotionalGrant(
                        grantID: id, userID: user, entitlement: ["pro", "vip"].randomElement(using: &rng)!,
                        startsAt: clock, expiresAt: expires, reason: "goodwill")))
            grants.append((id, user))
        }
    }

    private mutating func transferOrReconfigure(_ user: String) {
        if Bool.random(using: &rng), let index = originals.indices.randomElement(using: &rng) {
            let original = originals[index]
            guard let owner = ledger.owner(of: original.id, at: clock), owner != user else { return }
            record(.ownershipTransferred(Transfer(originalTransactionID: original.id, fromUserID: owner, toUserID: user)))
        } else {
            record(
                .productConfigured(
                    ProductDefinition(productID: "coins.100", type: .consumable, grants: ["coins": Int64.random(in: 50...200, using: &rng)])
                ))
        }
    }

    /// Instants worth asking about: every fact's time, and between them.
    package var instants: [Date] {
        let times = facts.map(\.occurredAt).filter { $0 >= day(0) }
        return Array(Set(times + times.map { $0 + 1_800 } + [day(-1), clock + 400 * 86_400])).sorted()
    }
}

extension Array {
    /// About `n` evenly spaced elements and the last, to keep the instants a test checks bounded.
    package func striding(_ n: Int) -> [Element] {
        guard !isEmpty else { return [] }
        var result = stride(from: 0, to: count, by: Swift.max(1, count / n)).map { self[$0] }
        result.append(self[count - 1])
        return result
    }
}
