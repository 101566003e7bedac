import AsyncHTTPClient
import Foundation
import LedgerCore
import LedgerTracing
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// Where and how patiently to ask Apple's legacy `verifyReceipt`.
package struct VerifyReceiptConfiguration: Sendable {
    package static let appleProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    package static let appleSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

    package var productionURL: String
    package var sandboxURL: String
    /// Asks Apple to leave out old renewals of each subscription (smaller answers).
    package var excludeOldTransactions: Bool
    /// Attempts per URL for retryable failures, and how long to wait between them.
    package var patience: Patience

    package init(
        productionURL: String = Self.appleProductionURL, sandboxURL: String = Self.appleSandboxURL,
        excludeOldTransactions: Bool = false, patience: Patience = .verifyReceipt
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.excludeOldTransactions = excludeOldTransactions
        self.patience = patience
    }
}

extension Patience {
    /// How patiently `verifyReceipt` is asked: a claim waits on it, so four attempts within 15 s.
    package static let verifyReceipt = Patience(
        maxAttempts: 4, backoffBase: .milliseconds(200), backoffCap: .seconds(2), totalBudget: .seconds(15), requestTimeout: .seconds(10))
}

/// A receipt Apple accepted for the expected app, and where it was valid.
package struct VerifiedReceipt: Sendable {
    package var response: ReceiptResponse
    package var environment: AppleEnvironment
}

/// What happened on one call to Apple's verifyReceipt, for metrics.
package enum AppleCallOutcome: String, Sendable, CaseIterable {
    case valid, rejected, retried, unavailable, sandboxFallback = "sandbox_fallback", productionFallback = "production_fallback"
}

/// Apple's legacy `verifyReceipt`: production first, 21007 → sandbox (21008 → production),
/// bounded retries with backoff and jitter for Apple's transient failures, and a typed error for
/// everything else. The answer must be for the expected app and an accepted environment.
package struct VerifyReceiptClient: Sendable {
    package let configuration: VerifyReceiptConfiguration
    let http: HTTPClient
    let logger: Logger
    let observe: @Sendable (AppleCall) -> Void
    /// What the budget is measured on and the waits between attempts sleep on.
    let clock: PatienceClock
    /// Apple's answers stay well under this; anything larger is not a verifyReceipt answer.
    static let maximumAnswer = 16 * 1024 * 1024

    package init(
        configuration: VerifyReceiptConfiguration, http: HTTPClient = .apple, logger: Logger,
        observe: @escaping @Sendable (AppleCall) -> Void = { _ in }, clock: PatienceClock = .continuous
    ) {
        self.configuration = configuration
        self.http = http
        self.logger = logger
        self.observe = observe
        self.clock = clock
    }

    package func verify(receiptData: String, sharedSecret: String?, expecting expectation: Expectation) async throws -> VerifiedReceipt {
        try await Spans.child("verifyReceipt", kind: .client) { _ in
            try await verifyUntraced(receiptData: receiptData, sharedSecret: sharedSecret, expecting: expectation)
        }
    }

    private func verifyUntraced(
        receiptData: String, sharedSecret: String?, expecting expectation: Expectation
    ) async throws -> VerifiedReceipt {
        guard !receiptData.isEmpty, Data(base64Encoded: receiptData, options: .ignoreUnknownCharacters) != nil else {
            throw LedgerError(.malformed, "receipt_data is not base64")
        }
        var body: [String: Any] = ["receipt-data": receiptData, "exclude-old-transactions": configuration.excludeOldTransactions]
        if let sharedSecret { body["password"] = sharedSecret }
        let payload = try JSONSerialization.data(withJSONObject: body)
        return try await exchange(payload, expecting: expectation)
    }

    /// Production first, then wherever Apple sends the receipt, retrying what may pass.
    private func exchange(_ payload: Data, expecting expectation: Expectation) async throws -> VerifiedReceipt {
        var environment = AppleEnvironment.production
        var switched = false
        var retries = 0
        let elapsed = clock.start()
        while true {
            let url = environment == .production ? configuration.productionURL : configuration.sandboxURL
            let status: ReceiptStatus
            var response: ReceiptResponse?
            var answered: Int?
            let endpoint = environment == .production ? "POST production /verifyReceipt" : "POST sandbox /verifyReceipt"
            func report(_ outcome: AppleCallOutcome) { observe(AppleCall(endpoint: endpoint, status: answered, outcome: outcome.rawValue)) }
            do {
                let answer = try await post(payload, to: url, status: &answered)
                response = answer
                status = ReceiptStatus(code: answer.status, isRetryable: answer.isRetryable)
            } catch let error as LedgerError where error.code != .appleUnavailable {
                throw error
            } catch {
                logger.debug("verifyReceipt call failed", metadata: ["url": "\(url)", "error": "\(error)"])
                status = .temporarilyUnavailable
            }
            switch status {
            case .valid:
                report(.valid)
                return try accept(response!, from: environment, expecting: expectation)
            case .retryInSandbox where environment == .production && !switched:
                report(.sandboxFallback)
                (environment, switched) = (.sandbox, true)
            case .retryInProduction where environment == .sandbox && !switched:
                report(.productionFallback)
                (environment, switched) = (.production, true)
            case .retryInSandbox, .retryInProduction:
                report(.rejected)
                throw LedgerError(.receiptInvalid, "Apple sent the receipt back and forth between production and sandbox")
            case .temporarilyUnavailable:
                retries += 1
                let delay = configuration.patience.delay(beforeRetry: retries - 1)
                guard retries < configuration.patience.maxAttempts, elapsed() + delay < configuration.patience.totalBudget else {
                    report(.unavailable)
                    throw LedgerError(.appleUnavailable, "Apple's verifyReceipt did not answer usefully after \(retries) attempts")
                }
                report(.retried)
                try await clock.sleep(delay)
            case .rejected(let error):
                report(.rejected)
                throw error
            }
        }
    }

    /// Only Apple's own failures (transport, 5xx, garbage) are `appleUnavailable`, and so retried.
    /// `status` is Apple's HTTP status, once it answered.
    private func post(_ payload: Data, to url: String, status: inout Int?) async throws -> ReceiptResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: payload))
        let timeout = TimeAmount.milliseconds(configuration.patience.requestTimeout.milliseconds)
        let answer = try await http.execute(request, timeout: timeout)
        status = Int(answer.status.code)
        let body = try await answer.body.collect(upTo: Self.maximumAnswer)
        guard (200..<300).contains(answer.status.code) else {
            throw LedgerError(.appleUnavailable, "verifyReceipt answered HTTP \(answer.status.code)")
        }
        do {
            return try ReceiptResponse(json: Data(body.readableBytesView))
        } catch let error as LedgerError {
            throw LedgerError(.appleUnavailable, error.message)
        }
    }

    private func accept(
        _ response: ReceiptResponse, from asked: AppleEnvironment, expecting expectation: Expectation
    ) throws -> VerifiedReceipt {
        guard response.bundleID == expectation.bundleID else {
            throw LedgerError(.bundleMismatch, "the receipt is for \(response.bundleID ?? "no app"), not \(expectation.bundleID)")
        }
        let environment = response.environment ?? asked
        guard expectation.environments.contains(environment) else {
            throw LedgerError(.environmentNotAllowed, "\(environment.rawValue) receipts are not accepted for this app")
        }
        return VerifiedReceipt(response: response, environment: environment)
    }
}
