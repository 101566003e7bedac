import Foundation

/// Everything Apple and the app said about one original transaction, replayed in business order
/// up to an instant. Pure: a value built from facts, asked questions.
struct TransactionHistory: Sendable {
    let originalTransactionID: String
    /// Latest signed snapshot per transaction id (a restore or a later notification replaces it).
    private(set) var transactions: [String: TransactionFacts] = [:]
    /// Each transaction's refunds or revocations in business order, each closed by Apple's
    /// reversal if there was one: in valid time, access stops at a refund and resumes at its reversal.
    private(set) var revocations: [String: [Revocation]] = [:]
    private(set) var renewal: RenewalFacts?
    /// When a newer purchase took this one's place (the earliest such fact): from then on nothing
    /// of it gives access again — no reversal, no restated transaction, in whatever order the
    /// facts arrived.
    private(set) var replacedAt: Date?
    /// (since, user) in valid time: who owned it from when (see `ownersInValidTime`).
    private(set) var owners: [(since: Date, user: String)] = []

    init(originalTransactionID: String) { self.originalTransactionID = originalTransactionID }

    /// Builds the history from the facts known (sorted in business order).
    init(originalTransactionID: String, facts: [RecordedFact]) {
        self.init(originalTransactionID: originalTransactionID)
        for fact in facts { apply(fact) }
        ordered = transactions.values.sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
        owners = Self.ownersInValidTime(facts, familyStart: ordered.map { $0.originalPurchaseDate ?? $0.purchaseDate }.min())
    }

    /// Ownership in valid time. The first claim takes effect from the family's original purchase:
    /// the buyer's Apple account made it, the app only told the ledger later, so a purchase posted
    /// late is still owned from when it was bought. A transfer (or a claim by someone else) takes
    /// effect when it was recorded: before that, the ledger had the old owner, and so did the
    /// app's servers. Ownership changes are read in recording order, as they were decided.
    static func ownersInValidTime(_ facts: [RecordedFact], familyStart: Date?) -> [(since: Date, user: String)] {
        var owners: [(since: Date, user: String)] = []
        for fact in facts.sorted(by: { $0.sequence < $1.sequence }) {
            switch fact.event {
            case .transactionClaimed(let claim) where owners.isEmpty:
                owners.append((min(familyStart ?? fact.recordedAt, fact.recordedAt), claim.userID))
            case .transactionClaimed(let claim) where owners.last?.user != claim.userID:
                owners.append((fact.recordedAt, claim.userID))
            case .ownershipTransferred(let transfer):
                owners.append((fact.recordedAt, transfer.toUserID))
            default:
                break
            }
        }
        return owners
    }

    private mutating func apply(_ fact: RecordedFact) {
        switch fact.event {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
            if let existing = transactions[t.transactionID], existing.signedDate > t.signedDate { return }
            transactions[t.transactionID] = t
        case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r):
            if let current = renewal, current.signedDate > r.signedDate { return }
            renewal = r
        case .revoked(let r) where r.kind == .replaced:
            replacedAt = min(replacedAt ?? r.revocationDate, r.revocationDate)
        case .refunded(let r), .revoked(let r):
            var list = revocations[r.transactionID] ?? []
            // The same refund said again (a redelivery, a restore) is one refund.
            if let last = list.last, last.reinstatedAt == nil, last.facts.revocationDate == r.revocationDate { list.removeLast() }
            list.append(Revocation(facts: r, reinstatedAt: nil))
            revocations[r.transactionID] = list
        case .refundReversed(let reversal):
            if let last = revocations[reversal.transactionID]?.indices.last, revocations[reversal.transactionID]![last].reinstatedAt == nil
            {
                revocations[reversal.transactionID]![last].reinstatedAt = reversal.signedDate
            }
        default:
            break
        }
    }

    /// The owner now (after every fact applied); nil while nobody has claimed it.
    var owner: String? { owners.last?.user }

    /// The owner at `instant` in valid time; nil before the first owner's time.
    func owner(at instant: Date) -> String? { owners.last { $0.since <= instant }?.user }

    /// Every transaction, oldest purchase first (sorted once, when the history is built).
    private(set) var ordered: [TransactionFacts] = []

    /// When access to `transaction` ended for good, as things stand: its refund or revocation
    /// unless Apple reversed it (or the revocation date Apple signed into the transaction itself).
    func revocationDate(of transaction: TransactionFacts) -> Date? {
        let revoked: Date?
        if let list = revocations[transaction.transactionID], !list.isEmpty {
            revoked = list.last!.reinstatedAt == nil ? list.last!.facts.revocationDate : nil
        } else {
            revoked = transaction.revocationDate
        }
        guard let replacedAt else { return revoked }
        return min(revoked ?? replacedAt, replacedAt)
    }

    /// Every stretch without access: [refund, reversal) for each refund, the last open-ended when
    /// it stands.
    func gaps(of transaction: TransactionFacts) -> [(from: Date, until: Date?)] {
        let replaced = replacedAt.map { [(from: $0, until: Date?.none)] } ?? []
        guard let list = revocations[transaction.transactionID], !list.isEmpty else {
            return (transaction.revocationDate.map { [($0, nil)] } ?? []) + replaced
        }
        return list.map { ($0.facts.revocationDate, $0.reinstatedAt) } + replaced
    }

    /// What each refund took of the transaction, in thousandths of a percent (100000: all), with
    /// when a reversal gave it back: a prorated refund takes its share, a full one what is left,
    /// and refunds together never take more than the transaction gave (a full refund after a
    /// prorated one takes the rest). A family revocation takes all of it, as a full refund.
    func refundShares(of transaction: TransactionFacts) -> [(from: Date, until: Date?, share: Int64)] {
        var taken: Int64 = 0
        var shares: [(from: Date, until: Date?, share: Int64)] = []
        for revocation in revocations[transaction.transactionID] ?? [] {
            let asked = Int64(revocation.facts.percentage ?? 100_000)
            let share = min(max(asked, 0), 100_000 - taken)
            guard share > 0 else { continue }
            shares.append((revocation.facts.revocationDate, revocation.reinstatedAt, share))
            if revocation.reinstatedAt == nil { taken += share }
        }
        if shares.isEmpty, let revoked = transaction.revocationDate { shares.append((revoked, nil, 100_000)) }
        return shares
    }

    func upgradeEnd(of transaction: TransactionFacts) -> Date? {
        guard transaction.isUpgraded else { return nil }
        return ordered.first { $0.purchaseDate > transaction.purchaseDate }?.purchaseDate ?? transaction.purchaseDate
    }
}

/// A refund or revocation, and when Apple reversed it (nil: it stands).
struct Revocation: Sendable {
    var facts: RevocationFacts
    var reinstatedAt: Date?
}
