import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres

/// Apple's CONSUMPTION_REQUESTs waiting for an answer (`ledger.consumption_requests`): an outbox
/// filled when such a notification is recorded, by the webhook or by reconciliation, and emptied
/// by the consumption responder — so a request outlives restarts and Apple's outages until its
/// 12 hours run out. Several servers share the work: a request is claimed for a minute at a time.
package struct ConsumptionRequests: Sendable {
    package struct Pending: Sendable {
        package var bundleID: String
        package var notificationUUID: String
        package var transactionID: String
        package var originalTransactionID: String
        package var environment: AppleEnvironment
        package var attempts: Int
    }

    /// Apple waits this long from its request for an answer.
    package static let deadline: TimeInterval = 12 * 3600
    let pool: PostgresPool
    let store: EventStore

    /// Remembers a request to answer; the same request again changes nothing.
    func enqueue(_ notification: AppleNotification, transaction: TransactionFacts, bundleID: String) async throws {
        guard let uuid = notification.notificationUUID, [.production, .sandbox].contains(transaction.environment) else { return }
        try await pool.query(
            """
            INSERT INTO ledger.consumption_requests
                (bundle_id, notification_uuid, transaction_id, original_transaction_id, environment, requested_at)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
            """,
            [
                bundleID, uuid, transaction.transactionID, transaction.originalTransactionID, transaction.environment.rawValue,
                notification.signedDate ?? Date(),
            ])
    }

    /// Up to `limit` unanswered requests still within Apple's deadline, claimed by `holder` for a minute.
    package func claim(limit: Int, holder: UUID) async throws -> [Pending] {
        try await pool.query(
            """
            UPDATE ledger.consumption_requests r
               SET claimed_by = $1, claimed_until = now() + interval '60 seconds', attempts = r.attempts + 1
             WHERE (r.bundle_id, r.notification_uuid) IN (
                   SELECT w.bundle_id, w.notification_uuid FROM ledger.consumption_requests w
                    WHERE w.answered_at IS NULL AND w.requested_at > now() - interval '12 hours'
                      AND (w.claimed_until IS NULL OR w.claimed_until < now())
                    ORDER BY w.requested_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING r.bundle_id, r.notification_uuid, r.transaction_id, r.original_transaction_id, r.environment, r.attempts
            """, [holder, limit]
        ).map { row in
            Pending(
                bundleID: try row["bundle_id"].string(), notificationUUID: try row["notification_uuid"].string(),
                transactionID: try row["transaction_id"].string(), originalTransactionID: try row["original_transaction_id"].string(),
                environment: AppleEnvironment(rawValue: try row["environment"].string()) ?? .production, attempts: try row["attempts"].int()
            )
        }
    }

    /// The request is settled (answered, or never to be answered): `outcome` says which.
    package func settle(_ pending: Pending, outcome: String) async throws {
        try await pool.query(
            """
            UPDATE ledger.consumption_requests SET answered_at = now(), outcome = $3, claimed_by = NULL, claimed_until = NULL
             WHERE bundle_id = $1 AND notification_uuid = $2
            """, [pending.bundleID, pending.notificationUUID, String(outcome.prefix(500))])
    }

    /// The request failed for now (Apple away); tried again after `delay`.
    package func retry(_ pending: Pending, after delay: Duration, failure: String) async throws {
        try await pool.query(
            """
            UPDATE ledger.consumption_requests SET claimed_until = now() + make_interval(secs => $3), outcome = $4
             WHERE bundle_id = $1 AND notification_uuid = $2
            """, [pending.bundleID, pending.notificationUUID, Double(delay.components.seconds), "failed: " + String(failure.prefix(480))])
    }

    /// The transaction as its purchase stream knows it now (the latest snapshot Apple signed),
    /// and its owner.
    package func purchase(_ pending: Pending) async throws -> (transaction: TransactionFacts?, owner: String?) {
        let stream = try await PurchaseStream.read(store, bundleID: pending.bundleID, originalTransactionID: pending.originalTransactionID)
        return (stream.transaction(pending.transactionID), stream.owner)
    }

    /// Records what Apple was told, once per request: the event's id derives from the request's
    /// UUID, so a second server that sent the same answer records nothing more.
    package func record(_ answer: ConsumptionAnswer, bundleID: String) async throws {
        let id = StableID.make(bundleID, "consumption-answer", answer.notificationUUID)
        let (stream, event) = try StoredFacts.newEvent(
            .consumptionInformationSent(answer), bundleID: bundleID, id: id, occurredAt: answer.sentAt)
        _ = try await store.serialized(on: stream) { locked -> Bool in
            guard try locked.event(id: id) == nil else { return false }
            _ = try locked.append([event], expectedVersion: .exact(try locked.version()))
            return true
        }
    }
}
