import Crypto
import Foundation
import LedgerFormats

/// Signatures StoreKit asks of the app's server, made with the app's In-App Purchase key (the one
/// configured for the App Store Server API): a promotional offer and an introductory-offer
/// eligibility as compact JWS (StoreKit 2, iOS 18.4+), and a promotional offer as the legacy
/// SKPaymentDiscount signature.
///
/// The JWS header is the same for every signature of a key, so it is encoded once; the claims are
/// written by the ledger's JSON writer (Foundation's sorted-keys serializer went through ICU
/// collation), leaving the ES256 signature itself as nearly all of the cost.
package struct OfferSigner: Sendable {
    let credentials: ServerAPICredentials
    let headerSegment: String

    package init(credentials: ServerAPICredentials) {
        self.credentials = credentials
        var header = JSONWriter(reservingCapacity: 64)
        header.object { json in
            json.key("alg"); json.value("ES256")
            json.key("kid"); json.value(credentials.keyID)
            json.key("typ"); json.value("JWT")
        }
        headerSegment = Base64URL.encode(Data(header.bytes))
    }

    package var keyID: String { credentials.keyID }

    /// A promotional offer for StoreKit 2 (`aud` promotional-offer). `transactionID`: any of the
    /// customer's transactions, or their app transaction id — optional, recommended by Apple.
    package func promotionalOffer(
        productID: String, offerID: String, transactionID: String?, nonce: UUID = UUID(), at now: Date = Date()
    ) throws -> String {
        try sign(audience: "promotional-offer", nonce: nonce, at: now) { json in
            json.key("productId"); json.value(productID)
            json.key("offerIdentifier"); json.value(offerID)
            if let transactionID { json.key("transactionId"); json.value(transactionID) }
        }
    }

    /// Whether StoreKit may apply the product's introductory offer (`aud`
    /// introductory-offer-eligibility); `transactionID` is required by Apple.
    package func introductoryEligibility(
        productID: String, allow: Bool, transactionID: String, nonce: UUID = UUID(), at now: Date = Date()
    ) throws -> String {
        try sign(audience: "introductory-offer-eligibility", nonce: nonce, at: now) { json in
            json.key("productId"); json.value(productID)
            json.key("allowIntroductoryOffer"); json.value(allow)
            json.key("transactionId"); json.value(transactionID)
        }
    }

    /// The claims every signature carries (`iss`, `iat`, `aud`, `nonce`, `bid`), then the
    /// feature's, signed ES256 as a compact JWS.
    func sign(audience: String, nonce: UUID, at now: Date, _ feature: (inout JSONWriter) -> Void) throws -> String {
        var claims = JSONWriter(reservingCapacity: 256)
        claims.object { json in
            json.key("iss"); json.value(credentials.issuerID)
            json.key("iat"); json.value(Int64(now.timeIntervalSince1970))
            json.key("aud"); json.value(audience)
            json.key("nonce"); json.value(nonce.uuidString.lowercased())
            json.key("bid"); json.value(credentials.bundleID)
            feature(&json)
        }
        let input = headerSegment + "." + Base64URL.encode(Data(claims.bytes))
        let signature = try credentials.privateKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The legacy promotional offer signature (`SKPaymentDiscount`): ECDSA P-256 with SHA-256, DER,
    /// base64, over bundle id, key id, product id, offer id, application username and nonce (both
    /// lowercased) and the timestamp in milliseconds, joined by U+2063 INVISIBLE SEPARATOR.
    package func legacyPromotionalOffer(
        productID: String, offerID: String, applicationUsername: String, nonce: UUID = UUID(),
        at now: Date = Date()
    ) throws -> LegacyOfferSignature {
        let timestamp = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let lowercasedNonce = nonce.uuidString.lowercased()
        let message = Self.legacyMessage(
            bundleID: credentials.bundleID, keyID: credentials.keyID, productID: productID, offerID: offerID,
            applicationUsername: applicationUsername, nonce: lowercasedNonce, timestamp: timestamp)
        let signature = try credentials.privateKey.signature(for: Data(message.utf8))
        return LegacyOfferSignature(
            keyID: credentials.keyID, nonce: lowercasedNonce, timestamp: timestamp,
            signature: signature.derRepresentation.base64EncodedString(), applicationUsername: applicationUsername.lowercased())
    }

    /// What the legacy signature signs, exactly as StoreKit rebuilds it to check.
    package static func legacyMessage(
        bundleID: String, keyID: String, productID: String, offerID: String, applicationUsername: String,
        nonce: String, timestamp: Int64
    ) -> String {
        [bundleID, keyID, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(), String(timestamp)].joined(
            separator: "\u{2063}")
    }
}

/// What an app hands `SKPaymentDiscount(identifier:keyIdentifier:nonce:signature:timestamp:)`,
/// with the `applicationUsername` the payment must carry.
package struct LegacyOfferSignature: Sendable, Equatable {
    package var keyID: String
    package var nonce: String
    package var timestamp: Int64
    package var signature: String
    package var applicationUsername: String
}
