import Foundation
import LedgerBackground
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import Logging
import Synchronization

/// Stored timelines kept in memory, so that the hot query — what does this user own now — costs
/// no database round trip. Correct across processes because every projection batch, whichever
/// process applies it, announces the users it changed (`NOTIFY ledger_projection`, delivered at
/// its commit), and a rebuild's switch announces everyone ("*").
///
/// A read that raced an invalidation must not put back what it read: entries are stored only if
/// no invalidation happened since the read began (`epoch`). The same announcements carry the
/// batch's checkpoint, which moves the `fence` replicas must pass before they answer for a user.
package final class TimelineCache: Sendable {
    package static let channel = "ledger_projection"
    /// Separators that cannot occur in bundle ids and are refused in user ids.
    static let fieldSeparator: Character = "\u{1F}", recordSeparator: Character = "\u{1E}", originSeparator: Character = "\u{1D}",
        positionSeparator: Character = "\u{1C}"

    /// This cache's name in the announcements of its process's worker, which puts the timelines it
    /// computes here itself (`replace`): the echo of its own NOTIFY is not an invalidation.
    package let origin = UUID().uuidString

    struct State {
        var entries: [Key: UserTimeline] = [:]
        var epoch: UInt64 = 0
    }

    struct Key: Hashable {
        var bundleID: String
        var userID: String
    }

    private let state = Mutex(State())
    let capacity: Int
    /// Where each user's last announced change stands in the log (for reads from replicas).
    package let fence: ReadFence

    package init(capacity: Int = 200_000, fence: ReadFence = ReadFence()) {
        self.capacity = capacity
        self.fence = fence
    }

    package var epoch: UInt64 { state.withLock { $0.epoch } }

    package func timeline(bundleID: String, userID: String) -> UserTimeline? {
        state.withLock { $0.entries[Key(bundleID: bundleID, userID: userID)] }
    }

    /// Stores what was read since `epoch`, unless an invalidation came in between.
    package func store(_ timeline: UserTimeline, bundleID: String, userID: String, readSince epoch: UInt64) {
        state.withLock { state in
            guard state.epoch == epoch else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(bundleID: bundleID, userID: userID)] = timeline
        }
    }

    /// Timelines this process's projection worker just committed, kept so the writers waiting for
    /// them answer without reading them back — unless an invalidation came in since the batch
    /// began (`epoch`): then another process wrote meanwhile and they are only invalidated.
    package func replace(
        _ timelines: [(bundleID: String, userID: String, timeline: UserTimeline)], ifUnchangedSince epoch: UInt64,
        committedAt position: LogPosition? = nil
    ) {
        if let position { fence.advance(timelines.map { ($0.bundleID, $0.userID) }, to: position) }
        state.withLock { state in
            let unchanged = state.epoch == epoch
            state.epoch &+= 1 // a read that began before this must not store what it read
            if state.entries.count + timelines.count > capacity { state.entries.removeAll(keepingCapacity: true) }
            for entry in timelines {
                state.entries[Key(bundleID: entry.bundleID, userID: entry.userID)] = unchanged ? entry.timeline : nil
            }
        }
    }

    package func invalidate(_ users: [(bundleID: String, userID: String)]) {
        state.withLock { state in
            state.epoch &+= 1
            for user in users { state.entries[Key(bundleID: user.bundleID, userID: user.userID)] = nil }
        }
    }

    package func invalidateAll() {
        state.withLock { state in
            state.epoch &+= 1
            state.entries.removeAll()
        }
    }

    /// The NOTIFY that announces a batch to every process's cache, sent in the batch's
    /// transaction so it is delivered at its commit (the worker's batch, an ingestion group's).
    static func announcement(
        _ users: [(bundleID: String, userID: String)], origin: String? = nil, position: LogPosition
    ) -> PipelinedStatement {
        PipelinedStatement("SELECT pg_notify($1, $2)", [channel, payload(users, origin: origin, position: position)])
    }

    /// The NOTIFY payload for a batch: its checkpoint, the announcing cache's origin if any, and
    /// the users it changed, or "*" when too many to list.
    static func payload(_ users: [(bundleID: String, userID: String)], origin: String? = nil, position: LogPosition? = nil) -> String {
        let text = users.map { $0.bundleID + String(fieldSeparator) + $0.userID }.joined(separator: String(recordSeparator))
        return (position.map { $0.description + String(positionSeparator) } ?? "") + (origin.map { $0 + String(originSeparator) } ?? "")
            + (text.utf8.count < 7_000 ? text : "*")
    }

    func apply(payload: String) {
        var payload = Substring(payload)
        var position: LogPosition?
        if let separator = payload.firstIndex(of: Self.positionSeparator) {
            position = LogPosition(String(payload[..<separator]))
            payload = payload[payload.index(after: separator)...]
        }
        if let separator = payload.firstIndex(of: Self.originSeparator) {
            guard payload[..<separator] != origin else { return } // this process's own batch
            payload = payload[payload.index(after: separator)...]
        }
        guard payload != "*" else {
            invalidateAll()
            return position.map(fence.advanceAll(to:)) ?? fence.forgetBaseline()
        }
        let users = payload.split(separator: Self.recordSeparator).compactMap { record -> (bundleID: String, userID: String)? in
            let parts = record.split(separator: Self.fieldSeparator, maxSplits: 1, omittingEmptySubsequences: false)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }
        invalidate(users)
        if let position { fence.advance(users, to: position) } else { fence.forgetBaseline() }
    }

    /// Listens for other processes' batches until cancelled. After every (re)connection it
    /// forgets everything: announcements sent while it was away are lost.
    package func runInvalidations(configuration: PostgresConfiguration, heartbeat: Heartbeat? = nil, logger: Logger) async {
        let listener = PostgresListener(configuration: configuration, channels: [Self.channel], heartbeat: heartbeat, logger: logger) {
            [self] notification in
            switch notification {
            case .notify(_, let payload): apply(payload: payload)
            case .connected:
                invalidateAll()
                fence.forgetBaseline() // announcements may have been missed
            }
        }
        listener.start()
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        await listener.stop()
    }
}
