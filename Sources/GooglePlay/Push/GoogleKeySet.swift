import AsyncHTTPClient
import Foundation
import LedgerFormats
import Logging
import NIOCore
import NIOHTTP1
import _CryptoExtras

/// Google's OIDC signing keys (a JWK Set), by `kid`. Google rotates them every few weeks and
/// publishes the next before using it, so an unknown `kid` fetches the set again — but at most
/// once per `refetchInterval`: otherwise a forger inventing `kid`s would make every request a
/// fetch from Google. The set is also refreshed when older than `maximumAge`.
package actor GoogleKeySet {
    let url: String
    let http: HTTPClient
    let logger: Logger
    let refetchInterval: TimeInterval
    let maximumAge: TimeInterval
    let now: @Sendable () -> Date
    private var keys: [String: _RSA.Signing.PublicKey] = [:]
    private var lastFetch: Date?
    private var inFlight: Task<[String: _RSA.Signing.PublicKey], any Error>?
    /// How many times the set was fetched: tests see the rate limit at work.
    package private(set) var fetches = 0

    package init(
        url: String, http: HTTPClient = .google, logger: Logger, refetchInterval: TimeInterval = 60, maximumAge: TimeInterval = 6 * 3600,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.url = url
        self.http = http
        self.logger = logger
        self.refetchInterval = refetchInterval
        self.maximumAge = maximumAge
        self.now = now
    }

    /// The key named `kid`, fetching the set when it is unknown and the last fetch is not too recent.
    package func key(_ kid: String) async -> _RSA.Signing.PublicKey? {
        let age = lastFetch.map { now().timeIntervalSince($0) }
        let stale = age.map { $0 > maximumAge } ?? true
        if let key = keys[kid], !stale { return key }
        guard stale || (age ?? .infinity) >= refetchInterval else { return keys[kid] }
        await refresh()
        return keys[kid]
    }

    private func refresh() async {
        let task: Task<[String: _RSA.Signing.PublicKey], any Error>
        if let inFlight {
            task = inFlight
        } else {
            task = Task { [url, http] in try await Self.fetch(url, http: http) }
            inFlight = task
            fetches += 1
            lastFetch = now()
        }
        defer { inFlight = nil }
        do {
            keys = try await task.value
        } catch {
            // The keys known stay in use; the next unknown kid after the interval tries again.
            logger.warning("Google's signing keys could not be fetched", metadata: ["error": "\(error)"])
        }
    }

    private struct JWKSet: Decodable {
        var keys: [JWK]
        struct JWK: Decodable {
            var kty: String?
            var kid: String?
            var n: String?
            var e: String?
            var alg: String?
            var use: String?
        }
    }

    static func fetch(_ url: String, http: HTTPClient) async throws -> [String: _RSA.Signing.PublicKey] {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw KeySetError.status(Int(response.status.code)) }
        let set = try JSONDecoder().decode(JWKSet.self, from: Data(body.readableBytesView))
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for jwk in set.keys where jwk.kty == "RSA" && (jwk.use ?? "sig") == "sig" && (jwk.alg ?? "RS256") == "RS256" {
            guard let kid = jwk.kid, let n = jwk.n.flatMap({ Base64URL.decode($0) }),
                let e = jwk.e.flatMap({ Base64URL.decode($0) }),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = key
        }
        return keys
    }

    enum KeySetError: Error { case status(Int) }
}
