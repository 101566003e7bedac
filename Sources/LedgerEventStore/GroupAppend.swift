import Foundation
import LedgerPostgres

/// What a group transaction (`EventStore.withGroupAppend`) came to.
package enum GroupAppendOutcome<Decision: Sendable>: Sendable {
    /// The decided appends are committed; their results in the order they were decided.
    case appended(Decision, [AppendResult])
    /// Nothing was decided to append; the statements that came along are committed.
    case nothingToAppend(Decision)
    /// The appends were refused — a stream moved, an event id exists — or the database failed
    /// while appending: nothing of the group stands, the statements that came along neither.
    case refused(PostgresError)
}

extension EventStore {
    /// One transaction of two round trips for many streams at once: the streams' locks taken (as
    /// every writer that decides on a stream takes them), `alongside` run, the streams read; then
    /// what `decide` makes of them appended by one call (`ledger.append_streams`) and committed.
    ///
    /// For the group commit of concurrent requests: the caller owns the decisions, the store owns
    /// the transaction, the locks and the chain. `decide` runs on a pool thread and must not block.
    /// With nothing to append the transaction commits without waiting for the disk when
    /// `lazyWithoutAppends` (what came along is then only repaired by a later append's flush).
    package func withGroupAppend<Decision: Sendable>(
        streams: [String],
        alongside: [PipelinedStatement] = [],
        lazyWithoutAppends: Bool = false,
        decide: @escaping @Sendable ([String: [RecordedEvent]]) -> (Decision, [StreamAppend])
    ) async throws -> GroupAppendOutcome<Decision> {
        let opening = [PipelinedStatement("BEGIN"), Self.streamLocksStatement(streams)] + alongside + [
            PipelinedStatement(Self.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version",
                               [PostgresTextArray(streams)]),
        ]
        let outcome: GroupAppendOutcome<Decision> = try await pool.withConnection { connection in
            do {
                var existing: [String: [RecordedEvent]] = [:]
                for row in try connection.pipeline(opening, transaction: false).last! {
                    let event = try RecordedEvent(row: row)
                    existing[event.stream, default: []].append(event)
                }
                let (decision, appends) = decide(existing)
                guard !appends.isEmpty else {
                    let closing = (lazyWithoutAppends ? [PipelinedStatement.commitWithoutWaitingForDisk] : []) + [PipelinedStatement("COMMIT")]
                    _ = try connection.pipeline(closing, transaction: false)
                    return .nothingToAppend(decision)
                }
                do {
                    let rows = try connection.pipeline([Self.groupStatement(appends), PipelinedStatement("COMMIT")], transaction: false)[0]
                    return .appended(decision, try Self.groupResults(appends, rows: rows))
                } catch let error as PostgresError {
                    connection.rollbackIfNeeded()
                    return .refused(error)
                }
            } catch {
                connection.rollbackIfNeeded()
                throw error
            }
        }
        if case .appended = outcome { announceAppends() }
        return outcome
    }
}
