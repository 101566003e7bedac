import Foundation
import LedgerBackground
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import LedgerTracing
import Logging
import Tracing

/// Keeps the change projection up with the `users` projection for as long as it runs: a batch as
/// soon as this server's projection worker has applied something (or a poll interval, for other
/// servers' batches), and a clock sweep for expiries every `sweepInterval`.
package struct ChangeWorker: Sendable {
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
    let heartbeat: Heartbeat?
    let logger: Logger

    package init(
        pool: PostgresPool, progress: ProjectionProgress?, notifications: ChangeNotifications, batchSize: Int = 500,
        pollInterval: Duration = .milliseconds(250), sweepInterval: Duration = .seconds(1), batchWindow: Duration = .milliseconds(20),
        heartbeat: Heartbeat? = nil, logger: Logger
    ) {
        self.heartbeat = heartbeat
        self.batchWindow = batchWindow
        self.pool = pool
        self.projection = ChangeProjection(batchSize: batchSize)
        self.progress = progress
        self.notifications = notifications
        self.pollInterval = pollInterval
        self.sweepInterval = sweepInterval
        self.logger = logger
    }

    /// Runs until cancelled. A failed batch is logged and tried again: its checkpoint did not move.
    package func run() async {
        let clock = ContinuousClock()
        var lastSweep = clock.now - sweepInterval
        let projection = self.projection
        // A failed sweep is tried again a second later; the batches in between succeeding does
        // not make the part well.
        var sweepFailing = false
        while !Task.isCancelled {
            let seen = progress?.position ?? .start
            do {
                let started = DefaultTracerClock.now
                let outcome = try await pool.withConnection { try projection.step(on: $0) }
                if outcome.events > 0 {
                    Spans.record("change batch", startedAt: started) { attributes in
                        attributes["ledger.batch.events"] = outcome.events
                        attributes["ledger.batch.changes"] = outcome.announced
                    }
                }
                if let position = outcome.position { notifications.announce(position) }
                if outcome.events == projection.batchSize {
                    if !sweepFailing { heartbeat?.beat() }
                    continue
                }
                if outcome.events > 0 { try? await Task.sleep(for: batchWindow) }
                if clock.now - lastSweep >= sweepInterval {
                    lastSweep = clock.now
                    sweepFailing = true
                    let swept = try await pool.withConnection { try projection.sweep(on: $0) }
                    sweepFailing = false
                    if let position = swept.position { notifications.announce(position) }
                }
                if !sweepFailing { heartbeat?.beat() }
            } catch {
                heartbeat?.failed(error)
                logger.warning("change projection batch failed; retrying", metadata: ["error": "\(error)"])
            }
            if let progress {
                _ = await progress.wait(for: LogPosition(transactionID: seen.transactionID, position: seen.position + 1), timeout: pollInterval)
            } else {
                try? await Task.sleep(for: pollInterval)
            }
        }
    }
}
