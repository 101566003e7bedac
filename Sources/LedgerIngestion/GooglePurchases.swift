import Foundation
import LedgerCore
import LedgerPostgres

/// The Google purchases the ledger knows (`ledger.google_purchases`): each key's token, to ask
/// Google again, and what Google is still owed — the acknowledgement or consumption without which
/// Google refunds and revokes the purchase after three days. An outbox: filled once the purchase
/// is recorded, emptied by the acknowledger when Google confirms; several servers share the work,
/// each row claimed for a minute at a time.
package struct GooglePurchases: Sendable {
    package enum Kind: String, Sendable { case subscription, product }
    package enum Settlement: String, Sendable { case acknowledge, consume }

    /// A purchase Google is still to be told about.
    package struct Unsettled: Sendable {
        package var bundleID: String
        package var key: String
        package var token: String
        package var productID: String
        package var kind: Kind
        package var settlement: Settlement
        package var attempts: Int
    }

    /// A purchase the ledger can ask Google about again.
    package struct Known: Sendable {
        package var key: String
        package var token: String
        package var kind: Kind
    }

    let pool: PostgresPool
    var book: OutboxBook { OutboxBook(table: "ledger.google_purchases", key: "purchase_key", done: "settled_at", pool: pool) }

    package init(pool: PostgresPool) { self.pool = pool }

    /// Remembers the purchase and, when `settle` is given and it is paid, that Google is to be told.
    /// Saying it again changes nothing but a settlement not yet due (a pending purchase now paid);
    /// one already settled stays settled.
    func remember(
        bundleID: String, key: String, token: String, productID: String, kind: Kind, settle: Settlement?, paidAt: Date?,
        orderID: String? = nil
    ) async throws {
        try await pool.query(
            """
            INSERT INTO ledger.google_purchases
                (bundle_id, purchase_key, purchase_token, product_id, product_kind, settle, paid_at, order_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (bundle_id, purchase_key) DO UPDATE
               SET settle = COALESCE(ledger.google_purchases.settle, EXCLUDED.settle),
                   paid_at = COALESCE(ledger.google_purchases.paid_at, EXCLUDED.paid_at),
                   order_id = COALESCE(ledger.google_purchases.order_id, EXCLUDED.order_id),
                   next_attempt_at = CASE WHEN ledger.google_purchases.settle IS NULL THEN now()
                                          ELSE ledger.google_purchases.next_attempt_at END
            """, [bundleID, key, token, productID, kind.rawValue, settle?.rawValue, paidAt, orderID.map(Self.firstOrder)])
    }

    /// A renewal's order id (`GPA.1234-5678-9012-34567..3`) names its subscription's first order.
    static func firstOrder(_ orderID: String) -> String {
        orderID.range(of: "..").map { String(orderID[..<$0.lowerBound]) } ?? orderID
    }

    /// The purchase an order id of Google's belongs to: its key and whether it is a subscription.
    func purchase(bundleID: String, orderID: String) async throws -> (key: String, kind: Kind)? {
        try await pool.query(
            "SELECT purchase_key, product_kind FROM ledger.google_purchases WHERE bundle_id = $1 AND order_id = $2",
            [bundleID, Self.firstOrder(orderID)]
        ).first.map { (try $0["purchase_key"].string(), Kind(rawValue: try $0["product_kind"].string()) ?? .product) }
    }

    /// The purchases among `keys`, for a subject-access export: `purchase_key`, `product_id`,
    /// `purchase_token`, `paid_at`, `settled_at`.
    package static func held(bundleID: String, keys: [String]) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT purchase_key, product_id, purchase_token, paid_at, settled_at FROM ledger.google_purchases
             WHERE bundle_id = $1 AND purchase_key = ANY($2::text[]) ORDER BY created_at, purchase_key
            """, [bundleID, PostgresTextArray(keys)])
    }

    /// Forgets the tokens of the purchases among `keys` (an erasure): a token is personal data,
    /// and Google answers about it to whoever holds the app's service account.
    package static func forget(bundleID: String, keys: [String]) -> PipelinedStatement {
        PipelinedStatement(
            "DELETE FROM ledger.google_purchases WHERE bundle_id = $1 AND purchase_key = ANY($2::text[])",
            [bundleID, PostgresTextArray(keys)])
    }

    /// Whether a notification with this Pub/Sub message id was recorded already.
    func notificationSeen(bundleID: String, messageID: String) async throws -> Bool {
        !(try await pool.query(
            "SELECT 1 FROM ledger.google_notifications WHERE bundle_id = $1 AND message_id = $2", [bundleID, messageID]
        ).isEmpty)
    }

    /// Remembers a notification once everything it led to is recorded; notifications older than
    /// Pub/Sub's retention (seven days) are forgotten on the way, a redelivery being impossible.
    func rememberNotification(bundleID: String, messageID: String, evidence: String) async throws {
        try await pool.query(
            """
            WITH old AS (DELETE FROM ledger.google_notifications WHERE bundle_id = $1 AND received_at < now() - interval '8 days')
            INSERT INTO ledger.google_notifications (bundle_id, message_id, evidence) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
            """, [bundleID, messageID, evidence])
    }

    /// Whether the ledger knows the purchase as a subscription or a one-time product (nil: never seen).
    func kind(bundleID: String, key: String) async throws -> Kind? {
        try await pool.query(
            "SELECT product_kind FROM ledger.google_purchases WHERE bundle_id = $1 AND purchase_key = $2", [bundleID, key]
        ).first.flatMap { Kind(rawValue: try $0["product_kind"].string()) }
    }

    /// The token of a purchase, if the ledger has seen it.
    package func token(bundleID: String, key: String) async throws -> String? {
        try await pool.query(
            "SELECT purchase_token FROM ledger.google_purchases WHERE bundle_id = $1 AND purchase_key = $2", [bundleID, key]
        ).first.map { try $0["purchase_token"].string() }
    }

    /// The purchases among `keys` the ledger has tokens for and Google still keeps.
    func known(bundleID: String, keys: [String]) async throws -> [Known] {
        try await pool.query(
            """
            SELECT purchase_key, purchase_token, product_kind FROM ledger.google_purchases
             WHERE bundle_id = $1 AND purchase_key = ANY($2::text[]) AND gone_at IS NULL ORDER BY purchase_key
            """, [bundleID, PostgresTextArray(keys)]
        ).map(Self.known)
    }

    /// The app's subscriptions Google still keeps, `limit` at a time in key order after `after`:
    /// what a reconciliation asks Google about.
    package func subscriptions(bundleID: String, after: String?, limit: Int) async throws -> [Known] {
        try await pool.query(
            """
            SELECT purchase_key, purchase_token, product_kind FROM ledger.google_purchases
             WHERE bundle_id = $1 AND product_kind = 'subscription' AND gone_at IS NULL AND purchase_key > $2
             ORDER BY purchase_key LIMIT $3
            """, [bundleID, after ?? "", limit]
        ).map(Self.known)
    }

    private static func known(_ row: PostgresRow) throws -> Known {
        Known(
            key: try row["purchase_key"].string(), token: try row["purchase_token"].string(),
            kind: Kind(rawValue: try row["product_kind"].string()) ?? .product)
    }

    /// Google was asked about the purchase; `gone`: Google no longer keeps it.
    func refreshed(bundleID: String, key: String, gone: Bool) async throws {
        try await pool.query(
            """
            UPDATE ledger.google_purchases SET refreshed_at = now(), gone_at = CASE WHEN $3 THEN now() END
             WHERE bundle_id = $1 AND purchase_key = $2
            """, [bundleID, key, gone])
    }

    /// Up to `limit` purchases due to be told to Google, claimed by `holder` for a minute.
    package func claim(limit: Int, holder: UUID) async throws -> [Unsettled] {
        try await pool.query(
            """
            UPDATE ledger.google_purchases p
               SET claimed_by = $1, claimed_until = now() + interval '60 seconds', attempts = p.attempts + 1
             WHERE (p.bundle_id, p.purchase_key) IN (
                   SELECT w.bundle_id, w.purchase_key FROM ledger.google_purchases w
                    WHERE w.settle IS NOT NULL AND w.settled_at IS NULL AND w.next_attempt_at <= now()
                      AND (w.claimed_until IS NULL OR w.claimed_until < now())
                    ORDER BY w.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING p.bundle_id, p.purchase_key, p.purchase_token, p.product_id, p.product_kind, p.settle, p.attempts
            """, [holder, limit]
        ).map { row in
            Unsettled(
                bundleID: try row["bundle_id"].string(), key: try row["purchase_key"].string(), token: try row["purchase_token"].string(),
                productID: try row["product_id"].string(), kind: Kind(rawValue: try row["product_kind"].string()) ?? .product,
                settlement: Settlement(rawValue: try row["settle"].string()) ?? .acknowledge, attempts: try row["attempts"].int())
        }
    }

    /// Google confirmed (or had nothing left to be told): settled for good.
    package func settled(_ purchase: Unsettled, note: String? = nil) async throws {
        try await book.settle(bundleID: purchase.bundleID, key: purchase.key, note: note)
    }

    /// Not yet: tried again after `delay`, with why it failed.
    package func retry(_ purchase: Unsettled, after delay: Duration, failure: String) async throws {
        try await book.retry(bundleID: purchase.bundleID, key: purchase.key, after: delay, failure: failure)
    }

    /// How many paid purchases Google has not confirmed for longer than `age`, and how old the
    /// oldest is (seconds): past 72 hours Google refunds them, so an alert fires long before.
    package func overdue(olderThan age: Duration) async throws -> (count: Int, oldestSeconds: Int64) {
        let row = try await pool.query(
            """
            SELECT count(*) FILTER (WHERE paid_at < now() - make_interval(secs => $1)) AS overdue,
                   COALESCE(EXTRACT(EPOCH FROM now() - min(paid_at)), 0)::bigint AS oldest
              FROM ledger.google_purchases WHERE settle IS NOT NULL AND settled_at IS NULL AND paid_at IS NOT NULL
            """, [Double(age.components.seconds)]
        ).first
        return (try row?["overdue"].int() ?? 0, try row?["oldest"].int64() ?? 0)
    }
}
