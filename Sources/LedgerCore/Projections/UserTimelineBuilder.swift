import Foundation

/// Turns the histories a user owns, and the user's own facts, into a `UserTimeline`: the periods
/// of access and the balance entries they imply. The rules of the subscription lifecycle live
/// here, one function per product type; nothing here depends on the instant being asked about.
struct UserTimelineBuilder {
    let userID: String
    let catalogue: Catalogue
    /// What buying the app grants, if the app says.
    let appPurchaseRule: AppPurchaseRule?
    private var appPurchase: AppPurchaseSummary?
    private var periods: [AccessPeriod] = []
    private var entries: [BalanceEntry] = []
    private var subscriptions: [SubscriptionTimeline] = []
    private var purchases: [PurchaseSummary] = []
    /// Non-renewing purchases per product, stacked once all are known.
    private var nonRenewing: [String: [(TransactionFacts, revokedAt: Date?, ProductDefinition)]] = [:]

    init(userID: String, catalogue: Catalogue, appPurchase: AppPurchaseRule? = nil) {
        self.userID = userID
        self.catalogue = catalogue
        self.appPurchaseRule = appPurchase
    }

    mutating func add(_ history: TransactionHistory) {
        for transaction in history.ordered {
            let first = periods.count
            let definition = catalogue.definition(
                of: transaction.productID, in: transaction.store ?? .appStore, at: transaction.purchaseDate)
            let revokedAt = history.revocationDate(of: transaction)
            switch definition?.type {
            case .autoRenewable?,
                nil where transaction.expiresDate != nil:
                addSubscriptionPeriod(transaction, definition: definition, history: history)
                // Each paid period grants its currencies; a trial or offer period only if the
                // product says so. A refund of that period takes its share back.
                if let definition, transaction.offerType == nil || definition.grantsOnOffers == true {
                    let first = transaction.transactionID == transaction.originalTransactionID
                    addCredits(transaction, definition, history.refundShares(of: transaction), origin: first ? .purchase : .renewal)
                }
            case .nonRenewing?:
                nonRenewing[transaction.productID, default: []].append((transaction, revokedAt, definition!))
                addPurchase(transaction, definition, revokedAt)
            case .consumable?:
                addCredits(transaction, definition!, history.refundShares(of: transaction), origin: .purchase)
                addPurchase(transaction, definition, revokedAt)
            case .nonConsumable?, .freeSubscription?:
                periods.append(period(transaction, definition!.entitlements, start: transaction.purchaseDate, end: nil))
                addPurchase(transaction, definition, revokedAt)
            case nil:
                addPurchase(transaction, nil, revokedAt) // unknown product: listed, grants nothing
            }
            Self.open(&periods, from: first, gaps: history.gaps(of: transaction))
        }
        summarizeSubscription(history)
    }

    /// Takes the stretches without access (a refund until its reversal) out of the periods added
    /// for one transaction — grace periods included — splitting a period a reversed refund
    /// interrupted.
    static func open(_ periods: inout [AccessPeriod], from first: Int, gaps: [(from: Date, until: Date?)]) {
        guard !gaps.isEmpty, first < periods.count else { return }
        var pieces: [AccessPeriod] = []
        for period in periods[first...] {
            var remaining = [period]
            for gap in gaps {
                remaining = remaining.flatMap { piece in cut(piece, by: gap) }
            }
            pieces += remaining
        }
        periods.replaceSubrange(first..., with: pieces)
    }

    /// What is left of `piece` around `gap`: the part before it and the part after it.
    private static func cut(_ piece: AccessPeriod, by gap: (from: Date, until: Date?)) -> [AccessPeriod] {
        var result: [AccessPeriod] = []
        // A refund that stands ends the period at its date (even one dated before the purchase:
        // the period is then empty, as it always was); a reversed one only cuts what it overlaps.
        if piece.start < gap.from || gap.until == nil {
            var before = piece
            before.end = min(piece.end ?? gap.from, gap.from)
            before.gracePeriodEnd = piece.gracePeriodEnd.flatMap { grace in min(grace, gap.from) > before.end! ? min(grace, gap.from) : nil
            }
            result.append(before)
        }
        if let until = gap.until, piece.effectiveEnd.map({ until < $0 }) ?? true {
            // Access resumes at the reversal, in what is left of the period or of its grace.
            var after = piece
            after.start = max(piece.start, until)
            result.append(after)
        }
        return result
    }

