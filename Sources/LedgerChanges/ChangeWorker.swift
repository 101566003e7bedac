import Foundation
import LedgerBackground
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import LedgerTracing
import Logging
import Synchronization
import Tracing

/// Keeps the change projection up with the `users` projection for as long as it runs: a batch as
/// soon as this server's projection worker has applied something (or a poll interval, for other
/// servers' batches), and a clock sweep for expiries every `sweepInterval`.
package final class ChangeWorker: Sendable {
    let pool: PostgresPool
    let projection: ChangeProjection
    let progress: ProjectionProgress?
    let notifications: ChangeNotifications
    let pollInterval: Duration
    let sweepInterval: Duration
    /// The least time between two batches that did something. Woken by every projection batch,
    /// the worker without it ran a step for nearly every ingestion group (1,206 steps for 1,223
    /// groups at 4 connections), each reading its users' histories again. A webhook may wait this
    /// much longer; under load a batch holds many groups' events (docs/performance.md).
    let batchWindow: Duration
    /// Told of every batch, done or failed.
    package let heartbeat = Heartbeat("change projection")
    let logger: Logger
    /// When the last clock sweep worked; nil before the first and after one that failed.
    private let sweptAt = Mutex<ContinuousClock.Instant?>(nil)

    package init(
        pool: PostgresPool, progress: ProjectionProgress?, notifications: ChangeNotifications, batchSize: Int = 500,
        pollInterval: Duration = .milliseconds(250), sweepInterval: Duration = .seconds(1), batchWindow: Duration = .milliseconds(20),
        followers: [ChangeFollower] = [], logger: Logger
    ) {
        self.batchWindow = batchWindow
        self.pool = pool
        self.projection = ChangeProjection(batchSize: batchSize, followers: followers)
        self.progress = progress
        self.notifications = notifications
        self.pollInterval = pollInterval
        self.sweepInterval = sweepInterval
        self.logger = logger
    }

    /// The worker as a background loop: a batch (and the sweep when due) a step. A failed batch or
    /// sweep moved no checkpoint, so the loop's retry loses nothing.
    package var loop: BackgroundLoop {
        BackgroundLoop(reportingTo: heartbeat, logger: logger) { try await self.step() }
    }

    /// One batch, announced; the clock sweep when due; then what to wait for.
    package func step() async throws -> BackgroundLoop.Next {
        let (progress, pollInterval) = (self.progress, self.pollInterval)
        let seen = progress?.position ?? .start
        let events = try await batch()
        let full = events == projection.batchSize
        // A failed sweep is owed until one works: the step after it sweeps again, whatever its
        // batch found, so batches working in between do not make the part look well.
        let owed = sweptAt.withLock { $0 } == nil
        if full, !owed { return .again }
        if !full, events > 0 { try? await Task.sleep(for: batchWindow) }
        try await sweepIfDue()
        if full { return .again }
        return .whenWoken {
            if let progress {
                _ = await progress.wait(
                    for: LogPosition(transactionID: seen.transactionID, position: seen.position + 1), timeout: pollInterval)
            } else {
                try? await Task.sleep(for: pollInterval)
            }
        }
    }

    /// One batch of the change projection, its changes announced; the events it read.
    private func batch() async throws -> Int {
        let projection = self.projection
        let started = DefaultTracerClock.now
        let outcome = try await pool.withConnection { try projection.step(on: $0) }
        if outcome.events > 0 {
            Spans.record("change batch", startedAt: started) { attributes in
                attributes["ledger.batch.events"] = outcome.events
                attributes["ledger.batch.changes"] = outcome.announced
            }
        }
        if let position = outcome.position { notifications.announce(position) }
        return outcome.events
    }

    /// The clock sweep for expiries, every `sweepInterval`, and at the next step after one failed.
    private func sweepIfDue() async throws {
        let now = ContinuousClock.now
        guard sweptAt.withLock({ $0.map { now - $0 >= sweepInterval } ?? true }) else { return }
        let projection = self.projection
        sweptAt.withLock { $0 = nil }
        let swept = try await pool.withConnection { try projection.sweep(on: $0) }
        sweptAt.withLock { $0 = now }
        if let position = swept.position { notifications.announce(position) }
    }
}
