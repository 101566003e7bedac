import AppStore
import AppStoreSimulator
import Foundation
import LedgerCore
import Logging
import Synchronization
import Testing

/// The verifyReceipt client against the simulator's verifyReceipt: fallbacks, retries, statuses.
@Suite struct VerifyReceiptClientTests {
    let server = VerifyReceiptServer()
    let app = SimulatedApp(authority: try! TestCertificateAuthority(), bundleID: "com.example.game", environment: "Sandbox")
    static let expectation = Expectation(bundleID: "com.example.game", environments: [.production, .sandbox])

    func client(
        maxAttempts: Int = 4, timeout: Duration = .seconds(5), observe: @escaping @Sendable (AppleCall) -> Void = { _ in }
    ) async throws -> VerifyReceiptClient {
        let urls = try await server.start()
        let configuration = VerifyReceiptConfiguration(
            productionURL: urls.production, sandboxURL: urls.sandbox, maxAttempts: maxAttempts,
            backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), requestTimeout: timeout)
        return VerifyReceiptClient(configuration: configuration, logger: Logger(label: "test"), observe: observe)
    }

    func receipt(environment: VerifyReceiptServer.Endpoint = .sandbox, secret: String? = "s3cret") throws -> String {
        var app = self.app
        app.environment = environment == .production ? "Production" : "Sandbox"
        let purchase = SimulatedTransaction(transactionID: "1001", productID: "coins.100", type: "Consumable", purchaseDate: Date())
        return try server.register(app.receiptAnswer([purchase]), environment: environment, sharedSecret: secret)
    }

    func code(_ body: () async throws -> VerifiedReceipt) async -> AppStoreError.Code? {
        do { _ = try await body(); return nil } catch let error as AppStoreError { return error.code } catch { return nil }
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
        let verified = try await client.verify(receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
        #expect(server.calls(.sandbox) == 0)
    }

    @Test func retryableStatusesAndServerErrorsAreRetriedThenSucceed() async throws {
        let client = try await client()
        defer { server.stop() }
        server.script(.production, [.status(21005), .httpError(503), .retryable(21199)])
        let verified = try await client.verify(receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
        #expect(server.calls(.production) == 4)
    }

    @Test func retriesAreBoundedAndEndInAppleUnavailable() async throws {
        let client = try await client(maxAttempts: 3)
        defer { server.stop() }
        server.script(.production, Array(repeating: .status(21009), count: 10))
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation) } == .appleUnavailable)
        #expect(server.calls(.production) == 3)
    }

    @Test func aTimeoutIsRetried() async throws {
        let client = try await client(timeout: .seconds(1))
        defer { server.stop() }
        server.script(.production, [.delay(.seconds(3))])
        let verified = try await client.verify(receiptData: receipt(environment: .production), sharedSecret: "s3cret", expecting: Self.expectation)
        #expect(verified.environment == .production)
    }

    @Test func finalStatusesAreTypedErrors() async throws {
        let client = try await client()
        defer { server.stop() }
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "wrong", expecting: Self.expectation) } == .sharedSecretMismatch)
        #expect(
            await code { try await client.verify(receiptData: Data("unknown".utf8).base64EncodedString(), sharedSecret: "s3cret", expecting: Self.expectation) }
                == .receiptInvalid)
        server.script(.production, [.status(21003)])
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: Self.expectation) } == .receiptInvalid)
        #expect(await code { try await client.verify(receiptData: "%%% not base64 %%%", sharedSecret: "s3cret", expecting: Self.expectation) } == .malformed)
    }

    @Test func theAnswerMustBeForThisAppAndAnAcceptedEnvironment() async throws {
        let client = try await client()
        defer { server.stop() }
        let other = Expectation(bundleID: "com.example.other", environments: [.production, .sandbox])
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: other) } == .bundleMismatch)
        let productionOnly = Expectation(bundleID: "com.example.game", environments: [.production])
        #expect(await code { try await client.verify(receiptData: receipt(), sharedSecret: "s3cret", expecting: productionOnly) } == .environmentNotAllowed)
    }
}
