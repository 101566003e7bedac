import Foundation
import LedgerFormats
import LedgerPostgres
import LedgerTracing
import Tracing

/// The trace each event was recorded in (`ledger.event_traces`), so what the events cause later —
/// a change delivered to a webhook — continues the trace of the request that recorded them.
/// Nothing is written outside a sampled trace.
package enum EventTraces {
    /// Records `traceparent` for `events`; nil when there is nothing to record. An event already
    /// traced keeps its first trace (a replay recorded nothing).
    package static func statement(for events: [UUID], traceparent: String?) -> PipelinedStatement? {
        guard let traceparent, !events.isEmpty else { return nil }
        return statement(pairs: events.map { ($0, traceparent) })
    }

    /// Records each event's own trace (a group of requests, each in its own).
    package static func statement(pairs: [(event: UUID, traceparent: String)]) -> PipelinedStatement? {
        guard !pairs.isEmpty else { return nil }
        return PipelinedStatement(
            """
            INSERT INTO ledger.event_traces (event_id, traceparent)
            SELECT * FROM unnest($1::uuid[], $2::text[]) ON CONFLICT (event_id) DO NOTHING
            """,
            [PostgresTextArray(pairs.map { $0.event.uuidString.lowercased() }), PostgresTextArray(pairs.map(\.traceparent))])
    }

    /// The traces of the events after `lower` up to `upper` (row values `(tx_id, position)`, or
    /// subqueries giving one): `position` and `traceparent`, for the follower that continues them.
    package static func tracesSQL(after lower: String, upTo upper: String) -> String {
        """
        SELECT e.position, t.traceparent FROM ledger.event_traces t JOIN ledger.events e ON e.event_id = t.event_id
         WHERE (e.tx_id, e.position) > \(lower)
           AND (e.tx_id, e.position) <= \(upper)
        """
    }

    /// Forgets the traces of the events up to `last`, no longer needed once their follower has
    /// read them, and any left a day behind (an event erased under a new id, a replay's trace).
    package static func forget(upTo last: LogPosition) -> PipelinedStatement {
        PipelinedStatement(
            """
            DELETE FROM ledger.event_traces t
             WHERE t.recorded_at < now() - interval '1 day'
                OR EXISTS (SELECT 1 FROM ledger.events e WHERE e.event_id = t.event_id AND (e.tx_id, e.position) <= ($1::text::xid8, $2))
            """, [last.transactionID, last.position])
    }

    /// Records the current trace for `events` on `connection`, after they were appended: in the
    /// append's transaction when there is one (its failure is then the transaction's), else on
    /// its own, at best (the events stand whether or not their trace is kept).
    static func recordCurrent(_ events: [NewEvent], on connection: PostgresConnection) throws {
        guard let statement = statement(for: events.map(\.id), traceparent: Spans.traceparent()) else { return }
        if connection.isInTransaction {
            try connection.query(statement.sql, statement.parameters)
        } else {
            _ = try? connection.query(statement.sql, statement.parameters)
        }
    }
}
