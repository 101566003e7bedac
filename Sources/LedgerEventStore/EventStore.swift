import Foundation
import LedgerBackground
import LedgerFormats
import LedgerPostgres
import Logging

/// The append-only log of every fact the ledger knows, on PostgreSQL.
///
/// Writes go through `ledger.append_events` (schema/0001), which does the stream lock, the
/// idempotency and version checks, the hash chain and the insert in one call — one round trip and
/// one short transaction per append. Reads of the global log only ever see events whose writing
/// transaction is older than every transaction still running, so none is skipped.
package final class EventStore: Sendable {
    let pool: PostgresPool
    let wakeup = Wakeup()
    let streamLocks = StreamLocks()
    private let publisher: AppendPublisher
    private let logger: Logger

    /// PostgreSQL channel notified by every append.
    package static let notificationChannel = "ledger_events"

    package init(pool: PostgresPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
        self.publisher = AppendPublisher(pool: pool, logger: logger)
    }

    // MARK: Appending

    /// Appends `events` to `stream` if its version matches `expectedVersion`.
    ///
    /// Replaying the same events (same ids and content) returns the original result and writes
    /// nothing, however long after. Because of that, a call that lost its connection mid-flight is
    /// retried here: either it had committed (and the retry is a replay) or it had not.
    @discardableResult
    package func append(_ events: [NewEvent], to stream: String, expectedVersion: ExpectedVersion = .any) async throws -> AppendResult {
        guard events.count == 1, let event = events.first else {
            let request = StreamAppend(stream: stream, events: events, expectedVersion: expectedVersion)
            return try await withAppendRetry(describe: { _ in (stream, expectedVersion) }) {
                try await self.pool.withConnection { connection in
                    let result = try Self.result(stream: stream, rows: connection.query(AppendStatements.multiEventSQL, request.parameters))
                    try EventTraces.recordCurrent(events, on: connection)
                    return result
                }
            }
        }
        return try await withAppendRetry(describe: { _ in (stream, expectedVersion) }) {
            try await self.pool.withConnection { connection in
                let result = try AppendStatements.appendOne(event, to: stream, expected: expectedVersion, on: connection)
                try EventTraces.recordCurrent(events, on: connection)
                return result
            }
        }
    }

    /// Commits several appends together in one transaction and one round trip (pipeline mode):
    /// all of them or none. Streams are locked in name order, so two batches never deadlock.
    @discardableResult
    package func append(batch: [StreamAppend]) async throws -> [AppendResult] {
        guard !batch.isEmpty else { return [] }
        let order = batch.indices.sorted { (batch[$0].stream, $0) < (batch[$1].stream, $1) }
        var trip = RoundTrip()
        let slots = order.map { trip.add(PipelinedStatement(AppendStatements.multiEventSQL, batch[$0].parameters)) }
        let appends = trip
        let results = try await withAppendRetry(describe: { error in
            // Name the append that failed, not the first one of the batch.
            let failed = error.statementIndex.flatMap { order.indices.contains($0) ? batch[order[$0]] : nil } ?? batch[order[0]]
            return (failed.stream, failed.expectedVersion)
        }) {
            try await self.pool.withConnection { connection in
                try connection.pipelinedTransaction { try $0.commit(with: appends) }
            }
        }
        var byRequest = [AppendResult?](repeating: nil, count: batch.count)
        for (slot, index) in zip(slots, order) {
            byRequest[index] = try Self.result(stream: batch[index].stream, rows: results[slot])
        }
        return byRequest.map { $0! }
    }

    /// Appends to several streams in one call and one commit (`ledger.append_streams`, schema/0006):
    /// the group commit of concurrent requests, each stream at most once and at the exact version
    /// its events were decided on. All or nothing; on `wrongExpectedVersion` or
    /// `idempotencyConflict` nothing is written and the caller appends its requests one by one.
    @discardableResult
    package func append(group: [StreamAppend]) async throws -> [AppendResult] {
        guard !group.isEmpty else { return [] }
        let statement = Self.groupStatement(group)
        let rows = try await withAppendRetry(describe: { error in
            let stream = error.sqlState == "LE001" ? error.detail ?? group[0].stream : group[0].stream
            return (stream, group.first { $0.stream == stream }?.expectedVersion ?? .any)
        }) {
            try await self.pool.withConnection { try $0.query(statement.sql, statement.parameters) }
        }
        return try Self.groupResults(group, rows: rows)
    }

    /// `append(group:)` as a statement, for `withGroupAppend`, which runs it inside its transaction.
    static func groupStatement(_ group: [StreamAppend]) -> PipelinedStatement {
        precondition(group.allSatisfy { $0.expectedVersion != .any }, "a group is decided on exact versions")
        return groupCall("ledger.append_streams", group)
    }

    /// `groupStatement` for streams that must not exist yet (`ledger.append_new_streams`, schema
    /// 0015): the heads' insert is the check, with none of `append_streams`' per-call reads.
    static func newStreamsStatement(_ group: [StreamAppend]) -> PipelinedStatement {
        precondition(group.allSatisfy { $0.expectedVersion == .noStream }, "only streams taken to be new")
        return groupCall("ledger.append_new_streams", group)
    }

    /// Either group function called on the group, with the columns `groupResults` reads.
    private static func groupCall(_ function: String, _ group: [StreamAppend]) -> PipelinedStatement {
        precondition(Set(group.map(\.stream)).count == group.count, "a group appends to each stream once")
        return PipelinedStatement(
            "SELECT stream, event_id, version, tx_id::text AS tx_id, event_position, false AS duplicate FROM \(function)($1::jsonb)",
            [AppendStatements.groupArgument(group)])
    }

    /// Each append's result from the rows of `groupStatement`, in the group's order.
    static func groupResults(_ group: [StreamAppend], rows: PostgresRows) throws -> [AppendResult] {
        var byStream: [String: [PostgresRow]] = [:]
        for row in rows { byStream[try row["stream"].string(), default: []].append(row) }
        return try group.map { try result(stream: $0.stream, rows: byStream[$0.stream] ?? []) }
    }

    /// Wakes this process's subscribers and tells other processes, after a commit of appends made
    /// outside this store's own methods.
    func announceAppends() {
        wakeup.signal()
        publisher.poke()
    }

    private func withAppendRetry<T: Sendable>(
        describe: (PostgresError) -> (stream: String, expected: ExpectedVersion),
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let result = try await body()
                announceAppends()
                return result
            } catch let error as PostgresError {
                // 23505 on the event id: the same id was committed concurrently on another stream;
                // on retry the function sees it and answers replay or conflict. Lost connection and
                // deadlock: the append is idempotent, so retrying once is safe.
                let retryable =
                    (error.sqlState == "23505" && error.constraint == "events_event_id_key")
                    || error.code == .connectionLost || error.sqlState == "40P01"
                if retryable && attempt < 3 { continue }
                let (stream, expected) = describe(error)
                throw EventStoreError.from(error, stream: stream, expected: expected)
            }
        }
    }

    static func result(stream: String, rows: some Sequence<PostgresRow>) throws -> AppendResult {
        var events: [AppendedEvent] = []
        var replay = false
        for row in rows {
            events.append(
                AppendedEvent(
                    id: try row["event_id"].uuid(), version: try row["version"].int64(),
                    position: LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["event_position"].int64())))
            replay = try row["duplicate"].bool()
        }
        return AppendResult(stream: stream, events: events, wasReplay: replay)
    }

    // MARK: Reading

    /// A stream's events in version order, starting after `afterVersion`.
    package func read(stream: String, afterVersion: Int64 = 0, limit: Int = 1000) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try connection.query(
                Self.selectEventsSQL + """
                     WHERE e.stream = $1 AND e.version > $2 ORDER BY e.version LIMIT $3
                    """, [stream, afterVersion, limit]
            ).map(RecordedEvent.init(row:))
        }
    }

    /// The names of the streams that match a SQL `LIKE` pattern, in order.
    package func streamNames(like pattern: String) async throws -> [String] {
        try await pool.query("SELECT stream FROM ledger.streams WHERE stream LIKE $1 ORDER BY stream", [pattern]).map {
            try $0["stream"].string()
        }
    }

    /// The streams starting with `prefix` that hold an event of `type` whose data says `userID`:
    /// for the few event types indexed by user (schema 0023), such as appAccountToken links.
    package func streams(prefix: String, holding type: String, forUser userID: String) async throws -> [String] {
        try await pool.query(
            """
            SELECT DISTINCT stream FROM ledger.events WHERE event_type = $1 AND data->>'userID' = $2 AND starts_with(stream, $3) ORDER BY stream
            """, [type, userID, prefix]
        ).map { try $0["stream"].string() }
    }

    /// The position of the last event appended (committed or not), 0 for an empty log: a gauge.
    package static func lastAppended(on connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT coalesce(max(position), 0) AS n FROM ledger.events")[0]["n"].int64()
    }

    /// The stream's current version, 0 when it has no events.
    package func version(of stream: String) async throws -> Int64 {
        let rows = try await pool.query("SELECT version FROM ledger.streams WHERE stream = $1", [stream])
        return try rows.first.map { try $0["version"].int64() } ?? 0
    }

    /// Up to `limit` events after `position` in global order, behind the snapshot fence: an event
    /// whose transaction is older than a transaction still running is held back until that one
    /// ends, so a checkpoint taken at the last event returned can never skip anything.
    package func readAll(after position: LogPosition, limit: Int = 1000) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try Self.readAll(on: connection, after: position, limit: limit)
        }
    }

    /// The same read, on a connection the caller holds (projection workers read and apply in one transaction).
    package static func readAll(on connection: PostgresConnection, after position: LogPosition, limit: Int) throws -> [RecordedEvent] {
        try connection.query(readAllSQL(after: "($1::xid8, $2::bigint)", limit: "$3"), [position.transactionID, position.position, limit])
            .map(RecordedEvent.init(row:))
    }

    /// The global read behind the fence, after `bound` — a `(tx_id, position)` row expression,
    /// e.g. a subquery of a checkpoint — with `limit` a parameter reference.
    package static func readAllSQL(after bound: String, limit: String) -> String {
        selectEventsSQL + """
             WHERE (e.tx_id, e.position) > \(bound)
               AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
             ORDER BY e.tx_id, e.position
             LIMIT \(limit)
            """
    }

    /// `held`: whether committed events after `bound` wait behind the fence (a transaction older
    /// than theirs is still open), so a reader that found nothing should look again shortly.
    /// Asked of the last event of the log alone — there is such an event exactly when the last one
    /// is behind the fence, since the fence is above every `bound` a reader reached — so it is
    /// one step down the index; the same question of every event after `bound` was planned as a
    /// scan of the whole log (measured: one per ten retention requests, 0.6 ms at 12,000 events).
    package static func heldBackSQL(after bound: String) -> String {
        """
        SELECT EXISTS (SELECT 1 FROM (SELECT e.tx_id, e.position FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1) l
                        WHERE (l.tx_id, l.position) > \(bound) AND l.tx_id >= pg_snapshot_xmin(pg_current_snapshot())) AS held
        """
    }

    /// `SELECT … FROM ledger.events e`, the columns `RecordedEvent(row:)` reads; append a WHERE clause.
    package static let selectEventsSQL = """
        SELECT e.event_id, e.stream, e.version, e.event_type, e.data::text AS data, e.metadata::text AS metadata,
               e.occurred_at, e.recorded_at, e.tx_id::text AS tx_id, e.position
          FROM ledger.events e
        """

    // MARK: Notifications

    /// Connects this store to other processes: a LISTEN connection wakes this store's subscriptions
    /// when anyone appends, and a publisher NOTIFYs others after this store's appends. The server
    /// runs it for its lifetime; without it, subscriptions still see everything by polling.
    /// `also`: other channels heard on the same connection (each server holds one, not one per
    /// listener: a database hands out only so many), with what to do with each payload.
    package func runNotifications(also channels: [String: @Sendable (String) -> Void] = [:], heartbeat: Heartbeat? = nil) async {
        let wakeup = self.wakeup
        let listener = PostgresListener(
            configuration: pool.configuration, channels: [Self.notificationChannel] + channels.keys.sorted(), heartbeat: heartbeat,
            logger: logger
        ) { notification in
            guard case .notify(let channel, let payload) = notification, channel != Self.notificationChannel else { return wakeup.signal() }
            channels[channel]?(payload)
        }
        listener.start()
        await publisher.loop.runUntilCancelled()
        await listener.stop()
    }

    /// Incremented by every append through this store; with `waitForAppends` lets a worker sleep
    /// until there may be something new (or `timeout` passes).
    package var appendGeneration: UInt64 { wakeup.generation }

    package func waitForAppends(after generation: UInt64, timeout: Duration) async {
        await wakeup.wait(after: generation, timeout: timeout)
    }

    /// Follows the global log from `position`: see `EventSubscription`.
    package func subscribe(
        after position: LogPosition, batchSize: Int = 500, pollInterval: Duration = .milliseconds(250)
    ) -> EventSubscription {
        EventSubscription(store: self, start: position, batchSize: batchSize, pollInterval: pollInterval, logger: logger)
    }
}

extension StreamAppend {
    var parameters: [(any PostgresBindable)?] {
        [stream, expectedVersion.sqlValue, AppendStatements.eventsArgument(events)]
    }
}

extension RecordedEvent {
    package init(row: PostgresRow) throws {
        self.init(
            id: try row["event_id"].uuid(), stream: try row["stream"].string(), version: try row["version"].int64(),
            type: try row["event_type"].string(), data: try row["data"].string(), metadata: try row["metadata"].string(),
            occurredAt: try row["occurred_at"].date(), recordedAt: try row["recorded_at"].date(),
            position: LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64()))
    }
}
