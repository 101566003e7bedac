import Foundation

/// Derives one user's changes as the facts arrive, in log order: each fact is compared with the
/// ledger just before it, both evaluated at the instant the fact was recorded, so a change is what
/// that fact did and nothing that time did meanwhile. Time's own effect — access running out — is
/// found separately (`expiries(until:)`) between one fact and the next, and by the clock sweep
/// after the last.
///
/// A pure function of the facts: the live projection (facts before its batch `prime`d, the batch
/// `apply`d) derives exactly what one pass over the whole history derives (`derive`), which is
/// what makes a change's identity stable across restarts and re-derivations.
package struct ChangeLog: Sendable {
    package let bundleID: String
    package let userID: String
    private var ledger: AppLedger
    private var cached: UserTimeline?
    /// Expiries up to here have been derived (the last fact's recording, or the last sweep).
    package private(set) var checkedUntil: Date?

    package init(bundleID: String, userID: String) {
        self.bundleID = bundleID
        self.userID = userID
        self.ledger = AppLedger(bundleID: bundleID)
    }

    /// The user's timeline by every fact applied or primed so far.
    package var timeline: UserTimeline {
        mutating get {
            if let cached { return cached }
            let built = ledger.timeline(of: userID)
            cached = built
            return built
        }
    }

    /// A fact whose changes were derived before (the live projection's earlier batches).
    package mutating func prime(_ fact: RecordedFact) {
        ledger.apply(fact)
        cached = nil
        checkedUntil = max(checkedUntil ?? fact.recordedAt, fact.recordedAt, fact.occurredAt)
    }

    /// The changes `fact` makes, after the expiries that time made since the previous fact.
    package mutating func apply(_ fact: RecordedFact) -> [Change] {
        // Recording times may interleave with log order by a transaction's length: never go back.
        // A fact dated after its recording (Apple's clock a little ahead of ours, an app's action
        // stamped before its transaction began) is looked at from its own date, or its effect
        // would be missed here and found later by the clock as a plain expiry.
        let instant = max(checkedUntil ?? fact.recordedAt, fact.recordedAt, fact.occurredAt)
        var changes = expiries(until: instant)
        let before = timeline
        let refundedBefore = revocation(concernedBy: fact)
        ledger.apply(fact)
        cached = nil
        let after = timeline
        let refund = refundedBefore.map { ($0.transaction, $0.original, $0.date, revocation(concernedBy: fact)?.date) }
        changes += ChangeDiff(userID: userID, fact: fact, at: instant, before: before, after: after, refund: refund).changes()
        checkedUntil = instant
        return changes
    }

    /// The transaction a fact can refund or reinstate, and when it stands revoked (nil: it does not)
    /// by the facts so far. Asked before and after the fact: a refund is announced by whichever
    /// fact first says it — Apple's refund notification restates the transaction with its
    /// revocation date before the refund itself — and only once.
    private func revocation(concernedBy fact: RecordedFact) -> (transaction: String, original: String, date: Date?)? {
        let transactionID: String, original: String
        switch fact.event {
        case .refunded(let r): (transactionID, original) = (r.transactionID, r.originalTransactionID)
        case .refundReversed(let r): (transactionID, original) = (r.transactionID, r.originalTransactionID)
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
            (transactionID, original) = (t.transactionID, t.originalTransactionID)
        default: return nil
        }
        let history = ledger.history(of: original)
        return (transactionID, original, history.transactions[transactionID].flatMap(history.revocationDate(of:)))
    }

    /// Entitlements that ran out after `checkedUntil` and before `instant`, each at the end of its
    /// unbroken run of access (grace period included). Before, not at: a renewal recorded at the
    /// very instant the period ends continues the access, it does not follow an expiry.
    package mutating func expiries(until instant: Date) -> [Change] {
        guard let from = checkedUntil, from < instant else {
            checkedUntil = max(checkedUntil ?? instant, instant)
            return []
        }
        checkedUntil = instant
        return Self.expiries(userID: userID, timeline: timeline, from: from, until: instant)
    }

    /// The same for a stored timeline (the clock sweep reads the projection's).
    package static func expiries(userID: String, timeline: UserTimeline, from: Date, until instant: Date) -> [Change] {
        var changes: [Change] = []
        for (name, entitlement) in timeline.entitlements(at: from).sorted(by: { $0.key < $1.key }) where entitlement.active {
            var end = accessEnd(entitlement)
            // A run can end and start again inside one gap (a pass stacked after a pause): follow it.
            for _ in 0..<8 {
                guard let ending = end, ending < instant else { break }
                let then = timeline.state(at: ending)
                guard let next = then.entitlements[name], next.active else {
                    changes.append(
                        Change(
                            kind: .entitlementExpired, userID: userID, occurredAt: ending, recordedAt: instant,
                            identity: "\(name)@\(micros(ending))",
                            subject: .init(
                                entitlement: name, productID: entitlement.productID,
                                originalTransactionID: entitlement.originalTransactionID,
                                from: .date(entitlement.expiresAt), to: .absent),
                            state: then))
                    break
                }
                end = accessEnd(next).flatMap { $0 > ending ? $0 : nil }
            }
        }
        changes += currencyExpiries(userID: userID, timeline: timeline, from: from, until: instant)
        return changes.sorted { $0.occurredAt < $1.occurredAt }
    }

    /// What was left in lots whose expiry fell after `from` and at or before `instant`.
    static func currencyExpiries(userID: String, timeline: UserTimeline, from: Date, until instant: Date) -> [Change] {
        // A lot empties at its expiry, or at the entry that gave it back after its expiry: with
        // neither in the window there is nothing to find, and no replay to pay for (the window
        // between one fact and the next is most often empty).
        let window = { (date: Date) in date > from && date <= instant }
        guard timeline.balanceEntries.contains(where: { window($0.at) || $0.expiresAt.map(window) == true }) else { return [] }
        // One replay: the movements come in time order, each with the balance it left, so the
        // balance before an expiry is the one the movement before it left.
        var balance: [String: Int64] = [:]
        var changes: [Change] = []
        for movement in Wallet.replay(timeline.balanceEntries, until: instant).movements {
            let before = balance[movement.currency] ?? 0
            balance[movement.currency] = movement.balanceAfter
            guard movement.at > from, movement.kind == .expired else { continue }
            changes.append(
                Change(
                    kind: .currencyExpired, userID: userID, occurredAt: movement.at, recordedAt: instant,
                    identity: "\(movement.currency):\(movement.reference)@\(micros(movement.at))",
                    subject: .init(
                        currency: movement.currency, amount: movement.amount, from: .number(before),
                        to: .number(movement.balanceAfter)),
                    state: timeline.state(at: movement.at)))
        }
        return changes
    }

    /// When the next active entitlement runs out after `checkedUntil` (what the clock sweep waits for).
    package mutating func nextExpiry() -> Date? {
        checkedUntil.flatMap { Self.nextExpiry(of: timeline, after: $0) }
    }

    package static func nextExpiry(of timeline: UserTimeline, after instant: Date) -> Date? {
        let access = timeline.entitlements(at: instant).values.filter(\.active).compactMap(accessEnd).filter { $0 >= instant }.min()
        let lot = Wallet.replayed(timeline.balanceEntries, until: instant).nextExpiry(after: instant)
        return [access, lot].compactMap { $0 }.min()
    }

    /// Every change of one user's whole history, and the expiries up to `instant`: the reference
    /// the live projection is checked against.
    package static func derive(bundleID: String, userID: String, facts: [RecordedFact], until instant: Date) -> [Change] {
        var log = ChangeLog(bundleID: bundleID, userID: userID)
        var changes = facts.flatMap { log.apply($0) }
        changes += log.expiries(until: instant)
        return changes
    }

    static func accessEnd(_ entitlement: Entitlement) -> Date? {
        guard let end = entitlement.expiresAt else { return nil }
        return max(end, entitlement.gracePeriodExpiresAt ?? end)
    }

    static func micros(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
}

extension ChangeLog {
    /// What Apple was told to show the user about to cancel a subscription: the rule that
    /// answered (`reason`; `default` for the app's default message) and the answer's kind (`to`).
    /// A decision changes no one's state, so it is announced on its own, with the user's state as
    /// stored, rather than by replaying the user's history.
    package static func retentionOffered(_ decision: RetentionDecision, fact: RecordedFact, state: UserState) -> Change {
        Change(
            kind: .retentionOffered, userID: decision.userID, occurredAt: fact.occurredAt, recordedAt: fact.recordedAt,
            identity: "retention#\(fact.sequence)",
            subject: .init(
                productID: decision.productID, originalTransactionID: decision.originalTransactionID, reason: decision.rule ?? "default",
                to: .text(decision.answer)),
            state: state)
    }
}
