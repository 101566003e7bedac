import Configuration
import LedgerSettings

extension RequestLimits {
    /// The limits on what a request may send, from `reader`; the defaults otherwise. The `ledger`
    /// command hands it the reader scoped to `ledger`: `LEDGER_MAX_BODY_BYTES` in the environment.
    ///
    /// - Configuration keys:
    ///   - `maxBodyBytes` (1 024…1 073 741 824, default 1 048 576): larger bodies are refused with 413
    ///   - `requestDeadline` (seconds, or `90s`, `1m`; default 10): past it, a request still waiting
    ///     on the database is answered 503 with `Retry-After`
    package init(reader: ConfigReader) throws(SettingsError) {
        var read = SettingsReader(reader)
        self.init(
            maximumBody: read.number("maxBodyBytes", in: 1_024...1_073_741_824) ?? Self.defaultMaximumBody,
            deadline: read.interval("requestDeadline") ?? Self.defaultDeadline)
        try read.finish()
    }
}
