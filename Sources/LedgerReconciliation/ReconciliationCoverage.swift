import Foundation
import LedgerCore
import LedgerPostgres

/// How far each app's notification history has been read (`ledger.apple_reconciliation`), and
/// the lease that lets one server at a time read it. A lease, not a lock held in a transaction:
/// a reconciliation waits on Apple for minutes, and the ledger never holds a transaction across
/// a call to Apple. A server that dies leaves a lease that simply expires.
struct ReconciliationCoverage: Sendable {
    struct Lease: Sendable {
        var bundleID: String
        var environment: AppleEnvironment
        var holder: UUID
        /// Notification history up to here was read and recorded before; nil on the first run.
        var coveredUntil: Date?
    }

    let pool: PostgresPool
    let duration: Duration

    /// The lease for the app and environment, or nil while another server holds it.
    func lease(_ bundleID: String, _ environment: AppleEnvironment, holder: UUID) async throws -> Lease? {
        try await whilePostgres("taking the reconciliation lease of \(bundleID) (\(environment.rawValue))") {
            try await pool.withConnection { connection in
                try connection.query(
                    "INSERT INTO ledger.apple_reconciliation (bundle_id, environment) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    [bundleID, environment.rawValue])
                let rows = try connection.query(
                    """
                    UPDATE ledger.apple_reconciliation
                       SET leased_by = $3, leased_until = now() + make_interval(secs => $4)
                     WHERE bundle_id = $1 AND environment = $2
                       AND (leased_until IS NULL OR leased_until < now() OR leased_by = $3)
                    RETURNING covered_until
                    """, [bundleID, environment.rawValue, holder, duration.seconds])
                guard let row = rows.first else { return nil }
                return Lease(
                    bundleID: bundleID, environment: environment, holder: holder,
                    coveredUntil: row["covered_until"].isNull ? nil : try row["covered_until"].date())
            }
        }
    }

    /// Extends a lease held over a long read; false when it was lost (it expired and another
    /// server took it), and the reading must stop.
    func renew(_ lease: Lease) async throws -> Bool {
        try await whilePostgres("renewing the reconciliation lease of \(lease.bundleID)") {
            try await !pool.query(
                """
                UPDATE ledger.apple_reconciliation SET leased_until = now() + make_interval(secs => $4)
                 WHERE bundle_id = $1 AND environment = $2 AND leased_by = $3
                RETURNING 1 AS renewed
                """, [lease.bundleID, lease.environment.rawValue, lease.holder, duration.seconds]
            ).isEmpty
        }
    }

    /// Gives the lease back with what the run found; `coveredUntil` (when the run read a window
    /// joining what was covered) becomes the next run's starting point.
    func release(_ lease: Lease, coveredUntil: Date?, result: String) async throws {
        try await whilePostgres("releasing the reconciliation lease of \(lease.bundleID)") {
            try await pool.query(
                """
                UPDATE ledger.apple_reconciliation
                   SET covered_until = GREATEST(covered_until, $4), leased_by = NULL, leased_until = NULL,
                       last_run_at = now(), last_result = $5
                 WHERE bundle_id = $1 AND environment = $2 AND leased_by = $3
                """, [lease.bundleID, lease.environment.rawValue, lease.holder, coveredUntil, String(result.prefix(500))])
        }
    }
}
