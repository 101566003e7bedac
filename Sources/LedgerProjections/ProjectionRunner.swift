import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres

/// Applies the log to the `users` projection one batch at a time, each batch in one transaction
/// with its checkpoint: lock the checkpoint row, read after it behind the snapshot fence, apply,
/// advance, commit. A crash anywhere applies nothing twice and loses nothing.
package enum ProjectionRunner {
    /// One batch on the *active* version, as the live worker does. The registry row is held
    /// FOR SHARE, so a rebuild's switch (FOR UPDATE) waits for this batch and the next batch
    /// sees the new version. Returns how many events it applied.
    package static func liveStep(on connection: PostgresConnection, batchSize: Int) throws -> Int {
        try liveBatch(on: connection, batchSize: batchSize).count
    }

    package struct Applied: Sendable {
        package var count: Int
        package var last: LogPosition?
        package var users: [(bundleID: String, userID: String)]
        /// The users' new timelines, in the same order (live batches only).
        package var timelines: [UserTimeline] = []
        /// The checkpoint after this batch: what the version has applied, whoever applied it.
        package var checkpoint: LogPosition
        /// Committed events were left for later behind the snapshot fence (live batches only).
        package var heldBack = false
    }

    /// `liveStep`, also telling the last position applied and the users it changed, whom it
    /// announces to every process's `TimelineCache` (the NOTIFY is delivered at commit).
    ///
    /// Four round trips whatever the batch: the transaction opened with its locks and the batch
    /// read; two of reads (`UsersProjection.changes`); the writes with the checkpoint and the
    /// commit. Writers wait for this batch before they answer, so its latency is theirs.
    ///
    /// `durable: false` (the default) commits without waiting for the disk: projections are
    /// derived, and a batch lost in a crash is applied again from the checkpoint. With streaming
    /// replicas it is `true`: a replica receives only WAL the primary has flushed, and an
    /// asynchronous commit waits for the WAL writer (`wal_writer_delay`, 200 ms by default) —
    /// every read after a write would wait that long for the replica.
    package static func liveBatch(
        on connection: PostgresConnection, batchSize: Int, origin: String? = nil, durable: Bool = false
    ) throws -> Applied {
        try connection.pipelinedTransaction { transaction in
            let opening = liveOpening(batchSize: batchSize, durable: durable)
            let opened = try transaction.send(opening.trip)
            guard let row = opened[opening.checkpoint].first else {
                throw PostgresError(code: .missingState, message: "projection \(UsersProjection.name) has no active version")
            }
            let version = try row["active_version"].int()
            let after = LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64())
            let batch = try opened[opening.batch].map(RecordedEvent.init(row:))
            let heldBack = try opened[opening.heldBack][0]["held"].bool()
            // Nothing to apply: the transaction commits, alone, as the body returns.
            guard let last = batch.last else { return Applied(count: 0, last: nil, users: [], checkpoint: after, heldBack: heldBack) }
            let applied = Set(try opened[opening.inline].map { try $0["tx_id"].uint64() })
            let changes = try UsersProjection(version: version).changes(
                for: batch.filter { !applied.contains($0.position.transactionID) },
                locking: .usersAndPurchases, in: transaction.roundTrips)
            var closing = RoundTrip(changes.writes + [advanceStatement(version: version, to: last.position)])
            if !applied.isEmpty {
                // Passed whole: every transaction before the batch's last one (the fence lets no
                // open transaction's events through, so nothing of theirs comes later).
                closing.add([
                    PipelinedStatement(
                        "DELETE FROM ledger.inline_projections WHERE version <> $1 OR tx_id < $2::text::xid8",
                        [version, last.position.transactionID])
                ])
            }
            if !changes.users.isEmpty { closing.add([TimelineCache.announcement(changes.users, origin: origin, position: last.position)]) }
            try transaction.commit(with: closing)
            return Applied(
                count: batch.count, last: last.position, users: changes.users, timelines: changes.timelines, checkpoint: last.position,
                heldBack: heldBack)
        }
    }

    /// A live batch's first round trip, and where each of its reads is.
    private struct LiveOpening {
        let trip: RoundTrip
        /// The active version and its checkpoint.
        let checkpoint: RoundTrip.Slot
        /// The batch: events after the checkpoint, behind the snapshot fence.
        let batch: RoundTrip.Slot
        let heldBack: RoundTrip.Slot
        /// Transactions whose writers applied their own events to this version (`InlineProjection`).
        let inline: RoundTrip.Slot
    }

    private static func liveOpening(batchSize: Int, durable: Bool) -> LiveOpening {
        let registry =
            "ledger.projections p JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version WHERE p.name = $1"
        var trip = RoundTrip()
        trip.add([
            // Projections are derived and their checkpoint commits with them: a batch lost in
            // a crash is applied again from the checkpoint. So no waiting for the disk here —
            // the rows are visible to readers at commit all the same — unless replicas read them.
            // Set first, so that it holds for every way the transaction ends.
            PipelinedStatement("SELECT set_config('synchronous_commit', $1, true)", [durable ? "on" : "off"]),
            .genericPlans,
        ])
        // The registry row FOR SHARE: a rebuild's switch (FOR UPDATE) waits for this batch.
        let checkpoint = trip.add(
            PipelinedStatement(
                "SELECT p.active_version, c.tx_id::text AS tx_id, c.position FROM \(registry) FOR SHARE OF p FOR UPDATE OF c",
                [UsersProjection.name]))
        let batch = trip.add(
            PipelinedStatement(
                EventStore.readAllSQL(after: "(SELECT c.tx_id, c.position FROM \(registry))", limit: "$2"),
                [UsersProjection.name, batchSize]))
        // Committed events the fence still holds back (an older transaction is open):
        // their appenders' wake-ups have come and gone, so the worker must look again soon
        // rather than sleep until the next append.
        let heldBack = trip.add(
            PipelinedStatement(EventStore.heldBackSQL(after: "(SELECT c.tx_id, c.position FROM \(registry))"), [UsersProjection.name]))
        let inline = trip.add(
            PipelinedStatement(
                """
                SELECT i.tx_id::text AS tx_id FROM ledger.inline_projections i
                 WHERE i.version = (SELECT active_version FROM ledger.projections WHERE name = $1)
                """, [UsersProjection.name]))
        return LiveOpening(trip: trip, checkpoint: checkpoint, batch: batch, heldBack: heldBack, inline: inline)
    }

    /// One batch on `version`, inside the caller's transaction.
    package static func step(version: Int, on connection: PostgresConnection, batchSize: Int) throws -> Int {
        try batch(version: version, on: connection, batchSize: batchSize).count
    }

    static func batch(version: Int, on connection: PostgresConnection, batchSize: Int) throws -> Applied {
        let checkpoint = try connection.query(
            """
            SELECT tx_id::text AS tx_id, position FROM ledger.projection_checkpoints
             WHERE name = $1 AND version = $2 FOR UPDATE
            """, [UsersProjection.name, version])
        guard let row = checkpoint.first else {
            throw PostgresError(code: .changedMeanwhile, message: "projection \(UsersProjection.name) has no version \(version)")
        }
        let after = LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64())
        let batch = try EventStore.readAll(on: connection, after: after, limit: batchSize)
        guard let last = batch.last else { return Applied(count: 0, last: nil, users: [], checkpoint: after) }
        let users = try UsersProjection(version: version).apply(batch, on: connection)
        try advance(version: version, to: last.position, on: connection)
        if !users.isEmpty {
            let announcement = TimelineCache.announcement(users, position: last.position)
            try connection.query(announcement.sql, announcement.parameters)
        }
        return Applied(count: batch.count, last: last.position, users: users, checkpoint: last.position)
    }

    static func advance(version: Int, to position: LogPosition, on connection: PostgresConnection) throws {
        let statement = advanceStatement(version: version, to: position)
        try connection.query(statement.sql, statement.parameters)
    }

    static func advanceStatement(version: Int, to position: LogPosition) -> PipelinedStatement {
        PipelinedStatement(
            """
            UPDATE ledger.projection_checkpoints SET tx_id = $3::text::xid8, position = $4, updated_at = now()
             WHERE name = $1 AND version = $2
            """, [UsersProjection.name, version, position.transactionID, position.position])
    }

    /// Where the active version has applied the log up to, on `connection`'s node (a replica's
    /// tells how far it has replayed the projection).
    package static func activeCheckpoint(on connection: PostgresConnection) throws -> LogPosition {
        let rows = try connection.query(
            """
            SELECT c.tx_id::text AS tx_id, c.position FROM ledger.projections p
              JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version WHERE p.name = $1
            """, [UsersProjection.name])
        guard let row = rows.first else { return .start }
        return LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64())
    }

    /// How far the active version is behind the log: events committed after its checkpoint.
    package static func lag(on connection: PostgresConnection) throws -> Int {
        try connection.query(
            """
            SELECT l.events AS n FROM ledger.projections p
              JOIN ledger.projection_checkpoints c ON c.name = p.name AND c.version = p.active_version,
                   LATERAL (\(EventStore.backlogSQL(after: "(c.tx_id, c.position)"))) l
             WHERE p.name = $1
            """, [UsersProjection.name])[0]["n"].int()
    }
}
