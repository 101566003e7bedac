import Foundation

/// What one fact changed for one user: the user's timeline just before and just after it, both
/// evaluated at the same instant, compared entitlement by entitlement, subscription by
/// subscription, purchase by purchase and balance entry by balance entry.
struct ChangeDiff {
    let userID: String
    let fact: RecordedFact
    let instant: Date
    let before: UserTimeline
    let after: UserTimeline
    let stateBefore: UserState
    let stateAfter: UserState
    /// The transaction the fact can refund or reinstate, with its revocation before and after.
    let refund: (transaction: String, original: String, before: Date?, after: Date?)?

    init(
        userID: String, fact: RecordedFact, at instant: Date, before: UserTimeline, after: UserTimeline,
        refund: (transaction: String, original: String, before: Date?, after: Date?)? = nil
    ) {
        self.userID = userID
        self.refund = refund
        self.fact = fact
        self.instant = instant
        self.before = before
        self.after = after
        self.stateBefore = before.state(at: instant)
        self.stateAfter = after.state(at: instant)
    }

    /// In a fixed order — ownership, purchases, entitlements, subscriptions, balances — so a
    /// receiver reads the cause before its effects.
    func changes() -> [Change] {
        ownership() + purchases() + entitlements() + subscriptions() + balances() + consent() + erasure()
    }

    /// The user's identifiers were erased: announced under the pseudonym, so receivers erase theirs.
    private func erasure() -> [Change] {
        guard case .userErased(let erasure) = fact.event, erasure.userID == userID else { return [] }
        return [change(.userErased, "erased", .init())]
    }

    /// Consent withdrawn for the app a purchase of the user's was made in: announced once, when
    /// the user's state first shows it (a later purchase of the same app copy shows nothing new).
    private func consent() -> [Change] {
        guard stateBefore.consentRescindedAt == nil, let at = stateAfter.consentRescindedAt else { return [] }
        return [change(.consentRescinded, "consent", .init(from: .absent, to: .date(at)))]
    }

    private func change(_ kind: Change.Kind, _ key: String, _ subject: Change.Subject) -> Change {
        Change(
            kind: kind, userID: userID, occurredAt: fact.occurredAt, recordedAt: instant,
            identity: "\(key)#\(fact.sequence)", subject: subject, state: stateAfter)
    }

    private func ownership() -> [Change] {
        guard case .ownershipTransferred(let transfer) = fact.event, transfer.fromUserID == userID || transfer.toUserID == userID else {
            return []
        }
        return [
            change(
                .ownershipTransferred, transfer.originalTransactionID,
                .init(originalTransactionID: transfer.originalTransactionID, from: .text(transfer.fromUserID), to: .text(transfer.toUserID))
            )
        ]
    }

    /// Refunds and their reversals of a transaction the user owns (subscriptions' included, which
    /// the purchase list leaves out). A family-sharing revocation is no refund: the access it
    /// takes is announced as revoked.
    private func purchases() -> [Change] {
        guard let refund, refund.before != refund.after else { return [] }
        if case .revoked = fact.event { return [] }
        let original = refund.original
        let owned =
            after.purchases.contains { $0.originalTransactionID == original }
            || after.subscriptions.contains { $0.originalTransactionID == original }
            || after.periods.contains { $0.originalTransactionID == original }
        guard owned, let date = refund.after ?? refund.before else { return [] }
        let product =
            after.purchases.first { $0.transactionID == refund.transaction }?.productID
            ?? after.subscriptions.first { $0.originalTransactionID == original }?.productID
        // Keyed by the refund itself, not the fact: saying it again is the same change.
        return [
            Change(
                kind: refund.after == nil ? .refundReversed : .purchaseRefunded, userID: userID, occurredAt: fact.occurredAt,
                recordedAt: instant, identity: "\(refund.transaction)@\(ChangeLog.micros(date))",
                subject: .init(
                    productID: product, originalTransactionID: original, transactionID: refund.transaction,
                    from: .date(refund.before), to: .date(refund.after)),
                state: stateAfter)
        ]
    }

    private func entitlements() -> [Change] {
        let names = Set(stateBefore.entitlements.keys).union(stateAfter.entitlements.keys).sorted()
        var changes: [Change] = []
        for name in names {
            let old = stateBefore.entitlements[name], new = stateAfter.entitlements[name]
            // Access that ran exactly up to this instant counts as held: a renewal or a billing
            // retry recorded as the period ends continues it.
            let held = old.flatMap { $0.active || ChangeLog.accessEnd($0) == instant ? $0 : nil }
            switch (held, new?.active == true ? new : nil) {
            case (nil, let granted?):
                changes.append(
                    change(
                        .entitlementGranted, name,
                        .init(
                            entitlement: name, productID: granted.productID,
                            originalTransactionID: granted.originalTransactionID,
                            from: .absent, to: .date(granted.expiresAt))))
            case (let lost?, nil):
                let subject = Change.Subject(
                    entitlement: name, productID: lost.productID, originalTransactionID: lost.originalTransactionID,
                    reason: revocationReason, from: .date(lost.expiresAt), to: .date(new?.expiresAt))
                changes.append(change(revocationReason == nil ? .entitlementExpired : .entitlementRevoked, name, subject))
            case (let old?, let new?) where Self.extends(old.expiresAt, to: new.expiresAt):
                changes.append(
                    change(
                        .entitlementRenewed, name,
                        .init(
                            entitlement: name, productID: new.productID,
                            originalTransactionID: new.originalTransactionID,
                            from: .date(old.expiresAt), to: .date(new.expiresAt))))
            default: break
            }
        }
        return changes
    }

