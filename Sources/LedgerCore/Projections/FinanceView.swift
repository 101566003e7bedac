import Foundation

/// One money-moving event, as finance reconciles it.
package struct FinanceRow: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable { case purchase, renewal, refund, refundReversed = "refund_reversed" }
    package var kind: Kind
    package var transactionID: String
    package var originalTransactionID: String
    package var userID: String?
    package var productID: String
    package var quantity: Int
    /// Milliunits, signed: refunds are negative (the prorated share when Apple gives one).
    package var price: Int64?
    package var currency: String?
    package var occurredAt: Date
    package var environment: AppleEnvironment
    package var storefront: String?
    /// When the ledger learnt it: the first recording of the transaction (a purchase or renewal
    /// delivered again keeps its first), or of the refund. A report closed at K has the rows
    /// recorded by K.
    package var recordedAt: Date
    /// The offer the transaction was bought with (Apple's offerType: 1 introductory, 2 promotional,
    /// 3 offer code, 4 win-back), its identifier and how it discounted: what finance reconciles
    /// discounted revenue by. A refund carries its purchase's offer.
    package var offerType: Int?
    package var offerIdentifier: String?
    package var offerDiscountType: String?
    /// The log position of the fact the row comes from (a purchase's first recording, the refund,
    /// the reversal): what an auditor proves the row by (`GET /v1/ledger/proofs/inclusion`). Nil
    /// on rows projected before the ledger kept it, until a rebuild.
    package var position: Int64?

    package init(
        kind: Kind, transactionID: String, originalTransactionID: String, userID: String?, productID: String, quantity: Int,
        price: Int64?, currency: String?, occurredAt: Date, environment: AppleEnvironment, storefront: String?, recordedAt: Date,
        offerType: Int? = nil, offerIdentifier: String? = nil, offerDiscountType: String? = nil, position: Int64? = nil
    ) {
        self.kind = kind
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.userID = userID
        self.productID = productID
        self.quantity = quantity
        self.price = price
        self.currency = currency
        self.occurredAt = occurredAt
        self.environment = environment
        self.storefront = storefront
        self.recordedAt = recordedAt
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.position = position
    }

    /// Apple's offer types by name; a type Apple adds later by its number.
    package var offerTypeName: String? {
        offerType.map { [1: "introductory", 2: "promotional", 3: "offer_code", 4: "win_back"][$0] ?? String($0) }
    }
}

enum FinanceView {
    /// Purchases and renewals once per transaction id (restores and re-deliveries repeat them),
    /// refunds and their reversals once per fact. Family-sharing revocations move no money.
    /// `owner` names the current owner of an original transaction: the user finance attributes it to.
    static func rows(of facts: [RecordedFact], environment: AppleEnvironment, owner: (String) -> String?) -> [FinanceRow] {
        var transactions: [String: TransactionFacts] = [:]
        var firstRecorded: [String: Date] = [:]
        for fact in facts {
            guard let t = fact.event.transactionFacts, t.environment == environment else { continue }
            firstRecorded[t.transactionID] = min(firstRecorded[t.transactionID] ?? fact.recordedAt, fact.recordedAt)
        }
        var rows: [FinanceRow] = []
        var refundedShare: [String: Int64] = [:] // transaction → the share its last refund returned
        var taken: [String: Int64] = [:] // transaction → the share its standing refunds returned
        for fact in facts.sorted(by: RecordedFact.businessOrder) {
            switch fact.event {
            case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
                guard t.environment == environment else { continue }
                if transactions[t.transactionID] == nil {
                    rows.append(
                        row(
                            t, kind: t.transactionID == t.originalTransactionID ? .purchase : .renewal,
                            price: t.price, at: t.purchaseDate, recorded: firstRecorded[t.transactionID] ?? fact.recordedAt,
                            position: fact.sequence, owner: owner))
                }
                transactions[t.transactionID] = t
            case .refunded(let r):
                guard r.environment == environment, let t = transactions[r.transactionID] else { continue }
                // Refunds of one transaction never return more than it cost: a full refund after a
                // prorated one returns the rest.
                let share = min(Int64(r.percentage ?? 100_000), 100_000 - taken[r.transactionID, default: 0])
                refundedShare[r.transactionID] = share // a reversal gives back this refund's share, if any
                guard share > 0 else { continue }
                taken[r.transactionID, default: 0] += share
                rows.append(
                    row(
                        t, kind: .refund, price: t.price.map { -($0 * share / 100_000) }, at: r.revocationDate, recorded: fact.recordedAt,
                        position: fact.sequence, owner: owner))
            case .revoked(let r):
                refundedShare[r.transactionID] = nil // the latest revocation moved no money: nor will its reversal
            case .refundReversed(let reversal):
                // Only a refund that moved money can be reversed in the books (not a family revocation).
                guard let t = transactions[reversal.transactionID], t.environment == environment,
                    let returned = refundedShare[reversal.transactionID], returned > 0
                else { continue }
                // What the refund returned comes back: all of it, or the prorated share.
                // A reversal said again reverses nothing more (the balance's history reinstates a
                // refund once too).
                let share = returned
                refundedShare[reversal.transactionID] = nil
                taken[reversal.transactionID, default: 0] -= share
                rows.append(
                    row(
                        t, kind: .refundReversed, price: t.price.map { $0 * share / 100_000 }, at: reversal.signedDate,
                        recorded: fact.recordedAt, position: fact.sequence,
                        owner: owner))
            default: continue
            }
        }
        return rows.sorted { ($0.occurredAt, $0.transactionID, $0.kind.rawValue) < ($1.occurredAt, $1.transactionID, $1.kind.rawValue) }
    }

    private static func row(
        _ t: TransactionFacts, kind: FinanceRow.Kind, price: Int64?, at: Date, recorded: Date, position: Int64,
        owner: (String) -> String?
    ) -> FinanceRow {
        FinanceRow(
            kind: kind, transactionID: t.transactionID, originalTransactionID: t.originalTransactionID,
            userID: owner(t.originalTransactionID), productID: t.productID, quantity: t.quantity,
            price: price, currency: t.currency, occurredAt: at, environment: t.environment, storefront: t.storefront,
            recordedAt: recorded, offerType: t.offerType, offerIdentifier: t.offerIdentifier, offerDiscountType: t.offerDiscountType,
            position: position)
    }
}
