/// The app on Google Play, as its configuration event states it. The service account's key is a
/// secret and is kept apart, sealed (never in the log, which is forever).
package struct GooglePlaySettings: Codable, Sendable, Equatable {
    /// The Android application id Google's API and notifications name (`com.example.game`).
    package var packageName: String
    /// The audience of the OIDC tokens Pub/Sub signs its pushes with (set on the subscription).
    package var pushAudience: String?
    /// The service account Pub/Sub signs its pushes as.
    package var pushServiceAccountEmail: String?
    /// Whether license testers' purchases are accepted (as Sandbox); refused otherwise.
    package var testPurchases: Bool

    package init(packageName: String, pushAudience: String? = nil, pushServiceAccountEmail: String? = nil, testPurchases: Bool = false) {
        self.packageName = packageName
        self.pushAudience = pushAudience
        self.pushServiceAccountEmail = pushServiceAccountEmail
        self.testPurchases = testPurchases
    }
}
