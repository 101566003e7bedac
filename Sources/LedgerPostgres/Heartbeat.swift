import Synchronization

/// How one background part of the server (a worker, a LISTEN connection) is faring, as it says
/// itself: each round that did its work beats, each round that failed says why. Readiness reads
/// it; a part that fails (or stays silent) for long while the database answers cannot recover by
/// itself, and the server should rather exit than linger half-alive.
package final class Heartbeat: Sendable {
    /// The part's name, as `/readyz` lists it.
    package let part: String
    private let state: Mutex<State>

    private struct State {
        var lastBeat: ContinuousClock.Instant
        var failingSince: ContinuousClock.Instant?
        var lastError: String?
    }

    package init(_ part: String) {
        self.part = part
        self.state = Mutex(State(lastBeat: .now))
    }

    /// A round did its work.
    package func beat() {
        state.withLock { state in
            state.lastBeat = .now
            state.failingSince = nil
            state.lastError = nil
        }
    }

    /// A round failed; the part will try again.
    package func failed(_ error: any Error) {
        let said = "\(error)"
        state.withLock { state in
            if state.failingSince == nil { state.failingSince = .now }
            state.lastError = said
        }
    }

    package enum Status: Sendable, Equatable {
        case ok
        /// Every round since `for` ago failed; the last said `error`.
        case failing(for: Duration, error: String)
        /// No round finished, well or badly, for `for`.
        case silent(for: Duration)
    }

    /// `silentAfter`: how long a part may go without finishing a round before it counts as silent
    /// (its rounds must be shorter: a worker's poll interval, a listener's idle ping).
    package func status(silentAfter: Duration, at now: ContinuousClock.Instant = .now) -> Status {
        state.withLock { state in
            if let since = state.failingSince { return .failing(for: now - since, error: state.lastError ?? "") }
            let quiet = now - state.lastBeat
            return quiet > silentAfter ? .silent(for: quiet) : .ok
        }
    }
}
