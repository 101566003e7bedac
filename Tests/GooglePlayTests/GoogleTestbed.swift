import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerCore
import LedgerTestSupport
import Logging

/// A simulated Google on loopback, a service account it knows, and a client configured for both,
/// waiting on a stepped clock so the retries' waits are the ones asked for.
struct GoogleTestbed {
    /// RSA keys take a while to make: one account and one Pub/Sub signer for every test.
    static let account = try! SimulatedServiceAccount()
    static let pusher = try! PubSubPusher()
    static let packageName = "com.example.ledger"

    let simulator: SimulatedGooglePlay
    let tokens: GoogleAccessTokens
    let client: AndroidPublisherClient
    let clock = SteppedClock()

    init(maxAttempts: Int = 4, totalBudget: Duration = .seconds(20), accessTokenLifetime: Int = 3599) async throws {
        simulator = try SimulatedGooglePlay(accessTokenLifetime: accessTokenLifetime, pusher: Self.pusher)
        try await simulator.start()
        simulator.register(Self.account)
        let account = try GoogleServiceAccount(keyFile: try Self.account.keyFile(tokenURI: simulator.tokenURL))
        tokens = GoogleAccessTokens(account: account)
        client = AndroidPublisherClient(
            configuration: GooglePlayConfiguration(
                apiURL: simulator.baseURL, certsURL: simulator.certsURL,
                patience: Patience(
                    maxAttempts: maxAttempts, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), totalBudget: totalBudget,
                    // Wall time, a bound for a hang (the budget runs on the test's clock).
                    requestTimeout: .seconds(60))),
            tokens: tokens, logger: Logger(label: "google-test"), clock: PatienceClock(clock))
    }

    /// The API requests the simulator saw (the token endpoint's and the key set's left out).
    func apiCalls() -> [SimulatedGooglePlay.Seen] { simulator.seen().filter { $0.path.hasPrefix("/androidpublisher/") } }
    func tokenCalls() -> Int { simulator.seen().filter { $0.path == "/token" }.count }
}
