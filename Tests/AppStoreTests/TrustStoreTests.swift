import AppStore
import Foundation
import Testing

@Suite(.enabled(if: AppleVectorTests.available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
struct TrustStoreTests {
    static let roots = AppleVectorTests.fixtures.appendingPathComponent("../roots").standardizedFileURL

    @Test func applesRootIsRecognisedByItsFingerprintAndTestRootsAreFlagged() throws {
        let apple = Self.roots.appendingPathComponent("AppleRootCA-G3.cer").path
        let testDER = AppleVectorTests.fixtures.appendingPathComponent("certs/testCA.der").path
        let testPEM = AppleVectorTests.fixtures.appendingPathComponent("certs-with-keys/testCA.pem").path
        let store = try TrustStore.load(paths: "\(apple), \(testDER),\(testPEM)")
        #expect(store.roots.map(\.isAppleRootCAG3) == [true, false, false])
        #expect(store.roots[0].fingerprint == TrustStore.appleRootCAG3Fingerprint)
        #expect(store.roots[1].fingerprint == store.roots[2].fingerprint, "DER and PEM of one certificate are one root")
        #expect(store.hasNonAppleRoot)
        #expect(store.summary[0].hasPrefix("trusting Apple Root CA - G3"))
        #expect(store.summary[1].contains("NOT Apple's"))
        #expect(try !TrustStore.load(paths: apple).hasNonAppleRoot)
    }

    /// Apple Inc. Root (legacy receipts) is listed beside G3 and recognised as Apple's too.
    @Test func appleIncRootIsRecognisedForLegacyReceipts() throws {
        let store = try TrustStore.load(
            paths: ["AppleRootCA-G3.cer", "AppleIncRootCertificate.cer"]
                .map { Self.roots.appendingPathComponent($0).path }.joined(separator: ","))
        #expect(store.roots.map(\.isAppleIncRoot) == [false, true])
        #expect(store.roots[1].fingerprint == TrustStore.appleIncRootFingerprint)
        #expect(store.summary[1].hasPrefix("trusting Apple Inc. Root for legacy receipts"))
        #expect(!store.hasNonAppleRoot)
    }

    @Test func aTrustStoreFromConfigurationVerifiesWhatItsRootsSigned() async throws {
        let store = try TrustStore.load(paths: AppleVectorTests.fixtures.appendingPathComponent("certs/testCA.der").path)
        _ = try await store.verifier().verify(
            AppleVectorTests.file("mock_signed_data/transactionInfo"), as: .transaction, expecting: AppleVectorTests.sandbox)
    }

    @Test func badConfigurationIsAClearError() throws {
        #expect(throws: TrustStore.LoadError.self) { try TrustStore.load(paths: " , ") }
        #expect(throws: TrustStore.LoadError.self) { try TrustStore.load(paths: "/nonexistent/root.cer") }
        let notACertificate = AppleVectorTests.fixtures.appendingPathComponent("certs-with-keys/testCA.key").path
        #expect(throws: TrustStore.LoadError.self) { try TrustStore.load(paths: notACertificate) }
    }
}