    mutating func add(userFacts: [RecordedFact]) {
        var grants: [String: PromotionalGrant] = [:]
        var spends: [String: Consumption] = [:]
        for fact in userFacts {
            switch fact.event {
            case .consumed(let c):
                spends[c.idempotencyKey] = c
                entries.append(
                    BalanceEntry(
                        kind: .debit, currency: c.currency, amount: c.amount, at: fact.occurredAt, reference: c.idempotencyKey,
                        origin: .spend, reason: c.reason, detail: c.reference))
            case .currencyGranted(let grant):
                let policy = catalogue.currency(grant.currency, at: fact.occurredAt)
                entries.append(
                    BalanceEntry(
                        kind: .credit, currency: grant.currency, amount: grant.amount, at: fact.occurredAt,
                        reference: "grant:\(grant.grantID)",
                        expiresAt: policy?.expiry(ofGrantAt: fact.occurredAt, own: grant.expiresAt) ?? grant.expiresAt, origin: .grant,
                        reason: grant.reason))
            case .spendReversed(let reversal):
                if let spend = spends.removeValue(forKey: reversal.idempotencyKey) {
                    entries.append(
                        BalanceEntry(
                            kind: .credit, currency: spend.currency, amount: spend.amount, at: fact.occurredAt,
                            reference: reversal.idempotencyKey, origin: .spendReversed, reason: reversal.reason))
                }
            case .balanceMoved(let move) where move.amount != 0:
                entries.append(
                    BalanceEntry(
                        kind: move.amount > 0 ? .credit : .debit, currency: move.currency, amount: Int64(clamping: move.amount.magnitude),
                        at: fact.occurredAt, reference: "\(move.reason):\(move.counterpartUserID)", origin: .moved))
            case .promotionalGranted(let grant):
                grants[grant.grantID] = grant
            case .promotionalRevoked(let revocation):
                if let grant = grants[revocation.grantID] {
                    // Access ends when support revoked it; what was granted before stays in history.
                    var ended = grant
                    ended.expiresAt = min(grant.expiresAt ?? fact.occurredAt, fact.occurredAt)
                    grants[revocation.grantID] = ended
                }
            case .appTransactionRecorded(let purchase):
                addAppPurchase(purchase, at: fact.occurredAt)
            default: break
            }
        }
        for grant in grants.values {
            periods.append(
                AccessPeriod(
                    entitlements: [grant.entitlement], productID: "promotional:\(grant.grantID)",
                    originalTransactionID: nil, transactionID: nil, start: grant.startsAt,
                    end: grant.expiresAt, source: .promotional))
        }
    }

    /// The app bought on an Apple account: shown as the user's app purchase (the earliest, if the
    /// user presented several accounts'), and under the app's rule a lifetime of its entitlements
    /// from when it was bought.
    private mutating func addAppPurchase(_ purchase: AppTransactionFacts, at date: Date) {
        let bought = purchase.originalPurchaseDate ?? purchase.preorderDate ?? date
        if appPurchase.map({ ($0.originalPurchaseDate ?? .distantFuture) > bought }) ?? true { appPurchase = AppPurchaseSummary(purchase) }
        guard let rule = appPurchaseRule, !rule.entitlements.isEmpty, rule.covers(purchase) else { return }
        periods.append(
            AccessPeriod(
                entitlements: rule.entitlements, productID: "app:" + (purchase.originalApplicationVersion ?? "?"),
                originalTransactionID: nil, transactionID: purchase.appTransactionID, start: bought, end: nil,
                source: .appPurchase))
    }

