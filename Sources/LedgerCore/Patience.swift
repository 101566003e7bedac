/// How patiently a client asks a store: attempts, the full-jitter backoff between them
/// (`FullJitter`), the whole call's budget and each request's timeout. One shape for every
/// client of another party's (Apple's verifyReceipt and App Store Server API, Google's Developer
/// API), each with its own defaults.
package struct Patience: Sendable {
    /// Attempts per request for what may pass, the first included.
    package var maxAttempts: Int
    /// Backoff before retry n is a random duration in [0, min(cap, base · 2ⁿ)].
    package var backoffBase: Duration
    package var backoffCap: Duration
    /// No retry starts after this much time has passed since the first attempt.
    package var totalBudget: Duration
    package var requestTimeout: Duration

    package init(maxAttempts: Int, backoffBase: Duration, backoffCap: Duration, totalBudget: Duration, requestTimeout: Duration) {
        self.maxAttempts = maxAttempts
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.totalBudget = totalBudget
        self.requestTimeout = requestTimeout
    }

    /// The wait before retry n of this client.
    package func delay(beforeRetry retry: Int, random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }) -> Duration {
        FullJitter.delay(beforeRetry: retry, base: backoffBase, cap: backoffCap, random: random)
    }
}

/// The clock a client of a store measures its budget on and waits on, reduced to those two
/// uses: the continuous clock in service; a clock of the test's own in tests, so that a busy
/// machine's slow exchanges spend none of a budget meant for the store's answers.
package struct PatienceClock: Sendable {
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

    package static let continuous = PatienceClock(ContinuousClock())
}
