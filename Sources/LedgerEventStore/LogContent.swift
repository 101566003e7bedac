import Foundation
import LedgerFormats
import LedgerPostgres

/// The log as the proof tree reads it: each event's place and its chain content (`EventHash`'s
/// bytes without the link), in the order every reader of the log follows, behind the same fence.
package enum LogContent {
    package struct Entry: Sendable {
        package var place: LogPosition
        package var fields: EventHash.Fields
    }

    /// The events after `bound` that no open transaction can still precede, in log order.
    package static func after(_ bound: LogPosition, limit: Int, on connection: PostgresConnection) throws -> [Entry] {
        try connection.query(
            columns + """
                 WHERE (e.tx_id, e.position) > ($1::text::xid8, $2)
                   AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
                 ORDER BY e.tx_id, e.position
                 LIMIT $3
                """, [String(bound.transactionID), bound.position, limit]
        ).map(entry)
    }

    /// The events at `positions` (any order; a position with no event is left out).
    package static func at(_ positions: [Int64], on connection: PostgresConnection) throws -> [Int64: Entry] {
        let rows = try connection.query(
            columns + " WHERE e.position = ANY($1::text[]::bigint[])", [PostgresTextArray(positions.map(String.init))])
        return Dictionary(try rows.map(entry).map { ($0.place.position, $0) }) { first, _ in first }
    }

    /// Every event of `streams`: what an erasure may have rewritten when it re-chained them.
    package static func inStreams(_ streams: [String], on connection: PostgresConnection) throws -> [Entry] {
        try connection.query(columns + " WHERE e.stream = ANY($1::text[])", [PostgresTextArray(streams)]).map(entry)
    }

    /// The data of every event of `type` (an audit reads the erasures' records so).
    package static func data(ofType type: String, on connection: PostgresConnection) throws -> [String] {
        try connection.query("SELECT e.data::text AS data FROM ledger.events e WHERE e.event_type = $1", [type]).map {
            try $0["data"].string()
        }
    }

    private static let columns = "SELECT e.tx_id::text AS tx_id, e.position, " + EventHash.Fields.columns + " FROM ledger.events e"

    private static func entry(_ row: PostgresRow) throws -> Entry {
        Entry(
            place: LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["position"].int64()),
            fields: try EventHash.Fields(row: row))
    }
}

extension EventHash.Fields {
    /// The columns of `ledger.events e` the fields are read from, times in microseconds as the
    /// hash takes them: the chain's verifier and the proof tree read an event's content alike.
    static let columns = """
        e.stream, e.version, e.event_id, e.event_type, e.data::text AS data, e.metadata::text AS metadata,
        (extract(epoch FROM e.occurred_at) * 1000000)::bigint AS occurred_us,
        (extract(epoch FROM e.recorded_at) * 1000000)::bigint AS recorded_us
        """

    init(row: PostgresRow) throws {
        self.init(
            stream: try row["stream"].string(), version: try row["version"].int64(), eventID: try row["event_id"].uuid(),
            type: try row["event_type"].string(), data: try row["data"].string(), metadata: try row["metadata"].string(),
            occurredAtMicros: try row["occurred_us"].int64(), recordedAtMicros: try row["recorded_us"].int64())
    }
}
