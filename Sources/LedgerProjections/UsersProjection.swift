import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// The `users` projection: who owns which transaction, and each user's timeline. Applies a batch
/// of the log to one version's tables on a connection inside the caller's transaction.
public struct UsersProjection: Sendable {
    public static let name = "users"
    /// Event types that change no one's ownership or timeline: evidence kept for the audit trail.
    /// Not decoded by this projection — in a realistic log they are half of all events.
    public static let ignoredTypes: Set<String> = ["AppleNotificationReceived"]
    public let version: Int

    public init(version: Int) { self.version = version }

    var owners: String { "ledger.transaction_owners_v\(version)" }
    var timelines: String { "ledger.user_timelines_v\(version)" }
    var finance: String { "ledger.finance_rows_v\(version)" }

    /// Records ownership from the batch, then recomputes every user the batch touched from that
    /// user's facts in the log. Recomputing (rather than patching) keeps the stored timeline
    /// exactly `AppLedger.timeline(of:)`: the same code answers live and rebuilt.
    /// Returns the users whose timeline it rewrote.
    @discardableResult
    public func apply(_ batch: [RecordedEvent], on connection: PostgresConnection) throws -> [(bundleID: String, userID: String)] {
        var affected: Set<UserKey> = []
        var appsChanged: Set<String> = []
        var moneyMoved: Set<TransactionKey> = []
        for recorded in batch where !Self.ignoredTypes.contains(recorded.type) {
            guard let (bundleID, fact) = try StoredFacts.fact(from: recorded) else { continue }
            if let original = fact.event.originalTransactionID, fact.event.changesFinance {
                moneyMoved.insert(TransactionKey(bundleID: bundleID, originalTransactionID: original))
            }
            switch fact.event {
            case .transactionClaimed(let claim):
                try addOwner(bundleID, claim.originalTransactionID, claim.userID, connection)
                affected.insert(UserKey(bundleID: bundleID, userID: claim.userID))
            case .ownershipTransferred(let transfer):
                try addOwner(bundleID, transfer.originalTransactionID, transfer.toUserID, connection)
                try addOwner(bundleID, transfer.originalTransactionID, transfer.fromUserID, connection)
                affected.formUnion([transfer.fromUserID, transfer.toUserID].map { UserKey(bundleID: bundleID, userID: $0) })
            case .appConfigured, .productConfigured:
                appsChanged.insert(bundleID)
            default:
                if let userID = fact.event.userID {
                    affected.insert(UserKey(bundleID: bundleID, userID: userID))
                    continue
                }
                guard let original = fact.event.originalTransactionID else { continue }
                for row in try connection.query("SELECT user_id FROM \(owners) WHERE bundle_id = $1 AND original_transaction_id = $2", [bundleID, original]) {
                    affected.insert(UserKey(bundleID: bundleID, userID: try row["user_id"].string()))
                }
            }
        }
        for bundleID in appsChanged {
            // A catalogue change can touch any purchase of the app: recompute all its users.
            for row in try connection.query("SELECT DISTINCT user_id FROM \(owners) WHERE bundle_id = $1 UNION SELECT user_id FROM \(timelines) WHERE bundle_id = $1", [bundleID]) {
                affected.insert(UserKey(bundleID: bundleID, userID: try row["user_id"].string()))
            }
        }
        for user in affected.sorted(by: { ($0.bundleID, $0.userID) < ($1.bundleID, $1.userID) }) {
            try recompute(user, connection)
        }
        for transaction in moneyMoved.sorted(by: { ($0.bundleID, $0.originalTransactionID) < ($1.bundleID, $1.originalTransactionID) }) {
            try recomputeFinance(transaction, connection)
        }
        return affected.map { ($0.bundleID, $0.userID) }
    }

