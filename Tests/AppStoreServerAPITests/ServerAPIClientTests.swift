import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import Foundation
import LedgerCore
import LedgerTestSupport
import Logging
import Testing

/// The client against the simulator's App Store Server API over loopback: Apple's paths, its
/// bearer check, its pages, its rate limit and its failures.
@Suite struct ServerAPIClientTests {
    static let authority = try! TestCertificateAuthority()

    /// A simulator serving one Sandbox app signed for by `key`, and a client configured for it.
    struct Fixture {
        let simulator: ServerAPISimulator
        let receipts: VerifyReceiptServer
        let app: SimulatedApp
        let credentials: ServerAPICredentials
        let client: AppStoreServerAPIClient
        /// The client's budget and waits: a busy machine's slow exchanges spend none of it.
        let clock = SteppedClock()

        init(pageSize: Int = 20, maxAttempts: Int = 4, clientKey: P256.Signing.PrivateKey? = nil) async throws {
            simulator = ServerAPISimulator(pageSize: pageSize)
            receipts = VerifyReceiptServer()
            let simulator = simulator
            let urls = try await receipts.start { simulator.register(on: $0) }
            let base = String(urls.production.dropLast("/production/verifyReceipt".count))
            app = SimulatedApp(authority: ServerAPIClientTests.authority, bundleID: "com.example.game", environment: "Sandbox")
            let key = P256.Signing.PrivateKey()
            let issuer = UUID().uuidString.lowercased()
            simulator.register(app, key: .init(issuerID: issuer, keyID: "SIMKEY01", publicKey: key.publicKey))
            credentials = try ServerAPICredentials(
                issuerID: issuer, keyID: "SIMKEY01", privateKeyPEM: (clientKey ?? key).pemRepresentation,
                bundleID: "com.example.game")
            client = AppStoreServerAPIClient(
                configuration: .init(
                    productionURL: base + "/production", sandboxURL: base + "/sandbox",
                    // The budget is on the test's clock; a request's timeout is wall time, a
                    // bound for a hang: 5 s was retried at 0.4 CPU, and calls were counted twice.
                    patience: Patience(
                        maxAttempts: maxAttempts, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20),
                        totalBudget: .seconds(20), requestTimeout: .seconds(60))),
                logger: Logger(label: "test"), clock: PatienceClock(clock))
        }
    }

    static func subscription(_ count: Int, original: String = "7000") -> [SimulatedTransaction] {
        let start = Date(timeIntervalSinceNow: -Double(count) * 30 * 86_400)
        let first = SimulatedTransaction(
            transactionID: original, productID: "pro.monthly", purchaseDate: start,
            expiresDate: start.addingTimeInterval(30 * 86_400))
        return (1..<count).reduce(into: [first]) { all, n in
            all.append(all.last!.renewed(transactionID: "\(original)-\(n)", period: 30 * 86_400))
        }
    }

    @Test func transactionHistoryIsReadToTheEndAcrossPagesOldestFirst() async throws {
        let fixture = try await Fixture(pageSize: 20)
        defer { fixture.receipts.stop() }
        fixture.simulator.add(Self.subscription(45).shuffled(), customer: "c1", to: fixture.app)
        let history = try await fixture.client.transactionHistory("7000-17", in: .sandbox, as: fixture.credentials)
        #expect(history.signedTransactions.count == 45)
        let verifier = SignedDataVerifier(roots: [Self.authority.root])
        var ids: [String] = []
        for signed in history.signedTransactions {
            ids.append(
                try await verifier.verifyTransaction(signed, expecting: .init(bundleID: "com.example.game", environments: [.sandbox])).facts
                    .transactionID)
        }
        #expect(ids == ["7000"] + (1..<45).map { "7000-\($0)" })
        #expect(fixture.simulator.seen().count == 3, "three pages of 20")
    }

    @Test func aRateLimitIsWaitedOutAsRetryAfterSays() async throws {
        let fixture = try await Fixture()
        defer { fixture.receipts.stop() }
        fixture.simulator.add(Self.subscription(1), to: fixture.app)
        fixture.simulator.script([.error(status: 429, retryAfter: "1")])
        let history = try await fixture.client.transactionHistory("7000", in: .sandbox, as: fixture.credentials)
        #expect(history.signedTransactions.count == 1)
        let seen = fixture.simulator.seen()
        try #require(seen.count == 2)
        #expect(seen[0].status == 429 && seen[1].status == 200)
        #expect(fixture.clock.slept == [.seconds(1)], "the client waited what Retry-After said before asking again")
    }

    @Test func serverErrorsAreRetriedABoundedNumberOfTimesThenUnavailable() async throws {
        let fixture = try await Fixture(maxAttempts: 3)
        defer { fixture.receipts.stop() }
        fixture.simulator.add(Self.subscription(1), to: fixture.app)
        fixture.simulator.script(Array(repeating: .error(status: 503), count: 3))
        let error = try await #require(throws: LedgerError.self) {
            try await fixture.client.transactionInfo("7000", in: .sandbox, as: fixture.credentials)
        }
        #expect(error.code == .appleUnavailable)
        #expect(fixture.simulator.seen().count == 3)
        fixture.simulator.script([.error(status: 500)])
        #expect(try await !fixture.client.transactionInfo("7000", in: .sandbox, as: fixture.credentials).isEmpty, "one 500, then an answer")
    }

    @Test func aWrongKeyIsRefusedAsUnauthorizedNamingTheAppAndKey() async throws {
        let fixture = try await Fixture(clientKey: P256.Signing.PrivateKey())
        defer { fixture.receipts.stop() }
        fixture.simulator.add(Self.subscription(1), to: fixture.app)
        let error = try await #require(throws: LedgerError.self) {
            try await fixture.client.transactionInfo("7000", in: .sandbox, as: fixture.credentials)
        }
        #expect(error.code == .appleAPIUnauthorized)
        #expect(error.message.contains("SIMKEY01") && error.message.contains("com.example.game"))
        #expect(fixture.simulator.seen().map(\.status) == [401], "a refused key is not retried")
    }

    @Test func anUnknownTransactionIsNotFoundAndABadIdIsNeverSent() async throws {
        let fixture = try await Fixture()
        defer { fixture.receipts.stop() }
        let missing = try await #require(throws: LedgerError.self) {
            try await fixture.client.transactionInfo("404", in: .sandbox, as: fixture.credentials)
        }
        #expect(missing.code == .appleTransactionNotFound)
        let bad = try await #require(throws: LedgerError.self) {
            try await fixture.client.transactionInfo("../admin", in: .sandbox, as: fixture.credentials)
        }
        #expect(bad.code == .malformed)
        #expect(fixture.simulator.seen().count == 1)
    }

    @Test func notificationHistoryIsPagedAndFiltered() async throws {
        let fixture = try await Fixture(pageSize: 10)
        defer { fixture.receipts.stop() }
        let start = Date().addingTimeInterval(-60)
        for n in 0..<25 {
            await fixture.simulator.send(try fixture.app.notificationV2("TEST"), of: fixture.app, transactionID: n < 5 ? "t-5" : nil)
        }
        var pages: [Int] = []
        try await fixture.client.notificationHistory(from: start, to: Date().addingTimeInterval(1), in: .sandbox, as: fixture.credentials) {
            page in
            pages.append(page.notificationHistory?.count ?? 0)
            #expect(page.notificationHistory?.allSatisfy { $0.sendAttempts?.first?.sendAttemptResult == "NO_RESPONSE" } == true)
        }
        #expect(pages == [10, 10, 5])
        var ofOne = 0
        try await fixture.client.notificationHistory(
            from: start, to: Date().addingTimeInterval(1), onlyFailures: true, transactionID: "t-5",
            in: .sandbox, as: fixture.credentials
        ) { ofOne += $0.notificationHistory?.count ?? 0 }
        #expect(ofOne == 5)
    }

    @Test func consumptionInformationAndTestNotificationsReachTheSimulator() async throws {
        let fixture = try await Fixture()
        defer { fixture.receipts.stop() }
        fixture.simulator.add(
            [SimulatedTransaction(transactionID: "c-1", productID: "coins.100", type: "Consumable", purchaseDate: Date())], to: fixture.app)
        let information = ConsumptionInformation(
            customerConsented: true, consumptionPercentage: 25_000, deliveryStatus: "DELIVERED",
            refundPreference: "DECLINE", sampleContentProvided: false)
        try await fixture.client.sendConsumption(information, for: "c-1", in: .sandbox, as: fixture.credentials)
        let answers = fixture.simulator.consumptionAnswers(of: fixture.app)
        #expect(answers.count == 1 && answers.first?.transactionID == "c-1")
        #expect(answers.first?.body["consumptionPercentage"] == "25000" && answers.first?.body["refundPreference"] == "DECLINE")

        let token = try await fixture.client.requestTestNotification(in: .sandbox, as: fixture.credentials)
        var status = try? await fixture.client.testNotificationStatus(token, in: .sandbox, as: fixture.credentials)
        for _ in 0..<100 where status == nil { // Apple sends it after answering
            try await Task.sleep(for: .milliseconds(20))
            status = try? await fixture.client.testNotificationStatus(token, in: .sandbox, as: fixture.credentials)
        }
        #expect(status?.signedPayload != nil && status?.sendAttempts?.first?.sendAttemptResult == "NO_RESPONSE")
    }
}
