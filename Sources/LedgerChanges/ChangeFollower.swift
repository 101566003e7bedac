import LedgerPostgres

/// A part above the change projection that must learn of new changes in the same statement that
/// writes them — the webhook queues, so that a change committed is a change queued, with no
/// window where a crash loses the one without the other. The projection cannot name the
/// follower's tables (they are not its own, and their module sits above this one), so the
/// follower hands it a statement to run as a data-modifying `WITH` clause beside the insert.
package struct ChangeFollower: Sendable {
    /// The clause, given the name of the relation of the changes just inserted (columns
    /// `bundle_id`, `user_id`, `position`).
    package let statement: @Sendable (_ inserted: String) -> String

    package init(statement: @escaping @Sendable (_ inserted: String) -> String) { self.statement = statement }
}

/// Reads of the changes for the parts that deliver them, as relations to put in their own
/// statements: the table is this module's, its columns spelled here only.
package enum ChangeRelations {
    /// A statement that holds, until its transaction ends, the lock under which changes are
    /// numbered and announced: a part that must see either a batch's queued users or its numbers
    /// (a new webhook's starting point) takes it first.
    package static let lock = PipelinedStatement("SELECT pg_advisory_xact_lock(\(ChangeProjection.lockKey))")

    /// The last position announced, 0 before any: a scalar subquery.
    package static let lastPositionSQL = "(SELECT coalesce(max(position), 0) FROM ledger.changes)"

    /// The first change of the user after `position` whose type is in `types` (SQL expressions of
    /// the caller's statement; `types` a text[] or NULL for every type): columns `position`, `id`
    /// (text), `body`, `traceparent`. For a LATERAL join.
    package static func nextSQL(bundle: String, user: String, after position: String, types: String) -> String {
        """
        SELECT c.position, c.id::text AS id, c.body, c.traceparent FROM ledger.changes c
         WHERE c.bundle_id = \(bundle) AND c.user_id = \(user) AND c.position > \(position)
           AND (\(types) IS NULL OR c.type = ANY(\(types)))
         ORDER BY c.position LIMIT 1
        """
    }

    /// The users of the app with changes from `position` on, each with the last one's position:
    /// columns `user_id`, `last`.
    package static func usersSQL(bundle: String, from position: String) -> String {
        """
        SELECT c.user_id, max(c.position) AS last FROM ledger.changes c
         WHERE c.bundle_id = \(bundle) AND c.position >= \(position) GROUP BY c.user_id
        """
    }
}
