import Synchronization

/// A clock whose time moves only when something sleeps on it, and then by exactly the sleep: a
/// client's backoff and total budget measured on it see the waits they asked for and nothing of
/// how long a busy machine took to run them.
package final class SteppedClock: Clock, Sendable {
    package struct Instant: InstantProtocol {
        package var offset: Duration

        package func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = Mutex(Instant(offset: .zero))
    /// Every sleep asked for, in order.
    private let sleeps = Mutex<[Duration]>([])

    package init() {}

    package var now: Instant { current.withLock { $0 } }
    package var minimumResolution: Duration { .zero }
    package var slept: [Duration] { sleeps.withLock { $0 } }

    package func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        current.withLock { now in
            sleeps.withLock { $0.append(now.duration(to: deadline)) }
            if deadline > now { now = deadline }
        }
        await Task.yield()
    }
}
