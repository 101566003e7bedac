/// A background part's failed rounds since its last good one, and what to say of them: a line
/// when the part starts failing and one when it recovers — not one a round. A database away for a
/// minute used to write a warning every few hundred milliseconds from each part; what changed
/// meanwhile is in `/readyz` (the heartbeat keeps the last error).
package struct FailureStreak: Sendable, Equatable {
    /// Failed rounds in a row; 0 while the part works.
    package private(set) var failures = 0
    /// When the first of them failed.
    package private(set) var since: ContinuousClock.Instant?

    package init() {}

    /// What a round's end asks to be logged.
    package enum Line: Sendable, Equatable {
        /// The part worked before this failure.
        case startedFailing
        /// The part works again after `failures` failed rounds over `after`.
        case recovered(failures: Int, after: Duration)
    }

    /// A round failed; `.startedFailing` when it is the first in a row.
    package mutating func failed(at now: ContinuousClock.Instant = .now) -> Line? {
        failures += 1
        guard since == nil else { return nil }
        since = now
        return .startedFailing
    }

    /// A round worked; `.recovered` when rounds before it had failed.
    package mutating func worked(at now: ContinuousClock.Instant = .now) -> Line? {
        defer { (failures, since) = (0, nil) }
        return since.map { .recovered(failures: failures, after: now - $0) }
    }
}
