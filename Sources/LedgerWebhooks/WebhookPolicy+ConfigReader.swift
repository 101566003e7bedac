import Configuration
import LedgerSettings

extension WebhookPolicy {
    /// How deliveries are paced and where they may go, from `reader`; the defaults otherwise. The
    /// `ledger` command hands it the reader scoped to `ledger.webhook`, so the environment's names
    /// are `LEDGER_WEBHOOK_TIMEOUT` and so on.
    ///
    /// - Configuration keys (an interval is seconds, or with a unit: `90s`, `15m`, `72h`):
    ///   - `timeout` (interval, default 10 s): one attempt, connect to answer; the lease follows it
    ///   - `retryWindow` (interval, default 72 h): how long a change is retried before it is parked
    ///   - `firstRetryMs` (milliseconds, 1…3 600 000, default 1 000): the first retry's ceiling
    ///   - `longestRetry` (interval, default 1 h): the longest wait between attempts
    ///   - `concurrency` (1…10 000, default 64): deliveries in flight at once, across users
    ///   - `pollMs` (milliseconds, 1…3 600 000, default 1 000): how often due retries are looked for
    ///   - `allowPrivateNetworks` (true or false, default false): let webhooks reach private ranges
    ///
    /// A value that does not parse is an error naming it, never the default: a retry window of
    /// `3d` quietly read as 72 h would park changes a day early.
    package init(reader: ConfigReader) throws(SettingsError) {
        var read = SettingsReader(reader)
        self.init()
        if let timeout = read.interval("timeout") { attemptTimeout = timeout }
        if let window = read.interval("retryWindow") { retryWindow = window }
        if let first = read.milliseconds("firstRetryMs", in: 1...3_600_000) { firstRetry = first }
        if let longest = read.interval("longestRetry") { longestRetry = longest }
        if let concurrency = read.number("concurrency", in: 1...10_000) { self.concurrency = concurrency }
        if let poll = read.milliseconds("pollMs", in: 1...3_600_000) { pollInterval = poll }
        if let allowed = read.flag("allowPrivateNetworks") { targets.allowPrivateNetworks = allowed }
        try read.finish()
    }
}
