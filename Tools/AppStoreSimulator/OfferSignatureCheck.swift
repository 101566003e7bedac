import Crypto
import Foundation

/// What StoreKit checks of an offer signature an app's server made, before it applies the offer:
/// signed by the In-App Purchase key the `kid` (or `keyIdentifier`) names, for this app, for the
/// feature asked (`aud`), recent, with a nonce it has not seen. The simulator's stand-in for the
/// device side.
package struct OfferSignatureCheck: Sendable {
    package var bundleID: String
    package var keyID: String
    package var publicKey: P256.Signing.PublicKey
    /// How old a signature StoreKit still takes (Apple: it must be recent; a day is generous).
    package var maximumAge: TimeInterval = 86_400

    package init(bundleID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
        self.bundleID = bundleID
        self.keyID = keyID
        self.publicKey = publicKey
    }

    package struct Refused: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// The claims of a StoreKit 2 offer JWS for `audience` (promotional-offer,
    /// introductory-offer-eligibility), or why StoreKit would refuse it.
    package func claims(of jws: String, audience: String, now: Date = Date()) throws -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]), let claimsData = Self.base64URL(parts[1]),
            let signature = Self.base64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else {
            throw Refused(description: "not a compact JWS")
        }
        guard header["alg"] as? String == "ES256" else { throw Refused(description: "alg is not ES256") }
        guard header["kid"] as? String == keyID else { throw Refused(description: "kid names another key") }
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else {
            throw Refused(description: "the signature does not match the key")
        }
        guard claims["aud"] as? String == audience else { throw Refused(description: "aud is not \(audience)") }
        guard claims["bid"] as? String == bundleID else { throw Refused(description: "bid is not \(bundleID)") }
        guard let iat = (claims["iat"] as? NSNumber)?.doubleValue, abs(now.timeIntervalSince1970 - iat) <= maximumAge else {
            throw Refused(description: "iat is missing or not recent")
        }
        guard (claims["nonce"] as? String).flatMap(UUID.init(uuidString:)) != nil else { throw Refused(description: "nonce is not a UUID") }
        guard claims["productId"] is String, claims["iss"] is String else { throw Refused(description: "productId or iss missing") }
        return claims
    }

    /// A legacy SKPaymentDiscount signature over Apple's U+2063-separated message, or why not.
    package func checkLegacy(
        productID: String, offerID: String, applicationUsername: String, nonce: String, timestamp: Int64,
        signature: String, keyIdentifier: String, now: Date = Date()
    ) throws {
        guard keyIdentifier == keyID else { throw Refused(description: "keyIdentifier names another key") }
        guard abs(now.timeIntervalSince1970 - Double(timestamp) / 1000) <= maximumAge else {
            throw Refused(description: "timestamp not recent")
        }
        let message = [
            bundleID, keyIdentifier, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(), String(timestamp),
        ]
        .joined(separator: "\u{2063}")
        guard let der = Data(base64Encoded: signature), let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: der),
            publicKey.isValidSignature(ecdsa, for: Data(message.utf8))
        else {
            throw Refused(description: "the signature does not match the message and key")
        }
    }

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
