import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Finds the API key of a `/v1` request (`Authorization: Bearer <key>`). Routes then check the
/// scope and app they need with `context.authorize`. Keys are never logged.
///
/// Wrong keys are counted per client address; past the limit a guess is answered 429 without a
/// lookup, while a good key still works (`FailureThrottle.gate`).
struct AuthMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let keys: APIKeyStore
    let throttle: FailureThrottle
    let limiter: KeyRateLimiter
    let metrics: Metrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw LedgerError(.missingAPIKey, "send Authorization: Bearer <key>")
        }
        let secret = Self.bearerToken(header)
        switch await throttle.gate(secret, from: context.clientAddress(request, throttle), keys: keys) {
        case .open: break
        case .key(let key): return try await next(request, try authenticated(context, key))
        case .wait(let seconds):
            metrics.increment("ledger_auth_throttled_total", ["surface": "api"])
            throw LedgerError(
                .tooManyAttempts, "too many failed authentications from this address; try again in \(seconds) s", retryAfter: seconds)
        }
        guard let secret else {
            failed(context.clientAddress(request, throttle))
            throw LedgerError(.invalidAPIKey, "the Authorization header must be Bearer <key>")
        }
        let key: APIKey?
        do {
            key = try await keys.authenticate(secret)
        } catch {
            throw LedgerError(.databaseUnavailable, "the database is unavailable; try again shortly")
        }
        guard let key else {
            failed(context.clientAddress(request, throttle))
            throw LedgerError(.invalidAPIKey, "this key is unknown or revoked")
        }
        return try await next(request, try authenticated(context, key))
    }

    /// The context with its key, once the key is within its request limit, if it has one.
    private func authenticated(_ context: Context, _ key: APIKey) throws -> Context {
        if let wait = limiter.take(key) {
            metrics.increment("ledger_rate_limited_total", [:])
            let seconds = FailureThrottle.seconds(wait)
            throw LedgerError(
                .rateLimited,
                "this key may make \(key.rateLimit.map { String(format: "%g", $0) } ?? "?") requests a second; try again in \(seconds) s",
                retryAfter: seconds)
        }
        var context = context
        context.key = key
        return context
    }

    private func failed(_ address: String) {
        throttle.recordFailure(from: address)
        metrics.increment("ledger_auth_failures_total", ["surface": "api"])
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, spaces around the token ignored).
    /// Read on the UTF-8 bytes: every `/v1` request passes here, and Foundation's trimming and
    /// lower-casing showed in the user-state profile (dynamic casts, generic metadata).
    static func bearerToken(_ header: String) -> String? {
        let bytes = header.utf8
        guard bytes.count > 7, let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme = bytes[..<space]
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let rest = bytes[bytes.index(after: space)...]
        guard let first = rest.firstIndex(where: { $0 != UInt8(ascii: " ") }),
            let last = rest.lastIndex(where: { $0 != UInt8(ascii: " ") })
        else { return nil }
        return String(decoding: rest[first...last], as: UTF8.self)
    }
}
