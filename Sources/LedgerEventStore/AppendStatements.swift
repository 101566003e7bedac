import Foundation
import LedgerFormats
import LedgerPostgres

/// The SQL of the two append paths and how their outcomes are read.
///
/// One event (the common case: a purchase, a notification) takes `singleEventSQL`: one prepared
/// statement that reads the stream head, inserts the event with its chained hash and upserts the
/// head. It takes no row lock up front; the unique index on (stream, version) decides races — the
/// loser waits for the winner's commit, then fails with 23505 and is retried or refused here.
/// Several events take `ledger.append_events`, which locks the head, checks idempotency and hands
/// the chain to `ledger.write_chain` (schema/0008), as a group's `ledger.append_streams` does.
/// This statement is the chain rule written for exactly one event, kept apart on purpose: routed
/// through `ledger.write_chain` it measured 11 % slower (pgbench, 4 clients, durable commits:
/// 3,917 → 3,466 appends/s, medians of three). `ledger verify` recomputes every chain in Swift
/// (`EventHash`), whichever path wrote it, and the tests verify chains written by all three.
/// Measured on 2 cores with durable commits: the statement ran ~4,900 appends/s at 4 writers against
/// ~2,500 for the PL/pgSQL function, whose per-statement overhead dominates a one-row append.
enum AppendStatements {
    static let singleEventSQL = """
        WITH head AS (
            SELECT COALESCE(s.version, 0) AS version,
                   COALESCE(s.last_hash, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) AS hash,
                   now() AS now
              FROM (SELECT 1) AS one LEFT JOIN ledger.streams s ON s.stream = $1
             WHERE $2::bigint IS NULL OR COALESCE(s.version, 0) = $2::bigint
        ),
        next AS (
            SELECT $1::text AS stream, h.version + 1 AS version, $3::uuid AS event_id, $4::text AS event_type,
                   $5::jsonb AS data, COALESCE($6::jsonb, '{}'::jsonb) AS metadata,
                   COALESCE($7::timestamptz, h.now) AS occurred_at, h.now AS recorded_at, h.hash AS prev_hash
              FROM head h
        ),
        inserted AS (
            INSERT INTO ledger.events (stream, version, event_id, event_type, data, metadata, occurred_at, recorded_at, prev_hash, hash)
            SELECT n.stream, n.version, n.event_id, n.event_type, n.data, n.metadata, n.occurred_at, n.recorded_at, n.prev_hash,
                   ledger.event_hash(n.prev_hash, n.stream, n.version, n.event_id, n.event_type, n.data, n.metadata, n.occurred_at, n.recorded_at)
              FROM next n
            RETURNING event_id, version, tx_id, position, hash
        ),
        head_moved AS (
            INSERT INTO ledger.streams (stream, version, last_hash)
            SELECT $1, i.version, i.hash FROM inserted i
            ON CONFLICT (stream) DO UPDATE SET version = EXCLUDED.version, last_hash = EXCLUDED.last_hash
        )
        SELECT i.event_id, i.version, i.tx_id::text AS tx_id, i.position AS event_position, false AS duplicate FROM inserted i
        """

    static let multiEventSQL =
        "SELECT event_id, version, tx_id::text AS tx_id, event_position, duplicate FROM ledger.append_events($1, $2, $3::jsonb)"

    static let replaySQL = """
        SELECT e.event_id, e.version, e.tx_id::text AS tx_id, e.position AS event_position, true AS duplicate,
               e.stream = $2 AND e.event_type = $3 AND e.data = $4::jsonb AND e.metadata = COALESCE($5::jsonb, '{}'::jsonb) AS same
          FROM ledger.events e WHERE e.event_id = $1
        """

    /// Appends one event on `connection`, resolving every non-happy outcome to a replay, a retry or
    /// a typed error. Synchronous: runs on a pool thread.
    static func appendOne(
        _ event: NewEvent, to stream: String, expected: ExpectedVersion, on connection: PostgresConnection
    ) throws -> AppendResult {
        let parameters: [(any PostgresBindable)?] = [
            stream, expected.sqlValue, event.id, event.type, event.data, event.metadata, event.occurredAt,
        ]
        for _ in 0..<8 {
            do {
                let rows = try connection.query(singleEventSQL, parameters)
                if !rows.isEmpty { return try EventStore.result(stream: stream, rows: rows) }
                // No row: the expected version did not match — unless this is a replay, which wins.
                if let replay = try replay(event, on: stream, connection) { return replay }
                throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: try version(of: stream, connection))
            } catch let error as PostgresError where error.sqlState == "23505" {
                switch error.constraint {
                case "events_event_id_key":
                    if let replay = try replay(event, on: stream, connection) { return replay }
                    continue // the conflicting append rolled back after all: try again
                case "events_stream_version_key":
                    // Another append to this stream committed first.
                    if expected == .any { continue }
                    throw EventStoreError.wrongExpectedVersion(
                        stream: stream, expected: expected, actual: try version(of: stream, connection))
                default:
                    throw error
                }
            }
        }
        throw EventStoreError.database(PostgresError(code: .server, sqlState: "40001", message: "append to \(stream) lost too many races"))
    }

    /// The original result when `event` is already stored with the same content on `stream`;
    /// nil when its id is unused; `idempotencyConflict` when the id holds something else.
    private static func replay(_ event: NewEvent, on stream: String, _ connection: PostgresConnection) throws -> AppendResult? {
        let rows = try connection.query(replaySQL, [event.id, stream, event.type, event.data, event.metadata])
        guard let row = rows.first else { return nil }
        guard try row["same"].bool() else {
            throw EventStoreError.idempotencyConflict(stream: stream, eventIDs: [event.id.uuidString.lowercased()])
        }
        return try EventStore.result(stream: stream, rows: rows)
    }

    private static func version(of stream: String, _ connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT version FROM ledger.streams WHERE stream = $1", [stream]).first.map { try $0["version"].int64() } ?? 0
    }

    /// The `p_events` argument of `ledger.append_events`: data and metadata travel as JSON
    /// *strings*, so no payload can alter the array's shape.
    static func eventsArgument(_ events: [NewEvent]) -> String {
        var json = JSONWriter(reservingCapacity: 256 * events.count)
        write(events, into: &json)
        return json.text
    }

    /// The `p_appends` argument of `ledger.append_streams`.
    static func groupArgument(_ group: [StreamAppend]) -> String {
        var json = JSONWriter(reservingCapacity: 512 * group.count)
        json.array { json in
            for append in group {
                json.object { json in
                    json.key("stream"); json.value(append.stream)
                    json.key("expected"); json.value(append.expectedVersion.sqlValue ?? 0)
                    json.key("events"); write(append.events, into: &json)
                }
            }
        }
        return json.text
    }

    private static func write(_ events: [NewEvent], into json: inout JSONWriter) {
        json.array { json in
            for event in events {
                json.object { json in
                    json.key("id"); json.value(event.id.uuidString.lowercased())
                    json.key("type"); json.value(event.type)
                    json.key("data"); json.value(event.data)
                    json.key("metadata"); json.value(event.metadata)
                    if let occurredAt = event.occurredAt { json.key("occurred_at"); json.value(PostgresTimestamp.format(occurredAt)) }
                }
            }
        }
    }
}
