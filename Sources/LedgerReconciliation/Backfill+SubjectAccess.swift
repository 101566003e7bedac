import LedgerPostgres

extension Backfill {
    /// The backfill lines imported for one user, for a subject-access export: `reference` and
    /// `done_at`, by reference.
    package static func linesDone(forUser userID: String, bundleID: String) -> PipelinedStatement {
        PipelinedStatement(
            "SELECT reference, done_at FROM ledger.backfill_done WHERE bundle_id = $1 AND user_id = $2 ORDER BY reference",
            [bundleID, userID])
    }
}
