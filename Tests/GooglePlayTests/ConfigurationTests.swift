import Configuration
import GooglePlay
import LedgerSettings
import Testing

/// Where Google is, read as the `ledger` command will read it: under `ledger.google`, so
/// `LEDGER_GOOGLE_API_URL` and `LEDGER_GOOGLE_CERTS_URL` in the environment.
@Suite struct GooglePlayConfigurationTests {
    static func read(_ environment: [String: String]) throws(SettingsError) -> GooglePlayConfiguration {
        let reader = ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment))
        return try GooglePlayConfiguration(reader: reader.scoped(to: "ledger.google"))
    }

    @Test func googlesHostsAreTheDefault() throws {
        let configuration = try Self.read([:])
        #expect(configuration.apiURL == "https://androidpublisher.googleapis.com/")
        #expect(configuration.certsURL == "https://www.googleapis.com/oauth2/v3/certs")
    }

    @Test func theEnvironmentPointsTheClientAndVerifierElsewhere() throws {
        let configuration = try Self.read([
            "LEDGER_GOOGLE_API_URL": "http://127.0.0.1:9000/", "LEDGER_GOOGLE_CERTS_URL": "http://127.0.0.1:9000/oauth2/v3/certs",
        ])
        #expect(configuration.apiURL == "http://127.0.0.1:9000/" && configuration.certsURL == "http://127.0.0.1:9000/oauth2/v3/certs")
    }

    @Test func aValueThatIsNoURLIsAProblemNamingItsKeyNotTheDefault() {
        let error = #expect(throws: SettingsError.self) { try Self.read(["LEDGER_GOOGLE_API_URL": "androidpublisher"]) }
        #expect(error?.problems.count == 1 && error?.problems.first?.complaint.contains("http(s) URL") == true)
    }
}
