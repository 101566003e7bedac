import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import Foundation
import Testing

/// Offer signatures made with Apple's own test In-App Purchase key (../shared), checked the way
/// StoreKit checks them: with swift-crypto against the key's public half, claim by claim.
@Suite(.enabled(if: AppleModelTests.available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
struct OfferSignerTests {
    static func appleKey() throws -> (OfferSigner, P256.Signing.PublicKey) {
        let pem = try String(contentsOf: AppleModelTests.fixtures.appendingPathComponent("certs/testSigningKey.p8"), encoding: .utf8)
        let credentials = try ServerAPICredentials(
            issuerID: "68f1b4a5-0e3c-4c0f-8d6b-22b2b5a0cf12", keyID: "TESTKEY123", privateKeyPEM: pem,
            bundleID: "com.example")
        return (OfferSigner(credentials: credentials), try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey)
    }

    /// A JWS segment (0 header, 1 claims) as JSON.
    static func segment(_ jws: String, _ index: Int) throws -> [String: Any] {
        let part = jws.split(separator: ".")[index]
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return try JSONSerialization.jsonObject(with: Data(base64Encoded: base64)!) as! [String: Any]
    }

    @Test func aPromotionalOfferIsAJWSStoreKitAccepts() throws {
        let (signer, publicKey) = try Self.appleKey()
        let nonce = UUID()
        let now = Date()
        let jws = try signer.promotionalOffer(
            productID: "pro.monthly", offerID: "winback-50", transactionID: "2000000123", nonce: nonce, at: now)
        let check = OfferSignatureCheck(bundleID: "com.example", keyID: "TESTKEY123", publicKey: publicKey)
        let claims = try check.claims(of: jws, audience: "promotional-offer", now: now)
        #expect(Set(claims.keys) == ["iss", "iat", "aud", "nonce", "bid", "productId", "offerIdentifier", "transactionId"])
        #expect(claims["iss"] as? String == "68f1b4a5-0e3c-4c0f-8d6b-22b2b5a0cf12" && claims["offerIdentifier"] as? String == "winback-50")
        #expect(claims["nonce"] as? String == nonce.uuidString.lowercased() && (claims["iat"] as? Int) == Int(now.timeIntervalSince1970))
        #expect(try Self.segment(jws, 0) as NSDictionary == ["alg": "ES256", "kid": "TESTKEY123", "typ": "JWT"] as NSDictionary)
        // Without a transaction the claim is absent, not null.
        let bare = try signer.promotionalOffer(productID: "pro.monthly", offerID: "winback-50", transactionID: nil)
        #expect(try Self.segment(bare, 1)["transactionId"] == nil)
        // StoreKit refuses it for another feature, another app, another key, or tampered.
        #expect(throws: OfferSignatureCheck.Refused.self) {
            try check.claims(of: jws, audience: "introductory-offer-eligibility", now: now)
        }
        var otherApp = check
        otherApp.bundleID = "com.example.other"
        #expect(throws: OfferSignatureCheck.Refused.self) { try otherApp.claims(of: jws, audience: "promotional-offer", now: now) }
        let stranger = OfferSignatureCheck(bundleID: "com.example", keyID: "TESTKEY123", publicKey: P256.Signing.PrivateKey().publicKey)
        #expect(throws: OfferSignatureCheck.Refused.self) { try stranger.claims(of: jws, audience: "promotional-offer", now: now) }
        #expect(throws: OfferSignatureCheck.Refused.self) {
            try check.claims(of: jws, audience: "promotional-offer", now: now.addingTimeInterval(2 * 86_400))
        }
    }

    @Test func anIntroductoryEligibilitySaysYesOrNoForATransaction() throws {
        let (signer, publicKey) = try Self.appleKey()
        let check = OfferSignatureCheck(bundleID: "com.example", keyID: "TESTKEY123", publicKey: publicKey)
        for allow in [true, false] {
            let claims = try check.claims(
                of: signer.introductoryEligibility(productID: "pro.monthly", allow: allow, transactionID: "704"),
                audience: "introductory-offer-eligibility")
            #expect(claims["allowIntroductoryOffer"] as? Bool == allow && claims["transactionId"] as? String == "704")
        }
    }

    @Test func theLegacySignatureCoversApplesMessageExactly() throws {
        let (signer, publicKey) = try Self.appleKey()
        let nonce = UUID(uuidString: "D4A6E5F0-1B2C-4D3E-8F90-A1B2C3D4E5F6")!
        let at = Date(timeIntervalSince1970: 1_795_000_000.123)
        let legacy = try signer.legacyPromotionalOffer(
            productID: "pro.monthly", offerID: "winback-50",
            applicationUsername: "7E3FB20B-4CDB-47CC-936D-99D65F608138", nonce: nonce, at: at)
        #expect(
            legacy.keyID == "TESTKEY123" && legacy.timestamp == 1_795_000_000_123 && legacy.nonce == "d4a6e5f0-1b2c-4d3e-8f90-a1b2c3d4e5f6")
        #expect(legacy.applicationUsername == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        // Apple's message: bundle, key, product, offer, username and nonce lowercased, timestamp — joined by U+2063.
        let message =
            "com.example\u{2063}TESTKEY123\u{2063}pro.monthly\u{2063}winback-50\u{2063}7e3fb20b-4cdb-47cc-936d-99d65f608138"
            + "\u{2063}d4a6e5f0-1b2c-4d3e-8f90-a1b2c3d4e5f6\u{2063}1795000000123"
        let signature = try P256.Signing.ECDSASignature(derRepresentation: Data(base64Encoded: legacy.signature)!)
        #expect(publicKey.isValidSignature(signature, for: Data(message.utf8)))
        let check = OfferSignatureCheck(bundleID: "com.example", keyID: "TESTKEY123", publicKey: publicKey)
        try check.checkLegacy(
            productID: "pro.monthly", offerID: "winback-50", applicationUsername: legacy.applicationUsername, nonce: legacy.nonce,
            timestamp: legacy.timestamp, signature: legacy.signature, keyIdentifier: legacy.keyID, now: at)
        #expect(throws: OfferSignatureCheck.Refused.self) {
            try check.checkLegacy(
                productID: "pro.yearly", offerID: "winback-50", applicationUsername: legacy.applicationUsername, nonce: legacy.nonce,
                timestamp: legacy.timestamp, signature: legacy.signature, keyIdentifier: legacy.keyID, now: at)
        }
    }
}