    func build() -> UserTimeline {
        var periods = self.periods
        for productID in nonRenewing.keys.sorted() { periods += Self.stacked(nonRenewing[productID]!) }
        return UserTimeline(
            userID: userID,
            periods: periods.sorted { ($0.start, $0.productID, $0.transactionID ?? "") < ($1.start, $1.productID, $1.transactionID ?? "") },
            subscriptions: subscriptions.sorted { $0.originalTransactionID < $1.originalTransactionID },
            purchases: purchases.sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) },
            balanceEntries: entries.sorted { ($0.at, $0.kind.rawValue, $0.reference) < ($1.at, $1.kind.rawValue, $1.reference) },
            appPurchase: appPurchase)
    }

    // MARK: Rules

    /// Auto-renewable: access while `now < expiresDate`; a refund or revocation ends it at its date
    /// (earlier periods stay in history); an upgrade ends the old period when the new one starts;
    /// the latest period may run on inside a grace period. Billing retry without grace grants nothing.
    private mutating func addSubscriptionPeriod(
        _ transaction: TransactionFacts, definition: ProductDefinition?, history: TransactionHistory
    ) {
        var end = transaction.expiresDate ?? transaction.purchaseDate
        if let upgraded = history.upgradeEnd(of: transaction) { end = min(end, upgraded) }
        var access = period(transaction, definition?.entitlements ?? [], start: transaction.purchaseDate, end: end)
        let isLatest = history.ordered.last?.transactionID == transaction.transactionID
        if isLatest, let renewal = history.renewal {
            access.willRenew = renewal.willAutoRenew
            access.billingRetry = renewal.isInBillingRetry
            if renewal.isInBillingRetry, history.revocationDate(of: transaction) == nil {
                access.gracePeriodEnd = renewal.gracePeriodExpiresDate
            }
        }
        periods.append(access)
    }

    private mutating func summarizeSubscription(_ history: TransactionHistory) {
        guard let latest = history.ordered.last(where: { $0.expiresDate != nil }) else { return }
        let access = periods.last { $0.transactionID == latest.transactionID }
        let renewal = history.renewal
        subscriptions.append(
            SubscriptionTimeline(
                originalTransactionID: history.originalTransactionID, productID: latest.productID,
                accessEnd: access?.end, revokedAt: history.revocationDate(of: latest), gracePeriodEnd: access?.gracePeriodEnd,
                billingRetry: renewal?.isInBillingRetry ?? false, willRenew: renewal?.willAutoRenew,
                pendingProductID: renewal.flatMap { $0.autoRenewProductID != latest.productID ? $0.autoRenewProductID : nil },
                expirationIntent: renewal?.expirationIntent, billingPlanType: latest.billingPlanType,
                commitmentExpiresAt: latest.commitment?.expiresDate, offerType: latest.offerType, offerIdentifier: latest.offerIdentifier,
                store: latest.store))
    }

    /// Consumables, and each period of a subscription that grants: credit quantity × amount per
    /// unit (catalogue as at the purchase), a lot expiring by its currency's policy; a refund
    /// reverses its share of the credit (all of it, or a prorated refund's share, as the books
    /// take that share of the money), even if it was spent — the debt is recorded, never hidden —
    /// and Apple's reversal of the refund credits it again.
    private mutating func addCredits(
        _ transaction: TransactionFacts, _ definition: ProductDefinition, _ refunds: [(from: Date, until: Date?, share: Int64)],
        origin: BalanceEntry.Origin
    ) {
        for (currency, perUnit) in definition.grants.sorted(by: { $0.key < $1.key }) {
            let amount = perUnit * Int64(transaction.quantity)
            let expiresAt = catalogue.currency(currency, at: transaction.purchaseDate)?.expiry(ofGrantAt: transaction.purchaseDate)
            entries.append(
                BalanceEntry(
                    kind: .credit, currency: currency, amount: amount, at: transaction.purchaseDate, reference: transaction.transactionID,
                    expiresAt: expiresAt, origin: origin))
            for refund in refunds {
                let taken = amount * refund.share / 100_000
                guard taken > 0 else { continue }
                entries.append(
                    BalanceEntry(
                        kind: .reversal, currency: currency, amount: taken, at: refund.from, reference: transaction.transactionID,
                        origin: .refund))
                if let until = refund.until {
                    entries.append(
                        BalanceEntry(
                            kind: .credit, currency: currency, amount: taken, at: until, reference: transaction.transactionID,
                            expiresAt: expiresAt, origin: .refundReversed))
                }
            }
        }
    }

    /// Non-renewing: each purchase lasts the catalogue's duration, and one bought while another is
    /// running starts where that one ends (they stack). A refunded one ends at its refund.
    static func stacked(_ purchases: [(TransactionFacts, revokedAt: Date?, ProductDefinition)]) -> [AccessPeriod] {
        var result: [AccessPeriod] = []
        var runningEnd: Date?
        for (transaction, revokedAt, definition) in purchases.sorted(by: { $0.0.purchaseDate < $1.0.purchaseDate }) {
            let start = max(transaction.purchaseDate, runningEnd ?? transaction.purchaseDate)
            var end = definition.duration.map { $0.added(to: start) } ?? start
            if let revokedAt { end = min(end, max(revokedAt, start)) }
            runningEnd = end
            result.append(
                AccessPeriod(
                    entitlements: definition.entitlements, productID: transaction.productID,
                    originalTransactionID: transaction.originalTransactionID, transactionID: transaction.transactionID,
                    start: start, end: end, source: transaction.ownership == .familyShared ? .familyShared : .purchased))
        }
        return result
    }

    private func period(_ transaction: TransactionFacts, _ entitlements: [String], start: Date, end: Date?) -> AccessPeriod {
        AccessPeriod(
            entitlements: entitlements, productID: transaction.productID, originalTransactionID: transaction.originalTransactionID,
            transactionID: transaction.transactionID, start: start, end: end,
            source: transaction.ownership == .familyShared ? .familyShared : .purchased)
    }

    private mutating func addPurchase(_ transaction: TransactionFacts, _ definition: ProductDefinition?, _ revokedAt: Date?) {
        purchases.append(
            PurchaseSummary(
                transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
                productID: transaction.productID, type: definition?.type, purchaseDate: transaction.purchaseDate,
                quantity: transaction.quantity, revokedAt: revokedAt, store: transaction.store))
    }
}
