import LedgerEventStore
import LedgerPostgres
import LedgerProjections
import Logging

/// Read-your-writes for the API: after an append, wait until the live projection has applied it,
/// so the answer — and every later read by the same caller — includes it. This process's worker
/// wakes the wait when it applies the write (`ProjectionProgress`); the checkpoint row is read
/// every 25 ms too, for a worker running in another process.
enum ProjectionFreshness {
    static func wait(for position: LogPosition, pool: PostgresPool, progress: ProjectionProgress?, timeout: Duration = .seconds(5),
                     logger: Logger) async throws {
        WrittenPosition.current?.record(position)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let progress, await progress.wait(for: position, timeout: .milliseconds(25)) { return }
            if try await checkpoint(pool) >= position { return }
            if progress == nil { try await Task.sleep(for: .milliseconds(25)) }
        }
        logger.warning("projection did not catch up in time; answering from what it has", metadata: ["position": "\(position)"])
    }

    private static func checkpoint(_ pool: PostgresPool) async throws -> LogPosition {
        try await pool.withConnection(ProjectionRunner.activeCheckpoint)
    }
}
