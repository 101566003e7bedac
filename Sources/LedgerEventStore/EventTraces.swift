import Foundation
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
