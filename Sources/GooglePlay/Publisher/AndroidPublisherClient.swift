import AsyncHTTPClient
import Foundation
import LedgerCore
import Logging
import NIOCore
import NIOHTTP1

/// Google Play's Developer API (androidpublisher v3) over HTTPS: every request carries the
/// service account's access token; 429 and 5xx are retried by `GoogleRetryPlan` within the
/// budget; a 401 fetches a new token once (tokens are revoked early at times); anything else
/// final is a typed `LedgerError` naming the token's problem.
///
/// Nothing here logs a token (purchase, access or page), a key or a query parameter: log lines
/// and spans name the endpoint with its identifiers as `{…}`.
package struct AndroidPublisherClient: Sendable {
    package let configuration: GooglePlayConfiguration
    let http: HTTPClient
    let tokens: GoogleAccessTokens
    let logger: Logger
    let clock: PatienceClock
    let now: @Sendable () -> Date
    /// Told of every exchange with Google, each attempt: what `ledger_google_calls_total` counts.
    let observe: @Sendable (GoogleCall) -> Void
    /// Google's answers are small; a voided-purchases page of 1000 rows is about 300 KB.
    static let maximumAnswer = 16 * 1024 * 1024

    package init(
        configuration: GooglePlayConfiguration, tokens: GoogleAccessTokens, http: HTTPClient = .google, logger: Logger,
        clock: PatienceClock = .continuous, now: @escaping @Sendable () -> Date = { Date() },
        observe: @escaping @Sendable (GoogleCall) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.tokens = tokens
        self.http = http
        self.logger = logger
        self.clock = clock
        self.now = now
        self.observe = observe
    }

    /// A request about one app. `path` follows `applications/{packageName}/` as `segments`, each
    /// percent-encoded here; `action` is Google's custom verb (`acknowledge` → `:acknowledge`).
    /// `token` is the purchase concerned, for messages only. Returns the body of a 2xx answer.
    func send(
        _ method: HTTPMethod, package packageName: String, _ segments: [String], action: String? = nil,
        query: [(String, String)] = [], body: [String: Any]? = nil, token: String? = nil, endpoint: String
    ) async throws(LedgerError) -> Data {
        let encoded = ([packageName] + segments).map { $0.addingPercentEncoding(withAllowedCharacters: .googleUnreserved) ?? "" }
        var url = configuration.apiBase + "androidpublisher/v3/applications/" + encoded.joined(separator: "/")
        if let action { url += ":" + action }
        if !query.isEmpty { url += "?" + query.map { "\($0.0)=\(GoogleAccessTokens.formEncoded($0.1))" }.joined(separator: "&") }
        let payload: Data?
        do {
            payload = try body.map { try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys) }
        } catch {
            throw LedgerError(.internalError, "a request body for \(endpoint) could not be written", underlying: error)
        }
        let plan = GoogleRetryPlan(patience: configuration.patience)
        let elapsed = clock.start()
        var attempts = 0
        var refreshed = false
        while true {
            attempts += 1
            let accessToken = try await tokens.token()
            var request = HTTPClientRequest(url: url)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer " + accessToken)
            request.headers.add(name: "Accept", value: "application/json")
            if let payload {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: payload))
            } else if method == .POST {
                request.body = .bytes(ByteBuffer())
            }
            let outcome: GoogleRetryPlan.Outcome
            var answer = Data()
            do {
                let response = try await http.execute(request, timeout: .milliseconds(configuration.patience.requestTimeout.milliseconds))
                answer = Data(try await response.body.collect(upTo: Self.maximumAnswer).readableBytesView)
                let status = Int(response.status.code)
                if (200..<300).contains(status) {
                    observe(GoogleCall(endpoint: endpoint, status: status, outcome: .answered))
                    return answer
                }
                if status == 401, !refreshed {
                    observe(GoogleCall(endpoint: endpoint, status: status, outcome: .tokenRefreshed))
                    // An access token can be revoked before its expiry; one new token, then 401 is final.
                    refreshed = true
                    await tokens.invalidate(accessToken)
                    logger.debug("Google refused the access token; fetching a new one", metadata: ["google.endpoint": "\(endpoint)"])
                    attempts -= 1
                    continue
                }
                outcome = .answered(status: status, retryAfter: response.headers.first(name: "Retry-After"))
            } catch {
                logger.debug("Developer API call failed", metadata: ["google.endpoint": "\(endpoint)", "error": "\(type(of: error))"])
                outcome = .transportFailed
            }
            let decision = plan.decide(after: outcome, attempts: attempts, elapsed: elapsed(), now: now())
            observe(GoogleCall(endpoint: endpoint, outcome, decision))
            switch decision {
            case .retry(let wait):
                logger.debug(
                    "retrying Developer API call", metadata: ["google.endpoint": "\(endpoint)", "google.wait_ms": "\(wait.milliseconds)"])
                do { try await clock.sleep(wait) } catch { throw LedgerError(.googleUnavailable, "the call was cancelled", retryAfter: 1) }
            case .stop(let wait):
                throw failure(outcome, answer: answer, attempts: attempts, wait: wait, token: token)
            }
        }
    }

    private func failure(_ outcome: GoogleRetryPlan.Outcome, answer: Data, attempts: Int, wait: Duration, token: String?) -> LedgerError {
        let seconds = GoogleRetryPlan.seconds(wait)
        switch outcome {
        case .transportFailed:
            return GoogleRefusals.unavailable("no answer after \(attempts) attempts", retryAfter: seconds)
        case .answered(429, _):
            return GoogleRefusals.unavailable("its rate limit was reached", retryAfter: seconds)
        case .answered(let status, _) where status >= 500:
            return GoogleRefusals.unavailable("HTTP \(status) after \(attempts) attempts", retryAfter: seconds)
        case .answered(let status, _):
            return GoogleRefusals.refusal(status: status, envelope: GoogleErrorEnvelope.decode(answer), token: token)
        }
    }
}
