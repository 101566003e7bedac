import Configuration
import LedgerSettings

extension VerifyReceiptConfiguration {
    /// Where Apple's verifyReceipt is and what to ask it, from `reader`; Apple's URLs by default.
    /// The `ledger` command hands it the reader scoped to `ledger.apple`, so the environment's
    /// names are `LEDGER_APPLE_VERIFY_RECEIPT_URL` and so on.
    ///
    /// - Configuration keys:
    ///   - `verifyReceiptURL` (string, default Apple's production `verifyReceipt`)
    ///   - `sandboxVerifyReceiptURL` (string, default Apple's sandbox `verifyReceipt`): asked after a 21007
    ///   - `excludeOldTransactions` (true or false, default false): only the latest renewal of each subscription
    ///
    /// A value that does not parse is an error naming it, never the default.
    package init(reader: ConfigReader) throws(SettingsError) {
        var read = SettingsReader(reader)
        self.init()
        if let url = read.text("verifyReceiptURL") { productionURL = url }
        if let url = read.text("sandboxVerifyReceiptURL") { sandboxURL = url }
        if let exclude = read.flag("excludeOldTransactions") { excludeOldTransactions = exclude }
        try read.finish()
    }
}
