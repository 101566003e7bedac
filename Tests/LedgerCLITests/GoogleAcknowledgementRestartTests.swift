import EmbeddedPostgres
import Foundation
import GooglePlaySimulator
import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A purchase Google is owed an acknowledgement for outlives the server that recorded it: `ledger
/// serve` killed (SIGKILL) while Google refuses every acknowledgement, another started on the same
/// database once Google is back, and Google is told — once.
@Suite(.takingTurns) struct GoogleAcknowledgementRestartTests {
    static let bundle = "com.example.android"
    static let package = "com.example.android.game"

    @Test func anAcknowledgementOwedSurvivesAKilledServerAndIsSentOnce() async throws {
        let google = try SimulatedGooglePlay()
        try await google.start()
        defer { Task { await google.stop() } }
        let account = try SimulatedServiceAccount()
        google.register(account)
        let database = try await TestCluster.database()
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = database.connectionString
        environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
        environment["LEDGER_LOG_LEVEL"] = "warning"
        environment["LEDGER_APPLE_RECONCILE_INTERVAL"] = "off"
        environment["LEDGER_GOOGLE_API_URL"] = google.baseURL
        environment["LEDGER_GOOGLE_CERTS_URL"] = google.certsURL
        let created = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["keys", "create", "--name", "game", "--scopes", "admin"], environment: environment)
        let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init), "\(created.output)")
        let folder = NSTemporaryDirectory() + "ledger-google-ack-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

        let first = try await ServeProcess.start(environment: environment, log: folder + "/first.log")
        let keyFile = String(decoding: try account.keyFile(tokenURI: google.tokenURL), as: UTF8.self)
        let app = #"{"environments": ["Production"], "google_play": {"package_name": "\#(Self.package)", "service_account": \#(keyFile)}}"#
        #expect(try await send("PUT", first.base + "/v1/apps/\(Self.bundle)", key: key, json: app).0 == 200)
        let product = #"{"type": "auto_renewable", "entitlements": ["pro"], "store": "google_play"}"#
        #expect(try await send("PUT", first.base + "/v1/apps/\(Self.bundle)/products/pro", key: key, json: product).0 == 200)

        // Google refuses every acknowledgement while the first server runs.
        google.inject(.init(status: 503, pathContains: ":acknowledge", times: 100_000))
        let token = google.purchaseSubscription(package: Self.package, productID: "pro")
        let claim = #"{"user_id": "kim", "product_id": "pro", "purchase_token": "\#(token)"}"#
        let claimed = try await send("POST", first.base + "/v1/apps/\(Self.bundle)/google/purchases", key: key, json: claim)
        #expect(claimed.0 == 200, "\(claimed.1)")
        #expect(try await eventually(within: 180) { google.seen().contains { $0.path.hasSuffix(":acknowledge") } }, "never tried")
        first.stop()
        #expect(google.subscription(token)?.acknowledged == false)

        google.clearFaults()
        let second = try await ServeProcess.start(environment: environment, log: folder + "/second.log")
        defer { second.stop() }
        // The row the killed server held is free again within its claim's minute (hence the longer bound).
        #expect(try await eventually(within: 180) { google.subscription(token)?.acknowledged == true }, "\(second.output)")
        try await Task.sleep(for: .seconds(2))
        let accepted = google.seen().filter { $0.path.hasSuffix(":acknowledge") && $0.status == 200 }
        #expect(accepted.count == 1, "acknowledged once: \(accepted)")
    }

}
