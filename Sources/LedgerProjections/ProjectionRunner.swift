import Foundation
import LedgerEventStore
import LedgerPostgres

/// Applies the log to the `users` projection one batch at a time, each batch in one transaction
/// with its checkpoint: lock the checkpoint row, read after it behind the snapshot fence, apply,
/// advance, commit. A crash anywhere applies nothing twice and loses nothing.
public enum ProjectionRunner {
    /// One batch on the *active* version, as the live worker does. The registry row is held
    /// FOR SHARE, so a rebuild's switch (FOR UPDATE) waits for this batch and the next batch
    /// sees the new version. Returns how many events it applied.
    public static func liveStep(on connection: PostgresConnection, batchSize: Int) throws -> Int {
        try liveBatch(on: connection, batchSize: batchSize).count
    }

    public struct Applied: Sendable {
        public var count: Int
        public var last: LogPosition?
        public var users: [(bundleID: String, userID: String)]
        /// The checkpoint after this batch: what the version has applied, whoever applied it.
        public var checkpoint: LogPosition
    }

    /// `liveStep`, also telling the last position applied and the users it changed, whom it
    /// announces to every process's `TimelineCache` (the NOTIFY is delivered at commit).
    public static func liveBatch(on connection: PostgresConnection, batchSize: Int) throws -> Applied {
        try connection.transaction { connection in
            // Projections are derived and their checkpoint commits with them: a batch lost in a
            // crash is applied again from the checkpoint. So no waiting for the disk here — the
            // rows are visible to readers at commit all the same.
            try connection.query("SELECT set_config('synchronous_commit', 'off', true)")
            let version = try connection.query(
                "SELECT active_version FROM ledger.projections WHERE name = $1 FOR SHARE", [UsersProjection.name])[0][0].int()
            return try batch(version: version, on: connection, batchSize: batchSize)
        }
    }

    /// One batch on `version`, inside the caller's transaction.
    public static func step(version: Int, on connection: PostgresConnection, batchSize: Int) throws -> Int {
        try batch(version: version, on: connection, batchSize: batchSize).count
    }

    static func batch(version: Int, on connection: PostgresConnection, batchSize: Int) throws -> Applied {
        let checkpoint = try connection.query("""
            SELECT tx_id::text AS tx_id, position FROM ledger.projection_checkpoints
             WHERE name = $1 AND version = $2 FOR UPDATE
            """, [UsersProjection.name, version])
        guard let row = checkpoint.first else {
            throw PostgresError(code: .decoding, message: "projection \(UsersProjection.name) has no version \(version)")
        }
        let after = LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64())
        let batch = try EventStore.readAll(on: connection, after: after, limit: batchSize)
        guard let last = batch.last else { return Applied(count: 0, last: nil, users: [], checkpoint: after) }
        let users = try UsersProjection(version: version).apply(batch, on: connection)
        try advance(version: version, to: last.position, on: connection)
        if !users.isEmpty { try connection.query("SELECT pg_notify($1, $2)", [TimelineCache.channel, TimelineCache.payload(users)]) }
        return Applied(count: batch.count, last: last.position, users: users, checkpoint: last.position)
    }

    static func advance(version: Int, to position: LogPosition, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE ledger.projection_checkpoints SET tx_id = $3::text::xid8, position = $4, updated_at = now()
             WHERE name = $1 AND version = $2
            """, [UsersProjection.name, version, position.transactionID, position.position])
    }

    /// How far the active version is behind the log: events committed after its checkpoint.
    public static func lag(on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            SELECT count(*) AS n FROM ledger.events e, ledger.projections p
              JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version
             WHERE p.name = $1 AND (e.tx_id, e.position) > (c.tx_id, c.position)
            """, [UsersProjection.name])[0]["n"].int()
    }
}
