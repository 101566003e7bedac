import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import Logging

/// Read-your-writes for the API: after an append, wait until the live projection has applied it,
/// so the answer — and every later read by the same caller — includes it. This process's worker
/// wakes the wait when it applies the write (`ProjectionProgress`); the checkpoint row is read
/// every 25 ms too, for a worker running in another process.
package struct ProjectionFreshness: Sendable {
    let pool: PostgresPool
    let progress: ProjectionProgress?
    let timeout: Duration

    /// `progress`: this process's worker, when it runs one; without it the checkpoint alone is polled.
    package init(pool: PostgresPool, progress: ProjectionProgress?, timeout: Duration = .seconds(5)) {
        self.pool = pool
        self.progress = progress
        self.timeout = timeout
    }

    /// Returns once the live projection has applied `position`, or after the timeout (logged: the
    /// answer is then what the projection has, never an error — the write itself stands).
    package func wait(for position: LogPosition, logger: Logger) async throws {
        WrittenPosition.current?.record(position)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let progress, await progress.wait(for: position, timeout: .milliseconds(25)) { return }
            if try await pool.withConnection(ProjectionRunner.activeCheckpoint) >= position { return }
            if progress == nil { try await Task.sleep(for: .milliseconds(25)) }
        }
        logger.warning("projection did not catch up in time; answering from what it has", metadata: ["position": "\(position)"])
    }
}
