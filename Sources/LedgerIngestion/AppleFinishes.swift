import Foundation
import LedgerCore
import LedgerPostgres

/// The transactions to finish at Apple (`ledger.apple_finishes`), for an app whose server grants
/// content and so finishes transactions itself (`server_finishes_transactions`): an outbox filled
/// as a purchase or renewal is recorded, emptied by the finisher when Apple confirms, kept across
/// restarts and outages. Several servers share the work, each row claimed for a minute at a time.
package struct AppleFinishes: Sendable {
    package struct Due: Sendable {
        package var bundleID: String
        package var transactionID: String
        package var environment: AppleEnvironment
        package var attempts: Int
    }

    let pool: PostgresPool
    var book: OutboxBook { OutboxBook(table: "ledger.apple_finishes", key: "transaction_id", done: "finished_at", pool: pool) }

    package init(pool: PostgresPool) { self.pool = pool }

    /// Remembers the new transactions among `events` when the app finishes from its server (only
    /// Apple's two real environments have the endpoint); one remembered before changes nothing.
    func enqueue(_ events: [LedgerEvent], app: AppConfiguration) async throws {
        guard app.settings.serverFinishesTransactions == true else { return }
        var ids: [String] = [], environments: [String] = []
        for event in events {
            let transaction: TransactionFacts
            switch event {
            case .purchased(let t), .renewed(let t): transaction = t
            default: continue
            }
            let t = transaction
            guard [.production, .sandbox].contains(t.environment), !ids.contains(t.transactionID) else { continue }
            ids.append(t.transactionID)
            environments.append(t.environment.rawValue)
        }
        guard !ids.isEmpty else { return }
        try await pool.query(
            """
            INSERT INTO ledger.apple_finishes (bundle_id, transaction_id, environment)
            SELECT $1, t.id, t.environment FROM unnest($2::text[], $3::text[]) AS t(id, environment)
            ON CONFLICT DO NOTHING
            """, [app.bundleID, PostgresTextArray(ids), PostgresTextArray(environments)])
    }

    /// Up to `limit` finishes due, claimed by `holder` for a minute.
    package func claim(limit: Int, holder: UUID) async throws -> [Due] {
        try await pool.query(
            """
            UPDATE ledger.apple_finishes f
               SET claimed_by = $1, claimed_until = now() + interval '60 seconds', attempts = f.attempts + 1
             WHERE (f.bundle_id, f.transaction_id) IN (
                   SELECT w.bundle_id, w.transaction_id FROM ledger.apple_finishes w
                    WHERE w.finished_at IS NULL AND w.next_attempt_at <= now()
                      AND (w.claimed_until IS NULL OR w.claimed_until < now())
                    ORDER BY w.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING f.bundle_id, f.transaction_id, f.environment, f.attempts
            """, [holder, limit]
        ).map { row in
            Due(
                bundleID: try row["bundle_id"].string(), transactionID: try row["transaction_id"].string(),
                environment: AppleEnvironment(rawValue: try row["environment"].string()) ?? .production, attempts: try row["attempts"].int()
            )
        }
    }

    /// Apple confirmed, or refused for good (`note` says why): nothing more to send.
    package func finished(_ due: Due, note: String? = nil) async throws {
        try await book.settle(bundleID: due.bundleID, key: due.transactionID, note: note)
    }

    /// Not yet: tried again after `delay`, with why it failed.
    package func retry(_ due: Due, after delay: Duration, failure: String) async throws {
        try await book.retry(bundleID: due.bundleID, key: due.transactionID, after: delay, failure: failure)
    }
}
