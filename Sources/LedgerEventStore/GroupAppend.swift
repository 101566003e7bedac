import Foundation
import LedgerPostgres

/// What a group transaction (`EventStore.withGroupAppend`) came to.
package enum GroupAppendOutcome<Decision: Sendable>: Sendable {
    /// The decided appends are committed; their results in the order they were decided.
    case appended(Decision, [AppendResult])
    /// Nothing was decided to append; the statements that came along are committed.
    case nothingToAppend(Decision)
    /// The appends were refused — a stream moved, an event id exists — or the database or a
    /// participant failed while appending: nothing of the group stands, the statements that came
    /// along neither. The cause as it was thrown.
    case refused(any Error)
}

/// A group's transaction as the store lends it to a caller that does more in it than append
/// (`EventStore.withGroupAppend`'s `finish`).
package struct GroupCommit<Decision: Sendable> {
    /// The group's transaction: `finish` sends its round trips in it and reads its own results by
    /// handle. Its end is the store's (`GroupFinish`).
    package let roundTrips: TransactionRoundTrips
    /// What `finish`'s first round trip must begin with: nothing when the streams were read in an
    /// opening round trip; the caller's `alongside` and the streams' locks when they were assumed
    /// new (`assumingNewStreams`) — that round trip then also carries the transaction's BEGIN.
    /// `finish` builds on a copy of it.
    package let opening: RoundTrip
    /// Where the caller's `alongside` is in the opening round trip.
    let alongsidePart: RoundTrip.Part
    /// The opening round trip's results, when it was sent before `finish`.
    let opened: RoundTripResults?
    /// The group's streams as read under their locks.
    package let existing: [String: [RecordedEvent]]
    /// The group's appends, decided, and the statement that appends them.
    package let appends: [StreamAppend]
    package let append: PipelinedStatement
    package let decision: Decision

    /// The results of the caller's `alongside`, for its own slots, once they are back: from the
    /// opening round trip if it was sent before `finish`, else nil.
    package var openedAlongside: RoundTripResults? { opened.map { $0[alongsidePart] } }

    /// The results of the caller's `alongside`, for its own slots, given the results of the first
    /// round trip `finish` sent (built on `opening`).
    package func alongside(in first: RoundTripResults) -> RoundTripResults { (opened ?? first)[alongsidePart] }

    /// The same commit with `statements` sent first in `finish`'s first round trip: writes that
    /// depend on what was decided (the trace each appended event was recorded in).
    package func sending(first statements: [PipelinedStatement]) -> GroupCommit {
        var opening = self.opening
        opening.add(statements)
        return GroupCommit(
            roundTrips: roundTrips, opening: opening, alongsidePart: alongsidePart, opened: opened, existing: existing, appends: appends,
            append: append, decision: decision)
    }
}

/// What `finish` hands back to the store, which ends the group's transaction: the statements of
/// its last round trip, sent with the COMMIT; the append's rows (`GroupCommit.append`, read by
/// `finish` from the round trip that carried it); the decision as `finish` leaves it; and what to
/// do once the group is committed — never after a rollback (telling a cache what the group wrote).
package struct GroupFinish<Decision: Sendable> {
    package var closing: RoundTrip
    package var appended: PostgresRows
    package var decision: Decision
    package var committed: () -> Void

    package init(closing: RoundTrip, appended: PostgresRows, decision: Decision, committed: @escaping () -> Void = {}) {
        self.closing = closing
        self.appended = appended
        self.decision = decision
        self.committed = committed
    }
}

