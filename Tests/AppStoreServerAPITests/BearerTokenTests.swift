import Crypto
import Foundation
import Testing

@testable import AppStoreServerAPI

/// The bearer JWT Apple checks: its header, its claims, its signature, and its reuse.
@Suite struct BearerTokenTests {
    static let key = P256.Signing.PrivateKey()
    static let credentials = try! ServerAPICredentials(
        issuerID: "57246542-96FE-1A63-E053-0824D011072A", keyID: "2X9R4HXF34",
        privateKeyPEM: key.pemRepresentation, bundleID: "com.example.game")

    static func parts(_ token: String) throws -> (header: [String: Any], claims: [String: Any], input: String, signature: Data) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(pieces.count == 3)
        func decode(_ text: String) throws -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return try #require(Data(base64Encoded: base64))
        }
        let header = try #require(try JSONSerialization.jsonObject(with: decode(pieces[0])) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: decode(pieces[1])) as? [String: Any])
        return (header, claims, pieces[0] + "." + pieces[1], try decode(pieces[2]))
    }

    @Test func theTokenCarriesApplesHeaderAndClaimsAndVerifiesWithTheKey() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try BearerTokens().token(for: Self.credentials, now: now)
        let (header, claims, input, signature) = try Self.parts(token)
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "2X9R4HXF34" && header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example.game")
        let issued = try #require(claims["iat"] as? Int), expires = try #require(claims["exp"] as? Int)
        #expect(issued == 1_800_000_000)
        #expect(expires > issued && expires - issued <= 3600, "Apple refuses tokens valid for more than an hour")
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(Self.key.publicKey.isValidSignature(ecdsa, for: Data(input.utf8)))
    }

    @Test func aTokenIsReusedUntilCloseToExpiryThenRenewed() throws {
        let tokens = BearerTokens(lifetime: 1800, renewalMargin: 300)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try tokens.token(for: Self.credentials, now: start)
        #expect(try tokens.token(for: Self.credentials, now: start.addingTimeInterval(1400)) == first)
        let renewed = try tokens.token(for: Self.credentials, now: start.addingTimeInterval(1600))
        #expect(renewed != first)
        #expect(try Self.parts(renewed).claims["iat"] as? Int == 1_800_001_600)
        tokens.forget(Self.credentials)
        #expect(try tokens.token(for: Self.credentials, now: start.addingTimeInterval(1601)) != renewed, "a refused token is not reused")
    }

    @Test func credentialsAreCheckedWhenGivenAndNeverDescribeTheKey() throws {
        #expect(throws: ServerAPICredentials.Invalid.issuerID) {
            try ServerAPICredentials(issuerID: "team", keyID: "K1", privateKeyPEM: Self.key.pemRepresentation, bundleID: "b")
        }
        #expect(throws: ServerAPICredentials.Invalid.keyID) {
            try ServerAPICredentials(issuerID: UUID().uuidString, keyID: "K 1", privateKeyPEM: Self.key.pemRepresentation, bundleID: "b")
        }
        #expect(throws: ServerAPICredentials.Invalid.privateKey) {
            try ServerAPICredentials(
                issuerID: UUID().uuidString, keyID: "K1", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----",
                bundleID: "b")
        }
        let described = "\(Self.credentials)"
        #expect(!described.contains("PRIVATE") && described.contains("2X9R4HXF34"))
    }
}
