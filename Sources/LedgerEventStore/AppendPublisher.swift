import LedgerPostgres
import Logging

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
    private let logger: Logger

    init(pool: PostgresPool, window: Duration = .milliseconds(5), logger: Logger) {
        self.pool = pool
        self.window = window
        self.logger = logger
    }

    /// Called after each committed append; cheap.
    func poke() { pending.signal() }

    /// Runs until cancelled.
    func run() async {
        var seen = pending.generation
        while !Task.isCancelled {
            await pending.wait(after: seen, timeout: .seconds(3600))
            guard !Task.isCancelled else { return }
            seen = pending.generation
            do {
                try await pool.query("SELECT pg_notify($1, '')", [EventStore.notificationChannel])
            } catch {
                logger.debug("append notification not sent; subscribers will poll", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: window)
        }
    }
}
