import LedgerCore

/// Where Google's services are and how patiently the Developer API is asked. Google's hosts by
/// default; the simulator's in tests and demos.
package struct GooglePlayConfiguration: Sendable {
    package static let googleAPIURL = "https://androidpublisher.googleapis.com/"
    package static let googleCertsURL = "https://www.googleapis.com/oauth2/v3/certs"

    /// The Developer API's base URL; paths `androidpublisher/v3/…` are appended to it.
    package var apiURL: String
    /// The JWK Set Pub/Sub's OIDC tokens are signed with.
    package var certsURL: String
    package var patience: Patience

    package init(apiURL: String = googleAPIURL, certsURL: String = googleCertsURL, patience: Patience = .googleDeveloperAPI) {
        self.apiURL = apiURL
        self.certsURL = certsURL
        self.patience = patience
    }

    /// The API's base with exactly one trailing slash.
    var apiBase: String { apiURL.hasSuffix("/") ? apiURL : apiURL + "/" }
}