extension EventStore {
    /// One transaction of two round trips (or what `finish` makes of the second) for many streams
    /// at once: `alongside` run, the streams' locks taken (as every writer that decides on a stream
    /// takes them), the streams read; then what `decide` makes of them appended by one call
    /// (`ledger.append_streams`) and committed. `alongside` comes first so that a lock it takes is
    /// waited for before the streams' locks are held (`ProjectionLocks`: the order of locks).
    ///
    /// For the group commit of concurrent requests: the caller owns the decisions, the store owns
    /// the transaction — its BEGIN, COMMIT and ROLLBACK, whoever else writes into it — the locks and
    /// the chain. `decide` runs on a pool thread and must not block. With nothing to append the
    /// transaction commits without waiting for the disk when `lazyWithoutAppends` (what came along
    /// is then only repaired by a later append's flush).
    ///
    /// `finish`, when given, writes into the transaction instead of a plain append: it sends the
    /// append first (so what follows sees the events), then whatever belongs in the same
    /// transaction, and hands back the statements that go with the COMMIT (`GroupFinish`). Any
    /// error there, or in that last round trip, rolls the group back and is reported as `.refused`.
    ///
    /// `assumingNewStreams`: the streams are taken to be empty without reading them — decided
    /// first, then locked and appended in the round trip that also begins the transaction (and,
    /// with `finish`, in its first round trip: `GroupCommit.opening`). The append's expected
    /// versions (`.noStream`) hold the assumption to account: when a stream exists after all,
    /// the group is `.refused` and nothing of it stands. For groups that are usually new
    /// purchases (a backfill, a launch): one round trip less.
    package func withGroupAppend<Decision: Sendable>(
        streams: [String],
        alongside: RoundTrip = RoundTrip(),
        assumingNewStreams: Bool = false,
        lazyWithoutAppends: Bool = false,
        decide: @escaping @Sendable ([String: [RecordedEvent]]) -> (Decision, [StreamAppend]),
        finish: (@Sendable (GroupCommit<Decision>) throws -> GroupFinish<Decision>)? = nil
    ) async throws -> GroupAppendOutcome<Decision> {
        var locked = RoundTrip()
        let alongsidePart = locked.include(alongside)
        locked.add([Self.streamLocksStatement(streams)])
        let opening = locked
        let outcome: GroupAppendOutcome<Decision>
        let assumed = assumingNewStreams ? decide([:]) : nil
        if let assumed, !assumed.1.isEmpty {
            // The streams taken to be new: begun, locked and appended in one round trip.
            let (decision, appends) = assumed
            outcome = try await pool.withConnection { connection in
                try connection.pipelinedTransaction { transaction in
                    Self.appendAndCommit(
                        GroupCommit(
                            roundTrips: transaction.roundTrips, opening: opening, alongsidePart: alongsidePart, opened: nil, existing: [:],
                            appends: appends, append: Self.newStreamsStatement(appends), decision: decision),
                        in: transaction, finish: finish)
                }
            }
        } else {
            var reading = opening
            let read = reading.add(
                PipelinedStatement(
                    Self.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version",
                    [PostgresTextArray(streams)]))
            let first = reading
            outcome = try await pool.withConnection { connection in
                try connection.pipelinedTransaction { transaction in
                    var existing: [String: [RecordedEvent]] = [:]
                    let opened = try transaction.send(first)
                    for row in opened[read] {
                        let event = try RecordedEvent(row: row)
                        existing[event.stream, default: []].append(event)
                    }
                    let (decision, appends) = decide(existing)
                    guard !appends.isEmpty else {
                        try transaction.commit(waitingForDisk: !lazyWithoutAppends)
                        return .nothingToAppend(decision)
                    }
                    return Self.appendAndCommit(
                        GroupCommit(
                            roundTrips: transaction.roundTrips, opening: RoundTrip(), alongsidePart: alongsidePart, opened: opened,
                            existing: existing, appends: appends, append: Self.groupStatement(appends), decision: decision),
                        in: transaction, finish: finish)
                }
            }
        }
        if case .appended = outcome { announceAppends() }
        return outcome
    }

    /// The group's appends (after `commit.opening`, if any), then what `finish` adds, then the
    /// COMMIT. Any error — a stream that moved or exists, an id that does, the database failing —
    /// rolls the group back: `.refused`.
    private static func appendAndCommit<Decision: Sendable>(
        _ commit: GroupCommit<Decision>, in transaction: PipelinedTransaction,
        finish: (@Sendable (GroupCommit<Decision>) throws -> GroupFinish<Decision>)?
    ) -> GroupAppendOutcome<Decision> {
        do {
            guard let finish else {
                var trip = commit.opening
                let appended = trip.add(commit.append)
                let results = try transaction.commit(with: trip)
                return .appended(commit.decision, try groupResults(commit.appends, rows: results[appended]))
            }
            let finished = try finish(commit)
            try transaction.commit(with: finished.closing)
            finished.committed()
            return .appended(finished.decision, try groupResults(commit.appends, rows: finished.appended))
        } catch {
            transaction.rollBack()
            return .refused(error)
        }
    }
}
