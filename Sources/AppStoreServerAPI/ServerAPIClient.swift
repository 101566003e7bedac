import AppStore
import AsyncHTTPClient
import Foundation
import LedgerCore
import LedgerTracing
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// What happened on one call to the App Store Server API, for metrics.
package enum ServerAPIOutcome: String, Sendable, CaseIterable {
    case ok, retried, rateLimited = "rate_limited", unauthorized, notFound = "not_found", refused, unavailable
}

/// Apple's App Store Server API over HTTPS: every request signed with the app's bearer token,
/// retried by `RetryPlan`, and answered with the body or a typed `LedgerError`. It returns
/// Apple's signed items as they came: the caller verifies each like any other JWS.
///
/// Nothing here logs a token, a key or a query parameter (revision and pagination tokens).
package struct AppStoreServerAPIClient: Sendable {
    package let configuration: ServerAPIConfiguration
    let http: HTTPClient
    let tokens: BearerTokens
    let logger: Logger
    let observe: @Sendable (AppleCall) -> Void
    /// What the budget is measured on and the waits between attempts sleep on.
    let clock: PatienceClock
    /// Apple's pages are a few hundred KB at most; a larger answer is not Apple's.
    static let maximumAnswer = 16 * 1024 * 1024

    package init(
        configuration: ServerAPIConfiguration, http: HTTPClient = .apple, tokens: BearerTokens = BearerTokens(),
        logger: Logger, observe: @escaping @Sendable (AppleCall) -> Void = { _ in }, clock: PatienceClock = .continuous
    ) {
        self.configuration = configuration
        self.http = http
        self.tokens = tokens
        self.logger = logger
        self.observe = observe
        self.clock = clock
    }

    /// One request, retried as `RetryPlan` decides. `path` is Apple's path with its identifiers
    /// already checked (`segment`); `query` values are percent-encoded here.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: Data? = nil, contentType: String = "application/json",
        in environment: AppleEnvironment, as credentials: ServerAPICredentials, expecting expected: Set<Int> = [200]
    ) async throws -> Data {
        guard let base = configuration.baseURL(environment) else {
            throw LedgerError(.appleAPIRefused, "\(environment.rawValue) data cannot be asked of Apple's App Store Server API")
        }
        let queryText = query.isEmpty ? "" : "?" + query.map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
        var attempts = 0
        var status: Int?
        let endpoint = "\(method.rawValue) \(Self.endpoint(of: path))"
        return try await Spans.child("App Store Server API \(endpoint)", kind: .client) { span in
            defer {
                span?.attributes["apple.environment"] = environment.rawValue
                span?.attributes["apple.retries"] = attempts - 1
                span?.attributes["http.response.status_code"] = status
            }
            return try await send(
                method, base + path + queryText, endpoint: endpoint, path: path, body: body, contentType: contentType, as: credentials,
                expecting: expected, attempts: &attempts, status: &status)
        }
    }

    /// Apple's path with its identifiers as `{id}`: what a span may be named by.
    static func endpoint(of path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            let isVersion = segment.first == "v" && segment.dropFirst().allSatisfy(\.isNumber) && segment.count > 1
            return isVersion || segment.allSatisfy({ $0.isLetter || $0 == "-" }) ? String(segment) : "{id}"
        }.joined(separator: "/")
    }

    private func send(
        _ method: HTTPMethod, _ url: String, endpoint: String, path: String, body: Data?, contentType: String,
        as credentials: ServerAPICredentials, expecting expected: Set<Int>, attempts: inout Int, status lastStatus: inout Int?
    ) async throws -> Data {
        let plan = RetryPlan(configuration: configuration)
        let elapsed = clock.start()
        while true {
            attempts += 1
            var request = HTTPClientRequest(url: url)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer " + (try tokens.token(for: credentials)))
            request.headers.add(name: "Accept", value: "application/json")
            if let body {
                request.headers.add(name: "Content-Type", value: contentType)
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            let outcome: RetryPlan.Outcome
            var answer = Data()
            var answered: Int?
            func report(_ outcome: ServerAPIOutcome) { observe(AppleCall(endpoint: endpoint, status: answered, outcome: outcome.rawValue)) }
            do {
                let response = try await http.execute(request, timeout: Self.timeAmount(configuration.patience.requestTimeout))
                answer = Data(try await response.body.collect(upTo: Self.maximumAnswer).readableBytesView)
                let status = Int(response.status.code)
                (lastStatus, answered) = (status, status)
                if expected.contains(status) {
                    report(.ok)
                    return answer
                }
                outcome = .answered(
                    status: status, retryAfter: response.headers.first(name: "Retry-After"), errorCode: Self.errorCode(answer))
            } catch {
                logger.debug("App Store Server API call failed", metadata: ["apple.path": "\(path)", "error": "\(error)"])
                outcome = .transportFailed
            }
            switch plan.decide(after: outcome, attempts: attempts, elapsed: elapsed(), now: Date()) {
            case .retry(let wait):
                if case .answered(429, _, _) = outcome { report(.rateLimited) } else { report(.retried) }
                logger.debug(
                    "retrying App Store Server API call",
                    metadata: [
                        "apple.path": "\(path)", "apple.wait_ms": "\(wait.milliseconds)",
                    ])
                try await clock.sleep(wait)
            case .stop:
                throw failure(outcome, answer: answer, credentials: credentials, attempts: attempts, report: report)
            }
        }
    }

    /// The error a final outcome stands for.
    private func failure(
        _ outcome: RetryPlan.Outcome, answer: Data, credentials: ServerAPICredentials, attempts: Int,
        report observe: (ServerAPIOutcome) -> Void
    ) -> LedgerError {
        guard case .answered(let status, let retryAfter, let code) = outcome else {
            observe(.unavailable)
            return LedgerError(.appleUnavailable, "Apple's App Store Server API did not answer after \(attempts) attempts")
        }
        // Apple answers some refusals with 403 (an extension it will not make): the errorCode says
        // which, and it is no verdict on the key.
        if let code = Self.errorCode(answer), let own = LedgerError.Code.byAppleErrorCode[code] {
            observe(.refused)
            return LedgerError(own, "Apple refused the request (errorCode \(code))" + (Self.errorMessage(answer).map { ": \($0)" } ?? ""))
        }
        switch status {
        case 401, 403:
            observe(.unauthorized)
            tokens.forget(credentials)
            return LedgerError(
                .appleAPIUnauthorized,
                "Apple refused the App Store Server API key \(credentials.keyID) of \(credentials.bundleID) (HTTP \(status)): "
                    + "check its issuer_id, key_id and private_key, and that it is an active In-App Purchase key of this app's team")
        case 429:
            observe(.unavailable)
            return LedgerError(
                .appleUnavailable,
                "Apple's rate limit was reached" + (retryAfter.map { " (Retry-After \($0))" } ?? "") + "; try again later")
        case 500...:
            observe(.unavailable)
            return LedgerError(.appleUnavailable, "Apple's App Store Server API answered HTTP \(status) after \(attempts) attempts")
        default:
            let apple = Self.errorMessage(answer).map { ": \($0)" } ?? ""
            if status == 404, code == 4_040_019 {
                observe(.notFound)
                return LedgerError(.appleAppTransactionNotFound, "Apple knows no purchase of the app itself for this customer" + apple)
            }
            if status == 404, [4_040_010, 4_040_005].contains(code) {
                observe(.notFound)
                return LedgerError(.appleTransactionNotFound, "Apple knows no such transaction" + apple)
            }
            observe(.refused)
            return LedgerError(
                .appleAPIRefused, "Apple refused the request (HTTP \(status)" + (code.map { ", errorCode \($0)" } ?? "") + ")" + apple)
        }
    }

    /// Apple's error bodies: `{"errorCode": 4040010, "errorMessage": "Transaction id not found."}`.
    static func errorCode(_ body: Data) -> Int? {
        (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["errorCode"] as? Int
    }

    /// Apple's own sentence, which names no secret; cut short in case a proxy sent a page.
    static func errorMessage(_ body: Data) -> String? {
        ((try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["errorMessage"] as? String).map { String($0.prefix(200)) }
    }

    /// An identifier placed in Apple's path: transaction ids are digits, order ids letters and
    /// digits, notification test tokens UUID-like; anything else is refused before it is sent.
    static func segment(_ value: String, _ what: String) throws -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard (1...128).contains(value.utf8.count), value.unicodeScalars.allSatisfy(allowed.contains) else {
            throw LedgerError(.malformed, "\(what) must be 1–128 letters, digits, '-', '_' or '.'")
        }
        return value
    }

    static func percentEncoded(_ value: String) -> String {
        value.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))
            ?? ""
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .milliseconds(duration.milliseconds)
    }
}
