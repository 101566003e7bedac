import AppStore
import Crypto
import Foundation
import LedgerCore
import SwiftASN1
import Testing
import X509

/// JWS minted here with Apple's test intermediate and leaf keys: the chain rules that no mock
/// vector covers (marker OIDs, validity at signedDate, algorithm), each with a positive control.
@Suite(.enabled(if: AppleVectorTests.available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
struct MintedEvidenceTests {
    static func pem(_ name: String) throws -> String {
        try String(contentsOf: AppleVectorTests.fixtures.appendingPathComponent("certs-with-keys/\(name)"), encoding: .utf8)
    }

    static func der(_ name: String) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(try Certificate(pemEncoded: pem(name)))
        return serializer.serializedBytes
    }

    static func mint(
        leaf: String = "testLeaf.pem", intermediate: String = "testIntermediate.pem", alg: String = "ES256",
        signedDate: Date = Date(timeIntervalSince1970: 1_750_000_000), bundleID: String = "com.example"
    ) throws -> String {
        let chain = try [leaf, intermediate, "testCA.pem"].map { Data(try der($0)).base64EncodedString() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": chain])
        let payload = try JSONSerialization.data(withJSONObject: [
            "bundleId": bundleID, "environment": "Sandbox", "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000),
            "transactionId": "2000000999", "productId": "pro.monthly",
        ])
        let input = header.base64URL + "." + payload.base64URL
        let key = try P256.Signing.PrivateKey(pemRepresentation: pem("testLeaf.key"))
        return input + "." + (try key.signature(for: Data(input.utf8))).rawRepresentation.base64URL
    }

    static let sandbox = Expectation(bundleID: "com.example", environments: [.sandbox])

    @Test func aMintedTransactionVerifies() async throws {
        let verified = try await AppleVectorTests.verifier().verify(Self.mint(), as: .transaction, expecting: Self.sandbox)
        #expect(verified.signedDate == Date(timeIntervalSince1970: 1_750_000_000))
    }

    @Test func certificatesWithoutApplesMarkerOIDsAreRefused() async throws {
        let verifier = try AppleVectorTests.verifier()
        #expect(
            await AppleVectorTests.rejection {
                try await verifier.verify(Self.mint(leaf: "testInvalidOIDLeaf.pem"), as: .transaction, expecting: Self.sandbox)
            }
                == .untrustedChain)
        #expect(
            await AppleVectorTests.rejection {
                try await verifier.verify(
                    Self.mint(intermediate: "testInvalidOIDIntermediate.pem"), as: .transaction, expecting: Self.sandbox)
            } == .untrustedChain)
    }

    @Test func theChainMustBeValidAtSignedDateEvenWhenCached() async throws {
        let verifier = try AppleVectorTests.verifier()
        _ = try await verifier.verify(Self.mint(), as: .transaction, expecting: Self.sandbox) // the chain is now cached
        let afterExpiry = try Self.mint(signedDate: Date(timeIntervalSince1970: 2_300_000_000)) // 2042
        let beforeIssue = try Self.mint(signedDate: Date(timeIntervalSince1970: 1_600_000_000)) // 2020
        #expect(
            await AppleVectorTests.rejection { try await verifier.verify(afterExpiry, as: .transaction, expecting: Self.sandbox) }
                == .untrustedChain)
        #expect(
            await AppleVectorTests.rejection { try await verifier.verify(beforeIssue, as: .transaction, expecting: Self.sandbox) }
                == .untrustedChain)
        // A stored payload signed while the chain was valid keeps verifying, whatever today's date.
        _ = try await verifier.verify(
            Self.mint(signedDate: Date(timeIntervalSince1970: 1_700_000_000)), as: .transaction, expecting: Self.sandbox)
    }

    @Test(arguments: ["ES384", "none", "HS256", ""])
    func onlyES256IsAccepted(alg: String) async throws {
        let verifier = try AppleVectorTests.verifier()
        #expect(
            await AppleVectorTests.rejection { try await verifier.verify(Self.mint(alg: alg), as: .transaction, expecting: Self.sandbox) }
                == .unsupportedAlgorithm)
    }

    @Test func garbageNeverCrashesAndIsMalformed() async throws {
        let verifier = try AppleVectorTests.verifier()
        for junk in ["", ".", "..", "a.b.c", "!!!.###.$$$", "e30.e30.e30", String(repeating: ".", count: 10)] {
            #expect(
                await AppleVectorTests.rejection { try await verifier.verify(junk, as: .transaction, expecting: Self.sandbox) } != nil,
                "\(junk)")
        }
    }
}
