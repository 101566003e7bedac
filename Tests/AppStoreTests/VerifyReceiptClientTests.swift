import AppStore
import AppStoreSimulator
import Foundation
import LedgerCore
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// The verifyReceipt client against the simulator's verifyReceipt: fallbacks, retries, statuses.
@Suite struct VerifyReceiptClientTests {
    let server = VerifyReceiptServer()
    let app = SimulatedApp(authority: try! TestCertificateAuthority(), bundleID: "com.example.game", environment: "Sandbox")
    static let expectation = Expectation(bundleID: "com.example.game", environments: [.production, .sandbox])

    /// The client's budget and backoff run on a `SteppedClock`: with the whole suite sharing two
    /// cores, three exchanges with the simulator once took longer than the budget in wall time.
    /// Each request's own timeout is wall time (it is the HTTP client's), so it is a bound for a
    /// hang here: at 0.4 of this machine's CPU, with the suite starting, a loopback exchange took
    /// over 5 s and was retried, and the tests counting calls saw one too many.
    func client(
        maxAttempts: Int = 4, timeout: Duration = .seconds(60), clock: SteppedClock = SteppedClock(),
        observe: @escaping @Sendable (AppleCall) -> Void = { _ in }
    ) async throws -> VerifyReceiptClient {
        let urls = try await server.start()
        let configuration = VerifyReceiptConfiguration(
            productionURL: urls.production, sandboxURL: urls.sandbox,
            patience: Patience(
                maxAttempts: maxAttempts, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), totalBudget: .seconds(15),
                requestTimeout: timeout))
        return VerifyReceiptClient(
            configuration: configuration, logger: Logger(label: "test"), observe: observe, clock: PatienceClock(clock))
    }

    func receipt(environment: VerifyReceiptServer.Endpoint = .sandbox, secret: String? = "s3cret") throws -> String {
        var app = self.app
        app.environment = environment == .production ? "Production" : "Sandbox"
        let purchase = SimulatedTransaction(transactionID: "1001", productID: "coins.100", type: "Consumable", purchaseDate: Date())
        return try server.register(app.receiptAnswer([purchase]), environment: environment, sharedSecret: secret)
    }

    func code(_ body: () async throws -> VerifiedReceipt) async -> LedgerError.Code? {
        do { _ = try await body(); return nil } catch let error as LedgerError { return error.code } catch { return nil }
    }

    @Test func aSandboxReceiptFallsBackFromProductionOn21007() async throws {
        let calls = Mutex<[AppleCall]>([])
        let client = try await client { call in calls.withLock { $0.append(call) } }
        defer { server.stop() }
        let verified = try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .sandbox)
        #expect(verified.response.transactions.map(\.transactionID) == ["1001"])
        #expect(server.calls(.production) == 1 && server.calls(.sandbox) == 1)
        // Each exchange observed for the metrics, with the endpoint it went to and Apple's status.
        #expect(
            calls.withLock { $0 } == [
                AppleCall(endpoint: "POST production /verifyReceipt", status: 200, outcome: "sandbox_fallback"),
                AppleCall(endpoint: "POST sandbox /verifyReceipt", status: 200, outcome: "valid"),
            ])
    }

    @Test func aProductionReceiptIsAnsweredByProductionOnly() async throws {
        let client = try await client()
        defer { server.stop() }
        let verified = try await client.verify(
            receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
        #expect(server.calls(.sandbox) == 0)
    }

    @Test func retryableStatusesAndServerErrorsAreRetriedThenSucceed() async throws {
        let clock = SteppedClock()
        let client = try await client(clock: clock)
        defer { server.stop() }
        server.script(.production, [.status(21005), .httpError(503), .retryable(21199)])
        let verified = try await client.verify(
            receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
        #expect(server.calls(.production) == 4)
        // A full-jitter wait before each retry, within the cap.
        #expect(clock.slept.count == 3 && clock.slept.allSatisfy { $0 >= .zero && $0 <= .milliseconds(20) }, "\(clock.slept)")
    }

    @Test func noRetryStartsOnceTheBudgetIsSpent() async throws {
        let clock = SteppedClock()
        let urls = try await server.start()
        defer { server.stop() }
        // Waits of up to a second each (full jitter) against a budget of two and a half: the
        // client gives up before a wait would take it past the budget, whatever the draws.
        let configuration = VerifyReceiptConfiguration(
            productionURL: urls.production, sandboxURL: urls.sandbox,
            patience: Patience(
                maxAttempts: 10, backoffBase: .seconds(1), backoffCap: .seconds(1), totalBudget: .milliseconds(2500),
                requestTimeout: .seconds(60)))
        let client = VerifyReceiptClient(configuration: configuration, logger: Logger(label: "test"), clock: PatienceClock(clock))
        server.script(.production, Array(repeating: .status(21005), count: 10))
        #expect(
            await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation) }
                == .appleUnavailable)
        #expect(clock.now.offset <= .milliseconds(2500), "no wait ran past the budget")
        #expect(server.calls(.production) == clock.slept.count + 1)
    }

    @Test func retriesAreBoundedAndEndInAppleUnavailable() async throws {
        let client = try await client(maxAttempts: 3)
        defer { server.stop() }
        server.script(.production, Array(repeating: .status(21009), count: 10))
        #expect(
            await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation) }
                == .appleUnavailable)
        #expect(server.calls(.production) == 3)
    }

    @Test func aTimeoutIsRetried() async throws {
        let client = try await client(timeout: .seconds(5))
        defer { server.stop() }
        // An answer that never comes in time: the request's own timeout ends the attempt. (Five
        // seconds, not one: the retried attempt must be answered within it on a slow machine too.)
        server.script(.production, [.delay(.seconds(60))])
        let verified = try await client.verify(
            receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
    }

    @Test func finalStatusesAreTypedErrors() async throws {
        let client = try await client()
        defer { server.stop() }
        #expect(
            await code { try await client.verify(receiptData: receipt(), sharedSecret: "wrong", expecting: Self.expectation) }
                == .sharedSecretMismatch)
        #expect(
            await code {
                try await client.verify(
                    receiptData: Data("unknown".utf8).base64EncodedString(), sharedSecret: "s3cret", expecting: Self.expectation)
            }
                == .receiptInvalid)
        server.script(.production, [.status(21003)])
        #expect(
            await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation) }
                == .receiptInvalid)
        #expect(
            await code { try await client.verify(receiptData: "%%% not base64 %%%", sharedSecret: "s3cret", expecting: Self.expectation) }
                == .malformed)
    }

    @Test func theAnswerMustBeForThisAppAndAnAcceptedEnvironment() async throws {
        let client = try await client()
        defer { server.stop() }
        let other = Expectation(bundleID: "com.example.other", environments: [.production, .sandbox])
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: other) } == .bundleMismatch)
        let productionOnly = Expectation(bundleID: "com.example.game", environments: [.production])
        #expect(
            await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: productionOnly) }
                == .environmentNotAllowed)
    }
}
