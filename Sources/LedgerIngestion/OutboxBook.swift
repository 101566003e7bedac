import LedgerPostgres

/// The bookkeeping the stores' outboxes share (`ledger.apple_finishes`, `ledger.google_purchases`):
/// a claimed row is settled for good — with a note when the store refused for good — or handed
/// back for a later try with why it failed, its claim released either way. Only each table's key
/// and the column that marks a row done differ.
struct OutboxBook: Sendable {
    /// The table, schema-qualified.
    let table: String
    /// The column that names a row within its app.
    let key: String
    /// The column set when nothing more is to be sent.
    let done: String
    let pool: PostgresPool

    /// Nothing more to send: settled now, `note` kept as the row's last word.
    func settle(bundleID: String, key: String, note: String?) async throws {
        try await pool.query(
            """
            UPDATE \(table) SET \(done) = now(), claimed_by = NULL, claimed_until = NULL, last_error = $3
             WHERE bundle_id = $1 AND \(self.key) = $2
            """, [bundleID, key, note.map { String($0.prefix(500)) }])
    }

    /// Not yet: due again after `delay`, with why it failed.
    func retry(bundleID: String, key: String, after delay: Duration, failure: String) async throws {
        try await pool.query(
            """
            UPDATE \(table)
               SET next_attempt_at = now() + make_interval(secs => $3), claimed_by = NULL, claimed_until = NULL, last_error = $4
             WHERE bundle_id = $1 AND \(self.key) = $2
            """, [bundleID, key, Double(delay.components.seconds), String(failure.prefix(500))])
    }
}
