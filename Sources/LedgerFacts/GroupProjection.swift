import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres

/// What a group commit asks of the projection that answers its requests, declared here so the
/// recording path (ingestion's `GroupRecorder`) does not import the read side that implements it
/// (`InlineProjection`): the projection reads in the group's opening round trip, then appends the
/// group and applies its events, in the group's transaction — which the store alone ends.
package protocol GroupProjection: Sendable {
    /// Adds what the projection must read before the group appends (its active version) to the
    /// group's opening round trip; the slot is handed back to `appendAndProject`.
    func open(_ trip: inout RoundTrip) -> RoundTrip.Slot

    /// Appends (`commit.append`), applies the appended events for the users they concern and
    /// `presenters`, and hands back (`GroupFinish`, its decision what it projected) its writes for
    /// the round trip the store commits with and what it does once the group is committed — for
    /// the store alone ends the group's transaction. `assumingVersion`: the
    /// projection's version as the group before found it, used before the opening's read of it is
    /// back (both sent in one round trip) and checked against it before anything commits.
    func appendAndProject<Decision: Sendable>(
        _ commit: GroupCommit<Decision>, opened: RoundTrip.Slot, assumingVersion: Int?,
        presenters: Set<UserKey>
    ) throws -> GroupFinish<GroupProjected>
}

/// What a group's transaction projected.
package struct GroupProjected: Sendable {
    /// The group's last event: what the answers reflect.
    package var position: LogPosition
    package var timelines: [UserKey: UserTimeline]
    /// The version of the projection it wrote.
    package var version: Int

    package init(position: LogPosition, timelines: [UserKey: UserTimeline], version: Int) {
        self.position = position
        self.timelines = timelines
        self.version = version
    }
}
