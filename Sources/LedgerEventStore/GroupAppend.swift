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

/// The end of a group's transaction, for a caller that does more in it than append
/// (`EventStore.withGroupAppend`'s `finish`).
package struct GroupCommit<Decision: Sendable> {
    package let connection: PostgresConnection
    /// The results of the opening round trip's `alongside` statements, in order.
    package let alongside: [PostgresRows]
    /// The group's streams as read under their locks.
    package let existing: [String: [RecordedEvent]]
    /// The group's appends, decided, and the statement that appends them.
    package let appends: [StreamAppend]
    package let append: PipelinedStatement
    package let decision: Decision
}

extension EventStore {
    /// One transaction of two round trips (or what `finish` makes of the second) for many streams
    /// at once: `alongside` run, the streams' locks taken (as every writer that decides on a stream
    /// takes them), the streams read; then what `decide` makes of them appended by one call
    /// (`ledger.append_streams`) and committed. `alongside` comes first so that a lock it takes is
    /// waited for before the streams' locks are held (`ProjectionLocks`: the order of locks).
    ///
    /// For the group commit of concurrent requests: the caller owns the decisions, the store owns
    /// the transaction, the locks and the chain. `decide` runs on a pool thread and must not block.
    /// With nothing to append the transaction commits without waiting for the disk when
    /// `lazyWithoutAppends` (what came along is then only repaired by a later append's flush).
    ///
    /// `finish`, when given, ends the transaction instead of a plain append and commit: it runs
    /// the append first (so what follows sees the events), then whatever belongs in the same
    /// transaction, then COMMIT, and returns the append's rows and the decision as it leaves it.
    /// Any error there rolls the group back and is reported as `.refused`.
    package func withGroupAppend<Decision: Sendable>(
        streams: [String],
        alongside: [PipelinedStatement] = [],
        lazyWithoutAppends: Bool = false,
        decide: @escaping @Sendable ([String: [RecordedEvent]]) -> (Decision, [StreamAppend]),
        finish: (@Sendable (GroupCommit<Decision>) throws -> (appended: PostgresRows, decision: Decision))? = nil
    ) async throws -> GroupAppendOutcome<Decision> {
        let opening = [PipelinedStatement("BEGIN")] + alongside + [Self.streamLocksStatement(streams),
            PipelinedStatement(Self.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version",
                               [PostgresTextArray(streams)]),
        ]
        let outcome: GroupAppendOutcome<Decision> = try await pool.withConnection { connection in
            do {
                var existing: [String: [RecordedEvent]] = [:]
                let opened = try connection.pipeline(opening, transaction: false)
                for row in opened.last! {
                    let event = try RecordedEvent(row: row)
                    existing[event.stream, default: []].append(event)
                }
                let (decision, appends) = decide(existing)
                guard !appends.isEmpty else {
                    let closing = (lazyWithoutAppends ? [PipelinedStatement.commitWithoutWaitingForDisk] : []) + [PipelinedStatement("COMMIT")]
                    _ = try connection.pipeline(closing, transaction: false)
                    return .nothingToAppend(decision)
                }
                let append = Self.groupStatement(appends)
                do {
                    guard let finish else {
                        let rows = try connection.pipeline([append, PipelinedStatement("COMMIT")], transaction: false)[0]
                        return .appended(decision, try Self.groupResults(appends, rows: rows))
                    }
                    let finished = try finish(GroupCommit(connection: connection, alongside: Array(opened.dropFirst().prefix(alongside.count)), existing: existing,
                                                          appends: appends, append: append, decision: decision))
                    return .appended(finished.decision, try Self.groupResults(appends, rows: finished.appended))
                } catch {
                    connection.rollbackIfNeeded()
                    return .refused(error as? PostgresError ?? PostgresError(code: .decoding, message: "the group's transaction failed: \(error)"))
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
