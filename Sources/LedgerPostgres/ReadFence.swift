import LedgerFormats
import Synchronization

/// How far a replica must have replayed the `users` projection before it may answer a read,
/// as a log position compared with the replica's own projection checkpoint.
///
/// For a user: the checkpoint of the last projection batch this process knows changed them — its
/// own worker's, or another server's announced on `ledger_projection` (delivered at that batch's
/// commit). So a read that follows a write its client saw answered waits for that write on any
/// replica, while users nobody wrote to meanwhile are read at once. For reads of everything (an
/// export): the last batch this process knows of at all.
///
/// What happened before this process listened — at start, or after its LISTEN connection broke —
/// is unknown; then `needsBaseline` is true until the primary's checkpoint is given as a floor.
package final class ReadFence: Sendable {
    /// A user of an app (the domain's `UserKey`, which this layer does not import).
    private struct User: Hashable {
        var bundleID: String
        var userID: String
    }

    private struct State {
        var users: [User: LogPosition] = [:]
        /// At least every user's last change, for users no longer (or never) listed.
        var floor: LogPosition = .start
        var latest: LogPosition = .start
        var needsBaseline = true
    }

    private let state = Mutex(State())
    let capacity: Int

    package init(capacity: Int = 200_000) { self.capacity = capacity }

    /// What a read of one user must wait for.
    package func required(bundleID: String, userID: String) -> LogPosition {
        state.withLock { state in max(state.floor, state.users[User(bundleID: bundleID, userID: userID)] ?? .start) }
    }

    /// What a read of everything must wait for.
    package var latest: LogPosition { state.withLock { $0.latest } }

    package var needsBaseline: Bool { state.withLock { $0.needsBaseline } }

    /// A batch committed at `position` changed `users`.
    package func advance(_ users: [(bundleID: String, userID: String)], to position: LogPosition) {
        state.withLock { state in
            if state.users.count + users.count > capacity {
                state.floor = max(state.floor, state.latest) // forgetting users raises everyone's fence
                state.users.removeAll(keepingCapacity: true)
            }
            for user in users {
                let key = User(bundleID: user.bundleID, userID: user.userID)
                state.users[key] = max(state.users[key] ?? .start, position)
            }
            state.latest = max(state.latest, position)
        }
    }

    /// Everyone may have changed up to `position` (a rebuild's switch, a baseline read from the primary).
    package func advanceAll(to position: LogPosition) {
        state.withLock { state in
            state.floor = max(state.floor, position)
            state.latest = max(state.latest, position)
            state.needsBaseline = false
        }
    }

    /// Announcements may have been missed: the next read first asks the primary where it is.
    package func forgetBaseline() {
        state.withLock { $0.needsBaseline = true }
    }
}
