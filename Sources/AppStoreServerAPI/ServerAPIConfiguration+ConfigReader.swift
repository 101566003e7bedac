import Configuration
import LedgerSettings

extension ServerAPIConfiguration {
    /// Where Apple's App Store Server API is, from `reader`; Apple's hosts by default (the
    /// simulator's in tests and demos). The `ledger` command hands it the reader scoped to
    /// `ledger.apple.serverAPI`: `LEDGER_APPLE_SERVER_API_URL` and `…_SANDBOX_URL` in the environment.
    ///
    /// - Configuration keys:
    ///   - `url` (string, default `https://api.storekit.apple.com`): production data
    ///   - `sandboxURL` (string, default `https://api.storekit-sandbox.apple.com`): sandbox data
    ///
    /// How patiently Apple is asked is fixed on purpose (docs/configuration.md says why).
    package init(reader: ConfigReader) {
        let read = SettingsReader(reader)
        self.init()
        if let url = read.text("url") { productionURL = url }
        if let url = read.text("sandboxURL") { sandboxURL = url }
    }
}
