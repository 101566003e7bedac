import Crypto
import Foundation
import LedgerFormats
import Synchronization

/// The bearer JWTs the App Store Server API asks for: ES256 with the app's key,
/// header `kid`, claims `iss`, `iat`, `exp`, `aud` "appstoreconnect-v1" and `bid`.
///
/// Apple accepts a token for at most 60 minutes. One is made per key and reused until it has
/// less than `renewalMargin` left, so a reconciliation of thousands of requests signs a handful.
package final class BearerTokens: Sendable {
    package static let audience = "appstoreconnect-v1"
    /// Below Apple's 60-minute limit, so clock skew between us and Apple never makes it too long.
    let lifetime: TimeInterval
    let renewalMargin: TimeInterval
    private let tokens = Mutex<[String: (token: String, expires: Date)]>([:])

    package init(lifetime: TimeInterval = 30 * 60, renewalMargin: TimeInterval = 5 * 60) {
        precondition(lifetime <= 3600 && renewalMargin < lifetime)
        self.lifetime = lifetime
        self.renewalMargin = renewalMargin
    }

    /// A token for `credentials` valid for at least `renewalMargin` from `now`.
    package func token(for credentials: ServerAPICredentials, now: Date = Date()) throws -> String {
        let cacheKey = credentials.bundleID + "\u{0}" + credentials.issuerID + "\u{0}" + credentials.keyID
        if let cached = tokens.withLock({ $0[cacheKey] }), cached.expires.timeIntervalSince(now) > renewalMargin {
            return cached.token
        }
        let issued = Int64(now.timeIntervalSince1970)
        let expires = issued + Int64(lifetime)
        let token = try Self.sign(credentials, issuedAt: issued, expiresAt: expires)
        tokens.withLock { $0[cacheKey] = (token, Date(timeIntervalSince1970: TimeInterval(expires))) }
        return token
    }

    /// Forgets the token of a key Apple refused (401), so the next request signs a new one.
    package func forget(_ credentials: ServerAPICredentials) {
        tokens.withLock { _ = $0.removeValue(forKey: credentials.bundleID + "\u{0}" + credentials.issuerID + "\u{0}" + credentials.keyID) }
    }

    static func sign(_ credentials: ServerAPICredentials, issuedAt: Int64, expiresAt: Int64) throws -> String {
        let header: [String: Any] = ["alg": "ES256", "kid": credentials.keyID, "typ": "JWT"]
        let claims: [String: Any] = [
            "iss": credentials.issuerID, "iat": issuedAt, "exp": expiresAt,
            "aud": audience, "bid": credentials.bundleID,
        ]
        let input =
            try Base64URL.encode(JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Base64URL.encode(JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = try credentials.privateKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
