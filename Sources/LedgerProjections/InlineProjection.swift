import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres

/// An ingestion group's own appends applied to the active `users` projection in the group's
/// transaction, so its requests are answered at commit — and every later read, on any server,
/// sees them — without waiting for the live worker's next batch (that wait was half of
/// an ingestion's time at low concurrency). The worker still passes these events, to move its
/// checkpoint, but leaves their transaction alone (`ledger.inline_projections`).
///
/// The same computation as the worker's (`UsersProjection.changes`): the users the events concern
/// recomputed from every fact the log holds for them, under the locks that keep concurrent
/// recomputations in order (`ProjectionLocks`).
package struct InlineProjection: GroupProjection {
    let cache: TimelineCache?

    package init(cache: TimelineCache?) {
        self.cache = cache
    }

    /// The opening round trip's share: the active version, held FOR SHARE as the worker holds it
    /// (a rebuild's switch waits for the group, and the group writes the version readers read).
    package func open(_ trip: inout RoundTrip) -> RoundTrip.Slot {
        trip.add(PipelinedStatement("SELECT active_version FROM ledger.projections WHERE name = $1 FOR SHARE", [UsersProjection.name]))
    }

    /// Appends (`commit.append`, the group's statement), applies the appended events, and leaves
    /// the writes to the round trip the store commits the group with.
    ///
    /// The version names the tables the group reads and writes: read in the opening round trip,
    /// or — without one — the version the group before found (`assumingVersion`), read in the same
    /// round trip as the reads that depend on it: when it moved meanwhile (a rebuild switched),
    /// the group fails before it writes anything.
    ///
    /// Who owns the group's purchases is recorded from `commit.existing`, every event of its
    /// purchase streams as read under their locks before deciding (a claim the worker has not
    /// applied yet would otherwise be missing from the timeline of the user presenting the purchase
    /// again). `presenters`: users whose answer is wanted, recomputed whatever the events say.
    package func appendAndProject<Decision: Sendable>(
        _ commit: GroupCommit<Decision>, opened: RoundTrip.Slot, assumingVersion: Int?,
        presenters: Set<UserKey>
    ) throws -> GroupFinish<GroupProjected> {
        let version: Int
        if let alongside = commit.openedAlongside {
            version = try Self.version(in: alongside[opened])
        } else if let assumingVersion {
            version = assumingVersion
        } else {
            throw PostgresError(
                code: .missingState, message: "a group without an opening round trip assumed no version of \(UsersProjection.name)")
        }
        let projection = UsersProjection(version: version)
        let epoch = cache?.epoch ?? 0
        let streams = commit.existing
        let (concerns, moneyMoved) = try Self.concerns(of: commit.appends, streams: streams, presenters: presenters)
        // A purchase stream the group appends to and read empty (or took to be new, which its
        // append checks) has no finance rows yet.
        let appendedStreams = Set(commit.appends.map(\.stream))
        let begun = moneyMoved.filter { key in
            let stream = LedgerStream.purchase(key.bundleID, originalTransactionID: key.originalTransactionID)
            return appendedStreams.contains(stream) && streams[stream] == nil
        }
        var leading = commit.opening
        let append = leading.add(commit.append)
        let (changes, first) = try projection.changes(
            concerns: concerns, moneyMoved: moneyMoved, begun: begun, leading: leading,
            locking: .users, in: commit.roundTrips)
        if commit.openedAlongside == nil, try Self.version(in: commit.alongside(in: first)[opened]) != version {
            throw PostgresError(
                code: .changedMeanwhile, message: "projection \(UsersProjection.name) switched versions while a group assumed \(version)")
        }
        let appended = first[append]
        var last = LogPosition.start
        for row in appended {
            last = max(last, LogPosition(transactionID: try row["tx_id"].uint64(), position: try row["event_position"].int64()))
        }
        var closing = RoundTrip(changes.writes)
        closing.add([
            PipelinedStatement("INSERT INTO ledger.inline_projections (version, tx_id) VALUES ($1, pg_current_xact_id())", [version])
        ])
        if !changes.users.isEmpty {
            closing.add([TimelineCache.announcement(changes.users, origin: cache?.origin, position: last)])
        }
        var timelines: [UserKey: UserTimeline] = [:]
        for (user, timeline) in zip(changes.users, changes.timelines) {
            timelines[UserKey(bundleID: user.bundleID, userID: user.userID)] = timeline
        }
        return GroupFinish(
            closing: closing, appended: appended, decision: GroupProjected(position: last, timelines: timelines, version: version),
            committed: {
                // After the commit, as the worker does: this process's readers find the new timelines.
                cache?.replace(
                    zip(changes.users, changes.timelines).map { ($0.bundleID, $0.userID, $1) }, ifUnchangedSince: epoch, committedAt: last)
            })
    }

    private static func version(in rows: PostgresRows) throws -> Int {
        guard let version = try rows.first?["active_version"].int() else {
            throw PostgresError(code: .missingState, message: "projection \(UsersProjection.name) has no active version")
        }
        return version
    }

    /// Whom the appends concern, and the transactions whose money they move. The appended events
    /// are taken as facts (their log positions are not known yet, and not needed to find whom they
    /// concern: the facts themselves are read back from the log).
    static func concerns(
        of appends: [StreamAppend], streams: [String: [RecordedEvent]],
        presenters: Set<UserKey>
    ) throws -> (BatchConcerns, moneyMoved: Set<TransactionKey>) {
        let now = Date()
        let fresh = appends.flatMap { append in
            append.events.map {
                RecordedEvent(
                    id: $0.id, stream: append.stream, version: 0, type: $0.type, data: $0.data, metadata: $0.metadata,
                    occurredAt: $0.occurredAt ?? now, recordedAt: now, position: .start)
            }
        }
        let (facts, moneyMoved) = try UsersProjection.decode(fresh)
        var concerns = BatchConcerns(facts)
        concerns.users.formUnion(presenters)
        let ownership = Set(LedgerEventType.ownership.map(\.rawValue))
        let earlier = streams.values.joined().filter { ownership.contains($0.type) }
        concerns.newOwners += BatchConcerns(try UsersProjection.decode(earlier).facts).newOwners
        // The events are all of the group's own streams, which it read whole: their owners, ever,
        // are the ones those streams name — what the owners table would answer, without asking.
        for owner in concerns.newOwners
        where concerns.transactions.contains(TransactionKey(bundleID: owner.bundleID, originalTransactionID: owner.original)) {
            concerns.users.insert(UserKey(bundleID: owner.bundleID, userID: owner.userID))
        }
        concerns.transactions.removeAll()
        return (concerns, moneyMoved)
    }
}
