import LedgerEventStore
import LedgerFormats

/// How far this process's projection worker has applied the log, for writers that answer only
/// once their write is visible (read-your-writes). A waiter is resumed by the worker's own
/// advance — no query, no polling: sixteen writers polling every half millisecond were 32,000
/// timer wake-ups a second on two cores. A write whose events another process projects is still
/// caught by the caller's slower check of the checkpoint row.
package final class ProjectionProgress: Sendable {
    private let applied = Watermark(LogPosition.start)

    package init() {}

    package var position: LogPosition { applied.value }

    func advance(to position: LogPosition) { applied.raise(to: position) }

    /// True once the worker has applied `position`; false after `timeout` (or on cancellation).
    package func wait(for position: LogPosition, timeout: Duration) async -> Bool {
        await applied.wait(reaching: position, timeout: timeout)
    }
}
