import Configuration
import Foundation
import LedgerSettings

extension GooglePlayConfiguration {
    /// Where Google's services are, from `reader`. The `ledger` command is to hand it the reader
    /// scoped to `ledger.google`: `LEDGER_GOOGLE_API_URL` and `LEDGER_GOOGLE_CERTS_URL` in the
    /// environment.
    ///
    /// - Configuration keys:
    ///   - `apiURL` (string, default `https://androidpublisher.googleapis.com/`): the Developer API
    ///   - `certsURL` (string, default `https://www.googleapis.com/oauth2/v3/certs`): Pub/Sub's signing keys
    ///
    /// A value that is not an http(s) URL is a problem naming its key, never the default. How
    /// patiently Google is asked is fixed, as it is for Apple.
    package init(reader: ConfigReader) throws(SettingsError) {
        var read = SettingsReader(reader)
        self.init()
        if let url = read.text("apiURL") {
            if Self.isHTTPURL(url) { apiURL = url } else { read.report("apiURL", complaint: "is not an http(s) URL") }
        }
        if let url = read.text("certsURL") {
            if Self.isHTTPURL(url) { certsURL = url } else { read.report("certsURL", complaint: "is not an http(s) URL") }
        }
        try read.finish()
    }

    static func isHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { return false }
        return ["http", "https"].contains(scheme) && url.host?.isEmpty == false
    }
}
