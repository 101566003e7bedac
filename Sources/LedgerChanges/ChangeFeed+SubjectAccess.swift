import LedgerPostgres

extension ChangeFeed {
    /// The changes announced about one user, for a subject-access export: each `body` as it was
    /// announced, in feed order.
    package static func changes(ofUser userID: String, bundleID: String) -> PipelinedStatement {
        PipelinedStatement("SELECT body FROM ledger.changes WHERE bundle_id = $1 AND user_id = $2 ORDER BY position", [bundleID, userID])
    }
}
