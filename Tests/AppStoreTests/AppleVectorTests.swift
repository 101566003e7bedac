import AppStore
import Crypto
import Foundation
import LedgerCore
import SwiftASN1
import Testing
import X509

/// Apple's own test vectors (../shared/fixtures/apple/app-store-server-library), with testCA as the
/// only root, validated at each payload's signedDate. Skipped, saying why, when the fixtures are absent.
@Suite struct AppleVectorTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/fixtures/apple/app-store-server-library").standardizedFileURL
    static let available = FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("certs/testCA.der").path)

    static func file(_ path: String) throws -> String {
        try String(contentsOf: fixtures.appendingPathComponent(path), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func verifier() throws -> SignedDataVerifier {
        let der = try Data(contentsOf: fixtures.appendingPathComponent("certs/testCA.der"))
        return SignedDataVerifier(roots: [try Certificate(derEncoded: Array(der))])
    }

    static let sandbox = Expectation(bundleID: "com.example", environments: [.sandbox], appAppleID: 1234)

    static func rejection(_ body: () async throws -> VerifiedPayload) async -> LedgerError.Code? {
        do {
            _ = try await body()
            return nil
        } catch let error as LedgerError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func transactionAndRenewalInfoVerifyForTheirApp() async throws {
        let verifier = try Self.verifier()
        let transaction = try await verifier.verify(
            Self.file("mock_signed_data/transactionInfo"), as: .transaction, expecting: Self.sandbox)
        #expect(transaction.environment == .sandbox)
        #expect(transaction.signedDate == Date(timeIntervalSince1970: 1_672_956_154))
        _ = try await verifier.verify(Self.file("mock_signed_data/renewalInfo"), as: .renewalInfo, expecting: Self.sandbox)
        let other = Expectation(bundleID: "com.example.x", environments: [.sandbox])
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/transactionInfo"), as: .transaction, expecting: other)
            }
                == .bundleMismatch)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func theTestNotificationVerifiesAndIsRefusedForProductionOrAnotherAppID() async throws {
        let verifier = try Self.verifier()
        let notification = try await verifier.verify(
            Self.file("mock_signed_data/testNotification"), as: .notification, expecting: Self.sandbox)
        let fields = try JSONSerialization.jsonObject(with: notification.payload) as? [String: Any]
        #expect(fields?["notificationType"] as? String == "TEST")
        #expect(fields?["notificationUUID"] as? String == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(notification.signedDate == Date(timeIntervalSince1970: 1_681_314_324))
        let production = Expectation(bundleID: "com.example", environments: [.production], appAppleID: 1234)
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/testNotification"), as: .notification, expecting: production)
            }
                == .environmentNotAllowed)
        let otherApp = Expectation(bundleID: "com.example", environments: [.sandbox], appAppleID: 1235)
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/testNotification"), as: .notification, expecting: otherApp)
            }
                == .appMismatch)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func aWrongBundleAndAMissingX5CAreRefused() async throws {
        let verifier = try Self.verifier()
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/wrongBundleId"), as: .notification, expecting: Self.sandbox)
            }
                == .bundleMismatch)
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/missingX5CHeaderClaim"), as: .notification, expecting: Self.sandbox)
            }
                == .missingCertificateChain)
        #expect(
            await Self.rejection {
                try await verifier.verify(Self.file("mock_signed_data/legacyTransaction"), as: .transaction, expecting: Self.sandbox)
            }
                == .malformed)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func xcodeStoreKitTestingDataIsRefusedUnlessTheAppAcceptsIt() async throws {
        // Xcode signs with one self-signed certificate: never a chain to a configured root.
        let verifier = try Self.verifier()
        let bundle = "com.example.naturelab.backyardbirds.example"
        for name in ["xcode-signed-transaction", "xcode-signed-renewal-info", "xcode-signed-app-transaction"] {
            let refused = Expectation(bundleID: bundle, environments: [.sandbox])
            #expect(
                await Self.rejection { try await verifier.verify(Self.file("xcode/\(name)"), as: .transaction, expecting: refused) }
                    == .missingCertificateChain, "\(name)")
            let withProduction = Expectation(bundleID: bundle, environments: [.production, .xcode])
            #expect(
                await Self.rejection { try await verifier.verify(Self.file("xcode/\(name)"), as: .transaction, expecting: withProduction) }
                    == .missingCertificateChain, "never beside Production: \(name)")
        }
        let xcode = Expectation(bundleID: bundle, environments: [.xcode])
        let transaction = try await verifier.verifyTransaction(Self.file("xcode/xcode-signed-transaction"), expecting: xcode)
        #expect(transaction.facts.environment == .xcode)
        _ = try await verifier.verify(Self.file("xcode/xcode-signed-renewal-info"), as: .renewalInfo, expecting: xcode)
        // Tampered Xcode data still fails its own signature.
        let parts = try Self.file("xcode/xcode-signed-transaction").split(separator: ".").map(String.init)
        var payload = try JSONSerialization.jsonObject(with: Data(base64URL: parts[1])!) as! [String: Any]
        payload["quantity"] = 99
        let tampered = parts[0] + "." + (try JSONSerialization.data(withJSONObject: payload)).base64URL + "." + parts[2]
        #expect(await Self.rejection { try await verifier.verify(tampered, as: .transaction, expecting: xcode) } == .invalidSignature)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func tamperedTruncatedAndWrongRootEvidenceIsRefused() async throws {
        let jws = try Self.file("mock_signed_data/transactionInfo")
        let verifier = try Self.verifier()
        let parts = jws.split(separator: ".").map(String.init)
        // The payload re-encoded with another bundle id keeps the signature of the original.
        var payload = try JSONSerialization.jsonObject(with: Data(base64URL: parts[1])!) as! [String: Any]
        payload["bundleId"] = "com.example"
        payload["environment"] = "Sandbox"
        payload["signedDate"] = 1_672_956_155_000
        let tampered = parts[0] + "." + (try JSONSerialization.data(withJSONObject: payload)).base64URL + "." + parts[2]
        #expect(
            await Self.rejection { try await verifier.verify(tampered, as: .transaction, expecting: Self.sandbox) } == .invalidSignature)
        #expect(
            await Self.rejection { try await verifier.verify(String(jws.dropLast(10)), as: .transaction, expecting: Self.sandbox) } != nil)
        #expect(
            await Self.rejection { try await verifier.verify(parts[0] + "." + parts[1], as: .transaction, expecting: Self.sandbox) }
                == .malformed)
        #expect(
            await Self.rejection {
                try await verifier.verify(String(repeating: "a", count: 70_000), as: .transaction, expecting: Self.sandbox)
            } == .malformed)
        // Only Apple's real root configured: the test chain is not trusted.
        let appleRoot = try Data(contentsOf: Self.fixtures.appendingPathComponent("../roots/AppleRootCA-G3.cer").standardizedFileURL)
        let appleOnly = SignedDataVerifier(roots: [try Certificate(derEncoded: Array(appleRoot))])
        #expect(await Self.rejection { try await appleOnly.verify(jws, as: .transaction, expecting: Self.sandbox) } == .untrustedChain)
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }

    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
    }
}
