import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import _CryptoExtras

/// Cloud Pub/Sub's push as Play's notifications arrive: the DeveloperNotification as base64 in
/// the envelope the fixtures show (both id spellings), with an OIDC token signed RS256 by the
/// simulator's Google key (its `kid` in the header, its public half in `jwks()`). Tokens can be
/// forged in each way a verifier must refuse.
package final class PubSubPusher: Sendable {
    /// How a token departs from a genuine one.
    package enum Forgery: Sendable, Equatable {
        case none
        /// Signed by a key Google never published, under the real `kid`.
        case wrongKey
        /// A `kid` Google does not publish.
        case unknownKeyID
        case audience(String)
        case issuer(String)
        case email(String)
        case unverifiedEmail
        case expired
        case issuedInFuture
        /// `alg: none`, no signature.
        case algorithmNone
        /// HS256 with the public key's bytes as the secret (the classic confusion attack).
        case hs256
    }

    private struct Key: Sendable {
        var id: String
        var key: _RSA.Signing.PrivateKey
    }

    private let keys: Mutex<[Key]>
    private let stranger: _RSA.Signing.PrivateKey

    package init() throws {
        keys = Mutex([Key(id: Self.keyID(), key: try _RSA.Signing.PrivateKey(keySize: .bits2048))])
        stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    static func keyID() -> String { (0..<40).map { _ in String("0123456789abcdef".randomElement()!) }.joined() }

    /// Google's key rotation: a new key signs from now on; the old stays published.
    package func rotate() throws {
        let key = Key(id: Self.keyID(), key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        keys.withLock { $0.insert(key, at: 0) }
    }

    package var currentKeyID: String { keys.withLock { $0[0].id } }

    /// The JWK Set served at `/oauth2/v3/certs`.
    package func jwks() -> [String: Any] {
        let published = keys.withLock { $0 }
        return [
            "keys": published.compactMap { key -> [String: Any]? in
                guard let primitives = try? key.key.publicKey.getKeyPrimitives() else { return nil }
                return [
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": key.id, "n": SimulatorJWT.encode(primitives.modulus),
                    "e": SimulatorJWT.encode(primitives.publicExponent),
                ]
            }
        ]
    }

    /// An OIDC token as Pub/Sub attaches it for `audience` and the subscription's `email`.
    package func token(audience: String, email: String, forgery: Forgery = .none, now: Date = Date()) throws -> String {
        let current = keys.withLock { $0[0] }
        let iat = Int64(now.timeIntervalSince1970) + (forgery == .issuedInFuture ? 600 : forgery == .expired ? -7200 : 0)
        var claims: [String: Any] = [
            "aud": audience, "azp": "113774264463038321964", "email": email, "email_verified": true, "exp": iat + 3600, "iat": iat,
            "iss": "https://accounts.google.com", "sub": "113774264463038321964",
        ]
        var header: [String: Any] = ["alg": "RS256", "kid": current.id, "typ": "JWT"]
        var key = current.key
        switch forgery {
        case .none, .expired, .issuedInFuture: break
        case .wrongKey: key = stranger
        case .unknownKeyID: header["kid"] = Self.keyID()
        case .audience(let other): claims["aud"] = other
        case .issuer(let other): claims["iss"] = other
        case .email(let other): claims["email"] = other
        case .unverifiedEmail: claims["email_verified"] = false
        case .algorithmNone:
            header["alg"] = "none"
            return try SimulatorJWT.encode(JSONSerialization.data(withJSONObject: header)) + "."
                + SimulatorJWT.encode(JSONSerialization.data(withJSONObject: claims)) + "."
        case .hs256:
            header["alg"] = "HS256"
            let input =
                try SimulatorJWT.encode(JSONSerialization.data(withJSONObject: header)) + "."
                + SimulatorJWT.encode(JSONSerialization.data(withJSONObject: claims))
            let secret = SymmetricKey(data: current.key.publicKey.derRepresentation)
            return input + "." + SimulatorJWT.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: secret)))
        }
        return try SimulatorJWT.sign(header: header, claims: claims, key: key)
    }

    /// A DeveloperNotification: `kind` is its one member (`subscriptionNotification`, …).
    package static func notification(package packageName: String, kind: String, _ body: [String: Any], at: Date = Date()) -> [String: Any] {
        ["version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(at.timeIntervalSince1970 * 1000)), kind: body]
    }

    package static func subscriptionNotification(package packageName: String, type: Int, token: String) -> [String: Any] {
        notification(
            package: packageName, kind: "subscriptionNotification",
            ["version": "1.0", "notificationType": type, "purchaseToken": token])
    }

    /// The push body Pub/Sub POSTs: base64 data, id and time in both spellings.
    package static func pushBody(
        _ notification: [String: Any], messageID: String,
        subscription: String = "projects/example-ledger-test/subscriptions/play-rtdn-push",
        publishTime: Date = Date()
    ) throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: notification, options: .sortedKeys).base64EncodedString()
        let time = GoogleTime.text(publishTime)
        let envelope: [String: Any] = [
            "message": ["data": data, "messageId": messageID, "message_id": messageID, "publishTime": time, "publish_time": time],
            "subscription": subscription,
        ]
        return try JSONSerialization.data(withJSONObject: envelope, options: .sortedKeys)
    }

    /// POSTs a push to `url` with a token for `audience` and `email`; the status answered.
    package func send(_ body: Data, to url: String, audience: String, email: String, forgery: Forgery = .none) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer " + (try token(audience: audience, email: email, forgery: forgery)))
        request.body = .bytes(ByteBuffer(bytes: body))
        // Pub/Sub waits up to its ack deadline; here a bound for a hang, long enough for a slow machine.
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return Int(response.status.code)
    }
}