    /// Replaces the finance rows of one original transaction with what its stream now says.
    func recomputeFinance(_ transaction: TransactionKey, _ connection: PostgresConnection) throws {
        let stream = LedgerStream.purchase(transaction.bundleID, originalTransactionID: transaction.originalTransactionID)
        var ledger = AppLedger(bundleID: transaction.bundleID)
        for row in try connection.query(EventStore.selectEventsSQL + " WHERE e.stream = $1 ORDER BY e.version", [stream]) {
            if let (_, fact) = try StoredFacts.fact(from: RecordedEvent(row: row)) { ledger.apply(fact) }
        }
        try connection.query("DELETE FROM \(finance) WHERE bundle_id = $1 AND original_transaction_id = $2",
                             [transaction.bundleID, transaction.originalTransactionID])
        for (seq, row) in ledger.financeRows(ofTransaction: transaction.originalTransactionID).enumerated() {
            try connection.query(Self.insertFinanceSQL(finance), [
                transaction.bundleID, transaction.originalTransactionID, seq, row.kind.rawValue, row.transactionID, row.userID,
                row.productID, row.quantity, row.price, row.currency, row.storefront, row.environment.rawValue, row.occurredAt])
        }
    }

    /// Every fact that can concern one user — the app's, the user's own, and each transaction the
    /// user ever owned according to `owners` — optionally only those with business time ≤ `knownAt`.
    /// Evidence-only events are left out unless asked for (the audit trail shows them): they change
    /// no one's state.
    static func userLedger(bundleID: String, userID: String, owners: String, knownAt: Date?, withEvidence: Bool = false,
                           on connection: PostgresConnection) throws -> AppLedger {
        let originals = try connection.query("SELECT original_transaction_id FROM \(owners) WHERE bundle_id = $1 AND user_id = $2",
                                             [bundleID, userID]).map { try $0[0].string() }
        let streams = [LedgerStream.app(bundleID), LedgerStream.user(bundleID, userID: userID)]
            + originals.map { LedgerStream.purchase(bundleID, originalTransactionID: $0) }
        let rows = try connection.query(EventStore.selectEventsSQL + """
             WHERE e.stream = ANY($1::text[]) AND e.event_type <> ALL($2::text[]) AND ($3::timestamptz IS NULL OR e.occurred_at <= $3)
             ORDER BY e.position
            """, [PostgresTextArray(streams), PostgresTextArray(withEvidence ? [] : Array(ignoredTypes)), knownAt])
        var ledger = AppLedger(bundleID: bundleID)
        for row in rows {
            if let (_, fact) = try StoredFacts.fact(from: RecordedEvent(row: row)) { ledger.apply(fact) }
        }
        return ledger
    }

    static func insertFinanceSQL(_ table: String) -> String {
        "INSERT INTO \(table) (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, product_id, quantity, price, "
            + "currency, storefront, environment, occurred_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    }

    private func addOwner(_ bundleID: String, _ original: String, _ userID: String, _ connection: PostgresConnection) throws {
        try connection.query("INSERT INTO \(owners) (bundle_id, original_transaction_id, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                             [bundleID, original, userID])
    }

    /// Loads every fact that can concern the user (the app's, the user's, and each transaction the
    /// user ever owned) and stores the resulting timeline.
    func recompute(_ user: UserKey, _ connection: PostgresConnection) throws {
        let ledger = try Self.userLedger(bundleID: user.bundleID, userID: user.userID, owners: owners, knownAt: nil, on: connection)
        let json = String(decoding: try LedgerEvent.encodeForStorage(ledger.timeline(of: user.userID)), as: UTF8.self)
        try connection.query("""
            INSERT INTO \(timelines) (bundle_id, user_id, timeline) VALUES ($1, $2, $3::jsonb)
            ON CONFLICT (bundle_id, user_id) DO UPDATE SET timeline = EXCLUDED.timeline
            """, [user.bundleID, user.userID, json])
    }
}

struct UserKey: Hashable, Sendable {
    var bundleID: String
    var userID: String
}

struct TransactionKey: Hashable, Sendable {
    var bundleID: String
    var originalTransactionID: String
}

extension LedgerEvent {
    /// Facts that add, remove or re-attribute a finance row (ownership decides its user column).
    var changesFinance: Bool {
        switch self {
        case .purchased, .restored, .renewed, .recovered, .refunded, .refundReversed, .transactionClaimed, .ownershipTransferred: true
        default: false
        }
    }
}
