import LedgerEventStore
import LedgerPostgres
import Logging

/// Read-your-writes for the API: after an append, wait until the live projection has applied it,
/// so the answer — and every later read by the same caller — includes it.
enum ProjectionFreshness {
    static func wait(for position: LogPosition, pool: PostgresPool, timeout: Duration = .seconds(5), logger: Logger) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var pause = Duration.milliseconds(1)
        while clock.now < deadline {
            let rows = try await pool.query("""
                SELECT c.tx_id::text AS tx_id, c.position FROM ledger.projections p
                  JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version WHERE p.name = 'users'
                """)
            if let row = rows.first {
                let applied = LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64())
                if applied >= position { return }
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(20))
        }
        logger.warning("projection did not catch up in time; answering from what it has", metadata: ["position": "\(position)"])
    }
}
