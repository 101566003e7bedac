import Foundation
import LedgerCore

/// An independent account of what a user is entitled to at an instant, by every fact known —
/// the reference the domain's valid-time answer must agree with. Brute force from the facts, one
/// rule per product type as docs/events.md states them, sharing no code with the reducers.
enum ValidTimeOracle {
    struct Answer: Equatable, CustomStringConvertible {
        var entitlements: Set<String>
        var coins: Int64
        var description: String { "\(entitlements.sorted()) coins \(coins)" }
    }

    static func answer(for user: String, at instant: Date, facts: [RecordedFact]) -> Answer {
        let ordered = facts.sorted { ($0.occurredAt, $0.sequence) < ($1.occurredAt, $1.sequence) }
        // The catalogue: each product's definitions with the instant each took effect.
        var definitions: [String: [(from: Date, definition: ProductDefinition)]] = [:]
        for fact in ordered {
            if case .productConfigured(let d) = fact.event { definitions[d.productID, default: []].append((fact.occurredAt, d)) }
        }
        func definition(_ product: String, at date: Date) -> ProductDefinition? {
            guard let all = definitions[product] else { return nil }
            return all.last { $0.from <= date }?.definition ?? all.first?.definition
        }
        // Transactions (latest signature wins), revocations (a reversal undoes), renewal info, ownership.
        var transactions: [String: TransactionFacts] = [:]
        // A refund until its reversal, with the share it asks (thousandths of a percent).
        var refunds: [String: [(from: Date, until: Date?, asked: Int64)]] = [:]
        var renewals: [String: RenewalFacts] = [:]
        for fact in ordered {
            switch fact.event {
            case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
                if transactions[t.transactionID].map({ $0.signedDate <= t.signedDate }) ?? true { transactions[t.transactionID] = t }
            case .refunded(let r), .revoked(let r):
                if let last = refunds[r.transactionID]?.last, last.until == nil, last.from == r.revocationDate { continue }
                refunds[r.transactionID, default: []].append((r.revocationDate, nil, Int64(r.percentage ?? 100_000)))
            case .refundReversed(let r):
                if let last = refunds[r.transactionID]?.last, last.until == nil {
                    refunds[r.transactionID]![refunds[r.transactionID]!.count - 1].until = r.signedDate
                }
            case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r):
                if renewals[r.originalTransactionID].map({ $0.signedDate <= r.signedDate }) ?? true {
                    renewals[r.originalTransactionID] = r
                }
            default: break
            }
        }
        func owner(of original: String) -> String? {
            let start = transactions.values.filter { $0.originalTransactionID == original }.map {
                $0.originalPurchaseDate ?? $0.purchaseDate
            }.min()
            var owners: [(since: Date, user: String)] = []
            for fact in facts.sorted(by: { $0.sequence < $1.sequence }) {
                switch fact.event {
                case .transactionClaimed(let c) where c.originalTransactionID == original:
                    if owners.isEmpty {
                        owners.append((min(start ?? fact.recordedAt, fact.recordedAt), c.userID))
                    } else if owners.last!.user != c.userID {
                        owners.append((fact.recordedAt, c.userID))
                    }
                case .ownershipTransferred(let t) where t.originalTransactionID == original: owners.append((fact.recordedAt, t.toUserID))
                default: break
                }
            }
            return owners.last { $0.since <= instant }?.user
        }
        let owned = Set(transactions.values.map(\.originalTransactionID)).filter { owner(of: $0) == user }

