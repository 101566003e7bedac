import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerAccess
import LedgerCore
import LedgerServer
import NIOCore
import NIOHTTP1

/// `ledger-bench google`: Google Play claims per second beside Apple claims (StoreKit 2 signed
/// transactions) on the same server, in alternated rounds. An Apple claim is verified locally
/// (JWS, chain); a Google claim asks Google — here the simulator, on the same two cores — and
/// queues the acknowledgement, which the acknowledger sends in the background while the next
/// claims run. Both record a purchase and its claim and answer the user's state.
struct GoogleBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google", abstract: "Google Play claims per second beside Apple claims on the same server, alternated.")

    @Option(help: "Seconds per measurement.") var seconds = 5.0
    @Option(help: "Rounds (Apple and Google alternate).") var rounds = 3
    @Option(help: "Requests in flight.") var connections = 8

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let google = try SimulatedGooglePlay()
        try await google.start()
        let account = try SimulatedServiceAccount()
        google.register(account)
        let server = try await BenchServer.start(
            on: database, google: GooglePlayConfiguration(apiURL: google.baseURL, certsURL: google.certsURL), logger: logger)
        let bundle = "com.example.bench", package = "com.example.bench.android"
        let key = try await server.services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let keyFile = try JSONSerialization.jsonObject(with: try account.keyFile(tokenURI: google.tokenURL))
        try await Self.send(
            "PUT", server.base + "/v1/apps/\(bundle)", key: key,
            ["environments": ["Sandbox"], "google_play": ["package_name": package, "service_account": keyFile]])
        try await Self.send(
            "PUT", server.base + "/v1/apps/\(bundle)/products/pro.monthly", key: key, ["type": "auto_renewable", "entitlements": ["pro"]])
        try await Self.send(
            "PUT", server.base + "/v1/apps/\(bundle)/products/pro", key: key,
            ["type": "auto_renewable", "entitlements": ["pro"], "store": "google_play"])
        let simulated = SimulatedApp(authority: server.authority, bundleID: bundle, environment: "Sandbox")
        let now = Date()
        let run = UInt32.random(in: 0...UInt32.max)

        var apple: [Double] = [], play: [Double] = []
        for round in 1...rounds {
            apple.append(
                try await Self.rate(seconds: seconds, connections: connections) { index in
                    let purchase = SimulatedTransaction(
                        transactionID: "a\(run)-\(round)-\(index)", productID: "pro.monthly", type: "Auto-Renewable Subscription",
                        purchaseDate: now.addingTimeInterval(-3600), expiresDate: now.addingTimeInterval(30 * 86_400))
                    try await Self.send(
                        "POST", server.base + "/v1/apps/\(bundle)/transactions", key: key,
                        ["user_id": "apple-\(round)-\(index)", "signed_transaction": try simulated.signedTransaction(purchase)])
                })
            play.append(
                try await Self.rate(seconds: seconds, connections: connections) { index in
                    let token = google.purchaseSubscription(package: package, productID: "pro", test: false)
                    try await Self.send(
                        "POST", server.base + "/v1/apps/\(bundle)/google/purchases", key: key,
                        ["user_id": "google-\(round)-\(index)", "product_id": "pro", "purchase_token": token])
                })
        }
        await server.stop()
        await google.stop()
        let acknowledged = google.seen().filter { $0.path.hasSuffix(":acknowledge") && $0.status == 200 }.count
        print("Claims on one server (it, PostgreSQL and the Google Play simulator share 2 cores), \(rounds) rounds of \(seconds) s,")
        print("\(connections) requests in flight, medians")
        print("  Apple: a StoreKit 2 signed transaction (baseline)  \(format(median(apple)))")
        print(
            "  Google Play: a purchase token, asked of Google      \(format(median(play)))   "
                + String(format: "%5.1f %%", median(play) / median(apple) * 100) + " of Apple's")
        print("  acknowledgements Google confirmed during the runs: \(acknowledged)")
        print("  rounds: apple=\(apple.map { Int($0) }) google=\(play.map { Int($0) })")
    }

    /// Requests per second over `seconds`, `connections` at a time, each given its own index.
    static func rate(seconds: Double, connections: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int(seconds * 1000))
        let done = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<connections {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < deadline {
                        try await body(worker * 10_000_000 + count)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = ContinuousClock.now - started
        return Double(done) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// One request; any status but `status` ends the benchmark, saying what the server answered.
    static func send(_ method: String, _ url: String, key: String, _ json: [String: Any]?, expecting status: Int = 200) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let json { request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 22)
        guard Int(response.status.code) == status else {
            throw ValidationError("\(method) \(url) answered \(response.status.code): \(String(buffer: body).prefix(300))")
        }
    }
}
