import LedgerBackground
import LedgerEventStore
import LedgerPostgres
import LedgerTracing
import Logging
import Tracing

/// Keeps the active projection version up to date for as long as it runs: a batch at a time while
/// there is work, then a sleep until the next append (or a poll interval, for other processes').
package struct ProjectionWorker: Sendable {
    let pool: PostgresPool
    /// Wakes the worker when this process appends.
    let store: EventStore
    let batchSize: Int
    let pollInterval: Duration
    let logger: Logger
    let progress: ProjectionProgress?
    let cache: TimelineCache?
    /// Batches wait for the disk (streaming replicas read them: see `ProjectionRunner.liveBatch`).
    let durable: Bool
    /// The pause after a batch that only passed events their writers projected themselves. A write
    /// recorded alone (a notification, a grant) that arrives meanwhile waits this much longer.
    let passingWindow: Duration
    /// Told of every batch, applied or failed.
    package let heartbeat = Heartbeat("projection worker")

    package init(
        pool: PostgresPool, store: EventStore, batchSize: Int = 500, pollInterval: Duration = .milliseconds(250),
        progress: ProjectionProgress? = nil,
        cache: TimelineCache? = nil, durable: Bool = false, passingWindow: Duration = .milliseconds(10), logger: Logger
    ) {
        self.pool = pool
        self.store = store
        self.passingWindow = passingWindow
        self.durable = durable
        self.progress = progress
        self.cache = cache
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// The worker as a background loop: a batch a step. A failed batch moved no checkpoint, so the
    /// loop's retry loses nothing.
    package var loop: BackgroundLoop {
        BackgroundLoop(reportingTo: heartbeat, logger: logger) { try await step() }
    }

    /// Runs until the task is cancelled, reporting to no one (as tests run it; the server runs `loop`).
    package func run() async { await loop.runUntilCancelled() }

    /// One batch, its timelines cached and its checkpoint announced; then what to wait for.
    package func step() async throws -> BackgroundLoop.Next {
        let (batchSize, durable, store, pollInterval) = (self.batchSize, self.durable, self.store, self.pollInterval)
        let generation = store.appendGeneration
        let epoch = cache?.epoch ?? 0
        let origin = cache?.origin
        let started = DefaultTracerClock.now
        let applied = try await pool.withConnection {
            try ProjectionRunner.liveBatch(on: $0, batchSize: batchSize, origin: origin, durable: durable)
        }
        if applied.count > 0 {
            Spans.record("projection batch", startedAt: started) { attributes in
                attributes["ledger.projection"] = "users"
                attributes["ledger.batch.events"] = applied.count
                attributes["ledger.batch.users"] = applied.users.count
            }
        }
        // After the commit, in this order: a writer woken by the progress finds its user's new
        // timeline in the cache (or none), never the old one. An empty batch reports the
        // checkpoint too: another process's worker may have applied this one's writes.
        if !applied.users.isEmpty {
            cache?.replace(
                zip(applied.users, applied.timelines).map { ($0.bundleID, $0.userID, $1) }, ifUnchangedSince: epoch,
                committedAt: applied.checkpoint)
        }
        progress?.advance(to: applied.checkpoint)
        // A full batch may have left more behind; otherwise there is more only if an append
        // committed since this batch began (this process's appends signal after their commit,
        // other processes' through NOTIFY): the wait returns at once then. Looping straight back
        // after every batch mostly read nothing, two round trips each.
        if applied.count == batchSize { return .again }
        // Only passed what its writers applied themselves (`InlineProjection`): no answer of theirs
        // waits for this checkpoint, so let a few groups gather first — woken for every group, the
        // worker ran 500 batches a second at 4 connections.
        let pause = applied.count > 0 && applied.users.isEmpty ? passingWindow : .zero
        // Events committed behind an open transaction: look again in a moment (their appenders'
        // wake-ups are spent; waiting for the next append stalled every writer for the poll interval).
        if applied.heldBack { return .after(pause + .milliseconds(1)) }
        return .whenWoken {
            if pause > .zero { try? await Task.sleep(for: pause) }
            await store.waitForAppends(after: generation, timeout: pollInterval)
        }
    }
}