        var active = Set<String>()
        var coins: Int64 = 0
        var passes: [String: [(TransactionFacts, ProductDefinition)]] = [:]
        for t in transactions.values where owned.contains(t.originalTransactionID) {
            guard let d = definition(t.productID, at: t.purchaseDate) else { continue }
            let family = transactions.values.filter { $0.originalTransactionID == t.originalTransactionID }
            let gaps = refunds[t.transactionID] ?? t.revocationDate.map { [($0, nil, 100_000)] } ?? []
            let revoked = gaps.last.flatMap { $0.until == nil ? $0.from : nil }
            let refunded = gaps.contains { $0.from <= instant && $0.until.map { instant < $0 } ?? true }
            switch d.type {
            case .autoRenewable:
                var end = t.expiresDate ?? t.purchaseDate
                if t.isUpgraded {
                    end = min(end, family.filter { $0.purchaseDate > t.purchaseDate }.map(\.purchaseDate).min() ?? t.purchaseDate)
                }
                let latest =
                    family.max { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }?.transactionID
                    == t.transactionID
                let renewal = renewals[t.originalTransactionID]
                let grace = latest && revoked == nil && renewal?.isInBillingRetry == true ? renewal?.gracePeriodExpiresDate : nil
                if t.purchaseDate <= instant && !refunded && (instant < end || grace.map { instant < $0 } == true) {
                    active.formUnion(d.entitlements)
                }
            case .nonConsumable, .freeSubscription:
                if t.purchaseDate <= instant && !refunded { active.formUnion(d.entitlements) }
            case .nonRenewing:
                passes[t.productID, default: []].append((t, d))
            case .consumable:
                // Each refund takes its share of the credit, the refunds standing never more than all of it.
                let credit = (d.grants["coins"] ?? 0) * Int64(t.quantity)
                if t.purchaseDate <= instant { coins += credit }
                var standing: Int64 = 0
                for gap in gaps {
                    let share = min(gap.asked, 100_000 - standing)
                    if gap.until == nil { standing += share }
                    let taken = credit * share / 100_000
                    if gap.from <= instant { coins -= taken }
                    if let until = gap.until, until <= instant { coins += taken }
                }
            }
        }
        for (_, bought) in passes {
            var runningEnd: Date?
            for (t, d) in bought.sorted(by: { $0.0.purchaseDate < $1.0.purchaseDate }) {
                let start = max(t.purchaseDate, runningEnd ?? t.purchaseDate)
                var end = d.duration.map { $0.added(to: start) } ?? start
                let gaps = refunds[t.transactionID] ?? t.revocationDate.map { [($0, nil, 100_000)] } ?? []
                if let revoked = gaps.last.flatMap({ $0.until == nil ? $0.from : nil }) { end = min(end, max(revoked, start)) }
                runningEnd = end
                if start <= instant && instant < end { active.formUnion(d.entitlements) }
            }
        }
        // The user's own: grants until they expire or support revokes them, consumptions when made.
        var grants: [String: (grant: PromotionalGrant, end: Date?)] = [:]
        for fact in ordered {
            switch fact.event {
            case .promotionalGranted(let g) where g.userID == user: grants[g.grantID] = (g, g.expiresAt)
            case .promotionalRevoked(let r) where r.userID == user:
                if let granted = grants[r.grantID] { grants[r.grantID]!.end = min(granted.end ?? fact.occurredAt, fact.occurredAt) }
            case .consumed(let c) where c.userID == user && c.currency == "coins" && fact.occurredAt <= instant: coins -= c.amount
            default: break
            }
        }
        for (grant, end) in grants.values where grant.startsAt <= instant && end.map({ instant < $0 }) ?? true {
            active.insert(grant.entitlement)
        }
        // The app bought before the app's rule's version (the latest rule): its entitlements for life.
        var rule: AppPurchaseRule?
        for fact in ordered { if case .appConfigured(let settings) = fact.event { rule = settings.appPurchase } }
        for fact in ordered {
            guard case .appTransactionRecorded(let a) = fact.event, a.userID == user, let rule, let bought = a.originalPurchaseDate,
                bought <= instant, let version = a.originalApplicationVersion, let before = rule.originallyBeforeVersion
            else { continue }
            let major = { (v: String) in Int(v.split(separator: ".").first ?? "") ?? 0 }
            if major(version) < major(before) { active.formUnion(rule.entitlements) }
        }
        return Answer(entitlements: active, coins: coins)
    }

    /// The same question asked of the domain, in the oracle's terms.
    static func answer(of state: UserState) -> Answer {
        Answer(entitlements: Set(state.entitlements.filter(\.value.active).keys), coins: state.balances["coins"] ?? 0)
    }
}
