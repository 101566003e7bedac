import LedgerCore

/// How deliveries are paced: one attempt's timeout, the lease that keeps two servers from sending
/// the same change at once, the retry schedule and how long before a change is set aside.
package struct WebhookPolicy: Sendable {
    /// One attempt: connect, send, and the receiver's answer.
    package var attemptTimeout: Duration = .seconds(10)
    /// Half as long again as an attempt, and a second more, so a lease never runs out under a
    /// delivery still in flight; a killed server's deliveries are taken over when it does.
    package var lease: Duration { attemptTimeout * 3 / 2 + .seconds(1) }
    /// Retry n waits a random time up to min(longestRetry, firstRetry · 2ⁿ) (full jitter).
    package var firstRetry: Duration = .seconds(1)
    package var longestRetry: Duration = .seconds(3600)
    /// A change failing this long is parked and the user's next one goes.
    package var retryWindow: Duration = .seconds(72 * 3600)
    /// Deliveries in flight at once, across users (one per user at a time).
    package var concurrency = 64
    /// How often to look for retries that came due when nothing else wakes the dispatcher.
    package var pollInterval: Duration = .seconds(1)
    /// Where deliveries may go (`LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS`): off, webhooks reach only
    /// public addresses.
    package var targets = WebhookTargets(allowPrivateNetworks: false)

    package init() {}

    func delay(beforeRetry retry: Int) -> Duration {
        FullJitter.delay(beforeRetry: retry, base: firstRetry, cap: longestRetry)
    }
}
