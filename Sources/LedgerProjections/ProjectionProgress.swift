import LedgerEventStore
import Synchronization

/// How far this process's projection worker has applied the log, for writers that answer only
/// once their write is visible (read-your-writes). Waiting on it costs no query; a write whose
/// events another process projects is still caught by the slower check of the checkpoint row.
public final class ProjectionProgress: Sendable {
    private let applied = Mutex(LogPosition.start)

    public init() {}

    public var position: LogPosition { applied.withLock { $0 } }

    func advance(to position: LogPosition) {
        applied.withLock { $0 = max($0, position) }
    }
}
