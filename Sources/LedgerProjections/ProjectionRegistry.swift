import LedgerEventStore
import LedgerFormats
import LedgerPostgres

/// The registry of projections (`ledger.projections`: each one's active version) and their
/// checkpoints (`ledger.projection_checkpoints`), asked by the parts that follow a projection
/// without being it: the change projection, which has a checkpoint row of its own and reads the
/// log only as far as `users` has applied it, and the server's gauges. The tables are this
/// module's; the others get the SQL from here, so a change of the registry's shape is made once.
package enum ProjectionRegistry {
    /// A relation of one row, `p` (the registry row) joined to `c` (its active checkpoint), for
    /// the projection `name`: `SELECT c.tx_id, c.position FROM <this>` is where it has applied
    /// the log to, and `FOR SHARE OF p` holds a rebuild's switch until the caller commits.
    /// Holds every projection's batches until the caller commits: a batch in flight finishes
    /// first, and the next waits. An erasure takes it, so that no batch that read a user's facts
    /// before the erasure writes their timeline or changes under the old id after it.
    package static let holdBatchesSQL = "SELECT 1 FROM ledger.projection_checkpoints ORDER BY name, version FOR UPDATE"

    package static func activeCheckpointRelation(of name: String) -> String {
        """
        ledger.projections p JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version WHERE p.name = '\(name)'
        """
    }

    /// The checkpoint of one version of a projection, `tx_id, position`: a row value to compare
    /// log positions with.
    package static func checkpointSQL(of name: String, version: Int) -> String {
        "SELECT tx_id, position FROM ledger.projection_checkpoints WHERE name = '\(name)' AND version = \(version)"
    }

    /// Moves a projection version's checkpoint to `position`, in the caller's transaction.
    package static func advance(_ name: String, version: Int, to position: LogPosition) -> PipelinedStatement {
        PipelinedStatement(
            """
            UPDATE ledger.projection_checkpoints SET tx_id = $1::text::xid8, position = $2, updated_at = now() WHERE name = '\(name)' AND version = \(version)
            """, [position.transactionID, position.position])
    }

    /// How far behind the log the followed projections are, for the gauges: per name (`users`
    /// at its active version, `changes`), the events after its checkpoint and how long the oldest
    /// of them has waited (0 when caught up).
    package static func lag(on connection: PostgresConnection) throws -> [(name: String, events: Int, seconds: Double)] {
        try connection.query(
            """
            SELECT c.name, l.events, l.seconds
              FROM ledger.projection_checkpoints c,
                   LATERAL (\(EventStore.backlogSQL(after: "(c.tx_id, c.position)"))) l
             WHERE (c.name = 'users' AND c.version = (SELECT active_version FROM ledger.projections WHERE name = 'users'))
                OR (c.name = 'changes' AND c.version = 1)
             ORDER BY c.name
            """
        ).map { row in
            (
                (try? row["name"].string()) ?? "", (try? row["events"].int()) ?? 0,
                row["seconds"].optionalString().flatMap(Double.init) ?? 0
            )
        }
    }

    /// The rebuild of `users` under way, if any: a version being built that recorded its progress
    /// lately (a rebuild killed midway leaves its row behind; it stops counting after a minute).
    package static func rebuildUnderWay(on connection: PostgresConnection) throws -> (events: Int, total: Int)? {
        try connection.query(
            """
            SELECT progress_events, progress_total FROM ledger.projection_checkpoints
             WHERE name = 'users' AND status = 'building' AND progress_phase IS NOT NULL AND updated_at > now() - interval '1 minute'
             ORDER BY version DESC LIMIT 1
            """
        ).first.map { row in ((try? row["progress_events"].int()) ?? 0, (try? row["progress_total"].int()) ?? 0) }
    }
}