    /// Later, or lifetime where it had an end.
    static func extends(_ old: Date?, to new: Date?) -> Bool {
        switch (old, new) {
        case (let old?, let new?): new > old
        case (_?, nil): true
        default: false
        }
    }

    /// Why access this fact took away was taken away (nil: it simply ended — an expiry, an upgrade).
    private var revocationReason: String? {
        switch fact.event {
        case .refunded: "refund"
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t): t.revocationDate == nil ? nil : "refund"
        case .revoked(let r): r.kind == .replaced ? nil : "family_revocation"
        case .promotionalRevoked(let r): r.reason == "merged" ? "merged" : "support"
        case .ownershipTransferred(let t): t.reason == "merged" ? "merged" : "transferred"
        case .transactionClaimed: "transferred"
        default: nil
        }
    }

    private func subscriptions() -> [Change] {
        let old = Dictionary(before.subscriptions.map { ($0.originalTransactionID, $0) }, uniquingKeysWith: { a, _ in a })
        var changes: [Change] = []
        for new in after.subscriptions {
            guard let previous = old[new.originalTransactionID] else { continue }
            let key = new.originalTransactionID
            func subject(_ from: Change.Value, _ to: Change.Value) -> Change.Subject {
                .init(productID: new.productID, originalTransactionID: key, from: from, to: to)
            }
            // Unknown is taken as renewing (a new subscription renews): switching it off is the news.
            if let will = new.willRenew, will != (previous.willRenew ?? true) {
                changes.append(change(.autoRenewChanged, key, subject(.flag(previous.willRenew), .flag(will))))
            }
            if !previous.billingRetry && new.billingRetry {
                changes.append(change(.billingIssue, key, subject(.flag(false), .flag(true))))
            }
            if let grace = new.gracePeriodEnd, grace != previous.gracePeriodEnd, grace > instant {
                changes.append(change(.gracePeriod, key, subject(.date(previous.gracePeriodEnd), .date(grace))))
            }
            let was = previous.pendingProductID ?? previous.productID, will = new.pendingProductID ?? new.productID
            if was != will {
                changes.append(change(.productChanged, key, subject(.text(was), .text(will))))
            }
        }
        return changes
    }

    /// The movements of the user's currencies the fact added (and those it took away: a refund
    /// reversed, a spend that now draws on other lots), each with the balance before and after
    /// it. Movements up to the instant are compared, expiries included, so a receiver that adds
    /// up the changes holds each balance exactly.
    private func balances() -> [Change] {
        guard before.balanceEntries != after.balanceEntries else { return [] }
        let old = Wallet.replay(stateBefore.balanceEntries, until: instant).movements.map(Self.comparable)
        let new = Wallet.replay(stateAfter.balanceEntries, until: instant).movements
        // Most facts add to the end of a long history: only what follows the common beginning is
        // matched one against another, so a wallet of thousands of movements costs one pass.
        var start = 0
        while start < old.count, start < new.count, old[start] == Self.comparable(new[start]) { start += 1 }
        var remaining = Array(old[start...])
        var added: [Wallet.Movement] = []
        for movement in new[start...] {
            if let index = remaining.firstIndex(of: Self.comparable(movement)) {
                remaining.remove(at: index)
            } else {
                added.append(movement)
            }
        }
        var balance = stateBefore.balances
        var changes: [Change] = []
        // What is left in `remaining` was taken away: its opposite moved the balance.
        let moves = added.map { ($0, false) } + remaining.map { ($0, true) }
        for (index, (movement, undone)) in moves.enumerated() {
            let kind: Change.Kind
            switch (movement.kind, undone) {
            case (.granted, false), (.restored, false), (.spent, true), (.reversed, true), (.expired, true): kind = .currencyGranted
            case (.spent, false), (.restored, true): kind = .currencySpent
            case (.reversed, false), (.granted, true): kind = .currencyReversed
            case (.expired, false): kind = .currencyExpired
            }
            let credit = kind == .currencyGranted
            let from = balance[movement.currency] ?? 0
            let to = from + (credit ? movement.amount : -movement.amount)
            balance[movement.currency] = to
            // The documented reasons only: a refund undone, a spend taken back.
            let reason: String? =
                undone
                ? (movement.kind == .granted ? "refund_reversed" : nil) : movement.origin == .spendReversed ? "spend_reversed" : nil
            changes.append(
                change(
                    kind, "\(movement.currency):\(movement.reference):\(index)",
                    .init(currency: movement.currency, amount: movement.amount, reason: reason, from: .number(from), to: .number(to))))
        }
        return changes
    }

    /// A movement without the balance after it, which a fact before it changes without changing it.
    private static func comparable(_ movement: Wallet.Movement) -> Wallet.Movement {
        var movement = movement
        movement.balanceAfter = 0
        return movement
    }
}
