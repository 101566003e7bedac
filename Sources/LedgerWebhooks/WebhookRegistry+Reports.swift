import LedgerPostgres

/// What the webhook tables say to those who report on them rather than deliver: a
/// subject-access export (one user's deliveries) and the server's gauges (the backlog).
extension WebhookRegistry {
    /// Where each webhook's deliveries to one user stand: `webhook`, `delivered`, `wanted`,
    /// `attempts`, `last_error`, `next_attempt_at`, by webhook.
    package static func deliveries(toUser userID: String, bundleID: String) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT webhook, delivered, wanted, attempts, last_error, next_attempt_at FROM ledger.webhook_queue
             WHERE bundle_id = $1 AND user_id = $2 ORDER BY webhook
            """, [bundleID, userID])
    }

    /// One user's changes parked after their retry window: `webhook`, `position`, `attempts`,
    /// `last_error`, `parked_at`.
    package static func parked(forUser userID: String, bundleID: String) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT webhook, position, attempts, last_error, parked_at FROM ledger.webhook_failures
             WHERE bundle_id = $1 AND user_id = $2 ORDER BY webhook, position
            """, [bundleID, userID])
    }

    /// Where deliveries stand overall, sampled at scrape time.
    package struct Backlog: Sendable {
        /// Users with changes a webhook has not been delivered yet (every webhook counted).
        package var users: Int
        /// How long the oldest delivery still failing has been failing, in seconds; 0 when none is.
        package var failingFor: Int
        /// Changes parked after their retry window.
        package var parked: Int
    }

    package static func backlog(on connection: PostgresConnection) throws -> Backlog {
        let row = try connection.query(
            """
            SELECT (SELECT count(*) FROM ledger.webhook_queue WHERE wanted > delivered) AS backlog,
                   (SELECT coalesce(extract(epoch FROM now() - min(first_failed_at))::bigint, 0) FROM ledger.webhook_queue
                     WHERE wanted > delivered AND first_failed_at IS NOT NULL) AS failing_for,
                   (SELECT count(*) FROM ledger.webhook_failures) AS parked
            """)[0]
        return Backlog(
            users: (try? row["backlog"].int()) ?? 0, failingFor: (try? row["failing_for"].int()) ?? 0,
            parked: (try? row["parked"].int()) ?? 0)
    }
}
