import Synchronization

/// How one background part of the server (a worker, a LISTEN connection) is faring, as it says
/// itself: each round that did its work beats, each round that failed says why. Readiness reads
/// it; a part that fails (or stays silent) for long while the database answers cannot recover by
/// itself, and the server should rather exit than linger half-alive.
package final class Heartbeat: Sendable {
    /// The part's name, as `/readyz` lists it and its loop's log lines name it.
    package let part: String
    /// False for a part whose rounds last as long as someone else makes them (each call to Apple
    /// may take its retries' minute and a half, a pass reads pages of Apple's history): its
    /// silence would be Apple's slowness, and only its failures say something about this server.
    package let checksSilence: Bool
    private let state: Mutex<State>

    private struct State {
        /// Silence counts from here: the last beat, or the end of the rest it announced.
        var quietSince: ContinuousClock.Instant
        var failingSince: ContinuousClock.Instant?
        var lastError: String?
    }

    package init(_ part: String, checksSilence: Bool = true) {
        self.part = part
        self.checksSilence = checksSilence
        self.state = Mutex(State(quietSince: .now))
    }

    /// A round did its work. `restingFor`: the part waits that long before its next round on
    /// purpose (a reconciler's interval), which is not silence.
    package func beat(restingFor rest: Duration = .zero) {
        state.withLock { state in
            state.quietSince = .now + rest
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
            let quiet = now - state.quietSince
            return checksSilence && quiet > silentAfter ? .silent(for: quiet) : .ok
        }
    }
}
