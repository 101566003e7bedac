import Foundation
import LedgerCore

/// Checks the `Authorization: Bearer` OIDC token Pub/Sub attaches to an authenticated push, as
/// Google's own validators do: RS256 by a key of Google's named in `kid`, `aud` the audience set
/// on the push subscription, `iss` Google's, `email` the subscription's service account with
/// `email_verified`, not expired, not issued in the future. Every refusal says which check failed
/// (the server answers 401); none quotes the token.
package struct PubSubPushVerifier: Sendable {
    /// Google's documented issuers, with and without scheme.
    package static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]

    /// What the app's push subscription is configured with.
    package struct Expectation: Sendable {
        /// The audience set on the subscription (Pub/Sub's default: the push endpoint URL).
        package var audience: String
        /// The service account Pub/Sub signs the pushes as.
        package var serviceAccountEmail: String

        package init(audience: String, serviceAccountEmail: String) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
        }
    }

    /// The checked token's identity.
    package struct Identity: Sendable, Equatable {
        package var email: String
        package var subject: String?
        package var issuedAt: Date
        package var expires: Date
    }

    let keys: GoogleKeySet
    let expectation: Expectation
    /// Clock skew allowed on `exp` and `iat`.
    let leeway: TimeInterval
    let now: @Sendable () -> Date

    package init(
        keys: GoogleKeySet, expecting expectation: Expectation, leeway: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.keys = keys
        self.expectation = expectation
        self.leeway = leeway
        self.now = now
    }

    /// Verifies the `Authorization` header's value.
    package func verify(authorization: String?) async throws(LedgerError) -> Identity {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else {
            throw Self.refusal("the push carries no Authorization: Bearer token; enable authentication on the push subscription")
        }
        guard let jwt = CompactJWT(authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)) else {
            throw Self.refusal("the push's bearer token is not a JWT")
        }
        let alg = jwt.header["alg"] as? String
        guard alg == "RS256" else {
            throw LedgerError(
                .unsupportedAlgorithm, "the push's token is signed with \(alg.map { "'\($0.prefix(10))'" } ?? "no algorithm"), not RS256",
                kind: .unauthenticated)
        }
        guard let kid = jwt.header["kid"] as? String, !kid.isEmpty else { throw Self.refusal("the push's token names no key (kid)") }
        guard let key = await keys.key(kid) else { throw Self.refusal("the push's token is signed by a key Google does not publish") }
        guard RS256.isValid(signature: jwt.signature, of: jwt.signingInput, by: key) else {
            throw LedgerError(.invalidSignature, "the push's token signature does not verify with Google's key", kind: .unauthenticated)
        }
        return try check(jwt)
    }

    private func check(_ jwt: CompactJWT) throws(LedgerError) -> Identity {
        let audiences = (jwt.claims["aud"] as? String).map { [$0] } ?? (jwt.claims["aud"] as? [String]) ?? []
        guard audiences.contains(expectation.audience) else {
            throw Self.refusal("the push's token is for another audience than this endpoint's")
        }
        guard let issuer = jwt.claims["iss"] as? String, Self.issuers.contains(issuer) else {
            throw Self.refusal("the push's token was not issued by Google (iss)")
        }
        guard let email = jwt.claims["email"] as? String, email == expectation.serviceAccountEmail else {
            throw Self.refusal("the push's token is for another service account than the subscription's")
        }
        let verified = (jwt.claims["email_verified"] as? Bool) ?? ((jwt.claims["email_verified"] as? String) == "true")
        guard verified else { throw Self.refusal("the push's token has an unverified email") }
        let time = now().timeIntervalSince1970
        guard let expires = jwt.seconds("exp") else { throw Self.refusal("the push's token has no expiry (exp)") }
        guard expires + leeway > time else { throw Self.refusal("the push's token expired") }
        guard let issued = jwt.seconds("iat") else { throw Self.refusal("the push's token has no issue time (iat)") }
        guard issued - leeway <= time else { throw Self.refusal("the push's token was issued in the future") }
        return Identity(
            email: email, subject: jwt.claims["sub"] as? String, issuedAt: Date(timeIntervalSince1970: issued),
            expires: Date(timeIntervalSince1970: expires))
    }

    static func refusal(_ reason: String) -> LedgerError { LedgerError(.invalidPushToken, reason) }
}
