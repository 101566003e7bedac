import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts

/// One original transaction's stream as it stands: its facts, and who owns it now — what support's
/// order lookup and the answer to Apple's CONSUMPTION_REQUEST are decided on.
struct PurchaseStream {
    var bundleID: String
    var originalTransactionID: String
    var facts: [RecordedFact] = []
    private var ledger: AppLedger

    static func read(_ store: EventStore, bundleID: String, originalTransactionID: String) async throws -> PurchaseStream {
        var stream = PurchaseStream(bundleID: bundleID, originalTransactionID: originalTransactionID, ledger: AppLedger(bundleID: bundleID))
        for event in try await store.read(
            stream: LedgerStream.purchase(bundleID, originalTransactionID: originalTransactionID), limit: 100_000)
        {
            guard let (_, fact) = try StoredFacts.fact(from: event) else { continue }
            stream.ledger.apply(fact)
            stream.facts.append(fact)
        }
        return stream
    }

    private init(bundleID: String, originalTransactionID: String, ledger: AppLedger) {
        self.bundleID = bundleID
        self.originalTransactionID = originalTransactionID
        self.ledger = ledger
    }

    var owner: String? { ledger.owner(of: originalTransactionID) }

    /// The latest snapshot of each transaction of the stream.
    var transactions: [TransactionFacts] {
        Dictionary(facts.compactMap(\.event.transactionFacts).map { ($0.transactionID, $0) }) { a, b in a.signedDate >= b.signedDate ? a : b
        }
        .values.sorted { $0.purchaseDate < $1.purchaseDate }
    }

    /// The share of a transaction its standing refunds took (100000: all of it), as the domain
    /// counts it for balances and books.
    func refundedShare(of transactionID: String) -> Int {
        ledger.refundedShare(ofTransaction: transactionID, in: originalTransactionID)
    }

    /// The latest snapshot Apple signed of one transaction of the stream.
    func transaction(_ transactionID: String) -> TransactionFacts? {
        facts.compactMap(\.event.transactionFacts).filter { $0.transactionID == transactionID }.max { $0.signedDate < $1.signedDate }
    }
}
