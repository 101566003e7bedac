import Foundation

/// Everything Apple and the app said about one original transaction, replayed in business order
/// up to an instant. Pure: a value built from facts, asked questions.
struct TransactionHistory: Sendable {
    let originalTransactionID: String
    /// Latest signed snapshot per transaction id (a restore or a later notification replaces it).
    private(set) var transactions: [String: TransactionFacts] = [:]
    private(set) var revocations: [String: RevocationFacts] = [:]
    private(set) var renewal: RenewalFacts?
    /// (since, user): who owned it from when.
    private(set) var owners: [(since: Date, user: String)] = []

    init(originalTransactionID: String) { self.originalTransactionID = originalTransactionID }

    /// Builds the history from facts already filtered to `occurredAt ≤ T` and sorted in business order.
    init(originalTransactionID: String, facts: [RecordedFact]) {
        self.init(originalTransactionID: originalTransactionID)
        for fact in facts { apply(fact) }
        ordered = transactions.values.sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
    }

    private mutating func apply(_ fact: RecordedFact) {
        switch fact.event {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
            if let existing = transactions[t.transactionID], existing.signedDate > t.signedDate { return }
            transactions[t.transactionID] = t
        case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r):
            if let current = renewal, current.signedDate > r.signedDate { return }
            renewal = r
        case .refunded(let r), .revoked(let r):
            revocations[r.transactionID] = r
        case .refundReversed(let reversal):
            revocations[reversal.transactionID] = nil
        case .transactionClaimed(let claim):
            if owners.last?.user != claim.userID { owners.append((fact.occurredAt, claim.userID)) }
        case .ownershipTransferred(let transfer):
            owners.append((fact.occurredAt, transfer.toUserID))
        default:
            break
        }
    }

    /// The owner now (after every fact applied); nil while nobody has claimed it.
    var owner: String? { owners.last?.user }

    /// When `user` first came to own it, or nil.
    func ownership(of user: String) -> Bool { owners.contains { $0.user == user } }

    /// Every transaction, oldest purchase first (sorted once, when the history is built).
    private(set) var ordered: [TransactionFacts] = []

    /// When access to `transaction` ended early: refund/revocation (unless reversed), or an upgrade
    /// (the old period ends when the upgrading transaction starts).
    func revocationDate(of transaction: TransactionFacts) -> Date? {
        revocations[transaction.transactionID]?.revocationDate ?? transaction.revocationDate
    }

    func upgradeEnd(of transaction: TransactionFacts) -> Date? {
        guard transaction.isUpgraded else { return nil }
        return ordered.first { $0.purchaseDate > transaction.purchaseDate }?.purchaseDate ?? transaction.purchaseDate
    }
}
