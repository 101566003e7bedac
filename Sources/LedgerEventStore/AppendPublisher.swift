import LedgerBackground
import LedgerPostgres
import Logging
import Synchronization

/// Tells other processes that events were appended: one `NOTIFY ledger_events` after a burst of
/// local appends, sent outside their transactions.
///
/// Not in the appending transaction: there a NOTIFY takes a database-wide lock at commit, which
/// serialised every append (4,400 → 2,800 appends/s at 4 writers, measured). Coalescing keeps the
/// cost to at most one NOTIFY per `window`, whatever the append rate. Subscriptions poll anyway, so
/// a NOTIFY that is never sent (a crash right after commit) only delays a wake-up.
final class AppendPublisher: Sendable {
    private let pool: PostgresPool
    private let pending = Wakeup()
    private let window: Duration
    /// `pending`'s generation when the last NOTIFY went out: the appends other processes were told of.
    private let told = Atomic<UInt64>(0)
    private let logger: Logger

    init(pool: PostgresPool, window: Duration = .milliseconds(5), logger: Logger) {
        self.pool = pool
        self.window = window
        self.logger = logger
    }

    /// Called after each committed append; cheap.
    func poke() { pending.signal() }

    /// The NOTIFYs as a background loop, run inside `EventStore.runNotifications`. Its heartbeat is
    /// not listed in `/readyz`: the LISTEN connection beside it reports for the notifications, and a
    /// NOTIFY that fails costs other processes no more than their poll interval.
    var loop: BackgroundLoop {
        BackgroundLoop(reportingTo: Heartbeat("append notifications"), logger: logger) { try await self.step() }
    }

    /// One NOTIFY for the appends since the last one, then a wait of at least `window` for more; with
    /// none since (at start, or after an hour without appends), only the wait. A failed NOTIFY is
    /// sent again after the loop's backoff.
    func step() async throws -> BackgroundLoop.Next {
        let (pending, window) = (self.pending, self.window)
        let generation = pending.generation
        guard generation != told.load(ordering: .relaxed) else {
            return .whenWoken { await pending.wait(after: generation, timeout: .seconds(3600)) }
        }
        try await pool.query("SELECT pg_notify($1, '')", [EventStore.notificationChannel])
        told.store(generation, ordering: .relaxed)
        return .whenWoken {
            try? await Task.sleep(for: window)
            await pending.wait(after: generation, timeout: .seconds(3600))
        }
    }
}
