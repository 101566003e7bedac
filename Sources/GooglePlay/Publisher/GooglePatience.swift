import LedgerCore

/// How patiently the Developer API is asked: attempts, full-jitter backoff between them, the whole
/// call's budget and each request's timeout — the same shape as the App Store clients' patience.
package struct GooglePatience: Sendable {
    package var maxAttempts: Int
    package var backoffBase: Duration
    package var backoffCap: Duration
    /// No retry starts, and no `Retry-After` is waited out, past this much time since the first attempt.
    package var totalBudget: Duration
    package var requestTimeout: Duration

    package init(
        maxAttempts: Int = 5, backoffBase: Duration = .milliseconds(500), backoffCap: Duration = .seconds(8),
        totalBudget: Duration = .seconds(30), requestTimeout: Duration = .seconds(30)
    ) {
        self.maxAttempts = maxAttempts
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.totalBudget = totalBudget
        self.requestTimeout = requestTimeout
    }
}

/// The clock a client of Google's measures its budget on and waits on: the continuous clock in
/// service, a test's own clock in tests, so a busy machine's slow exchanges spend none of a budget
/// meant for Google's answers. (The App Store module has its own; this module does not import it.)
package struct GoogleClock: Sendable {
    /// Starts a stopwatch: the function returned tells the time since.
    package let start: @Sendable () -> @Sendable () -> Duration
    package let sleep: @Sendable (Duration) async throws -> Void

    package init<C: Clock<Duration> & Sendable>(_ clock: C) {
        start = {
            let started = clock.now
            return { started.duration(to: clock.now) }
        }
        sleep = { try await clock.sleep(for: $0) }
    }

    package static let continuous = GoogleClock(ContinuousClock())
}
