import AppStore
import AppStoreSimulator
import Foundation
import LedgerCore
import Testing
import X509

/// The verifier on the simulator's own chain: what Apple's vectors prove, proven again on data
/// that exists in every clone, plus the V2 notification path and the rejections.
struct SimulatorEvidenceTests {
    static let authority = try! TestCertificateAuthority()
    static let app = SimulatedApp(authority: authority, bundleID: "com.example.game", appAppleID: 42, environment: "Sandbox")
    static let verifier = SignedDataVerifier(roots: [authority.root])
    static let expectation = Expectation(bundleID: "com.example.game", environments: [.sandbox], appAppleID: 42)
    static let purchase = SimulatedTransaction(
        transactionID: "2001", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
        expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))

    func code(_ body: () async throws -> Any) async -> LedgerError.Code? {
        do { _ = try await body(); return nil } catch let error as LedgerError { return error.code } catch { return nil }
    }

    @Test func aSignedTransactionVerifiesAndBecomesAPurchase() async throws {
        let decoded = try await Self.verifier.verifyTransaction(Self.app.signedTransaction(Self.purchase), expecting: Self.expectation)
        #expect(decoded.facts.transactionID == "2001" && decoded.facts.price == 9_990 && decoded.facts.currency == "USD")
        guard case .purchased = EvidenceEvents.events(for: decoded).first else { Issue.record("not a purchase"); return }
    }

    /// The signing date picks the instant the chain is checked at, before the signature is: a
    /// date no certificate can hold (found by fuzzing: `1.6E4007`, infinite as a Double, made the
    /// certificate library trap and took the server down) is refused as malformed.
    @Test(arguments: [1.6e307, -1, 253_402_300_800_000])
    func aSigningDateNoCertificateCanHoldIsRefusedNotATrap(milliseconds: Double) async throws {
        for field in ["signedDate", "receiptCreationDate"] {
            let signed = try Self.authority.sign([
                "environment": "Sandbox", "bundleId": "com.example.game", field: milliseconds, "receiptType": "Sandbox",
            ])
            #expect(await code { try await Self.verifier.verifyTransaction(signed, expecting: Self.expectation) } == .malformed)
            #expect(await code { try await Self.verifier.verifyAppTransaction(signed, expecting: Self.expectation) } == .malformed)
        }
        // The input the fuzzer found: Apple's header and chain, a payload whose date is 1.67E4010.
        let infinite = try Self.authority.sign(["environment": "Sandbox", "bundleId": "com.example.game"])
        let payload = Data(#"{"environment":"Sandbox","signedDate":16729561E4000}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let parts = infinite.split(separator: ".")
        #expect(
            await code { try await Self.verifier.verifyTransaction("\(parts[0]).\(payload).\(parts[2])", expecting: Self.expectation) }
                == .malformed)
    }

    @Test func aV2NotificationVerifiesWithItsNestedEvidence() async throws {
        let refund = Self.purchase.revoked(at: Date())
        let body = try Self.app.notificationV2(
            "REFUND", transaction: refund,
            renewal: SimulatedRenewal(originalTransactionID: "2001", productID: "pro.monthly", autoRenewStatus: false))
        let verified = try await Self.verifier.verifyNotification(body: body, expecting: Self.expectation)
        #expect(verified.notification.notificationType == "REFUND")
        #expect(verified.notification.originalTransactionID == "2001")
        let events = EvidenceEvents.events(for: verified)
        #expect(events.map(\.typeName) == ["AppleNotificationReceived", "Purchased", "Refunded", "AutoRenewChanged"])
    }

    @Test func chainsWithoutMarkersOrFromAnotherRootAreUntrusted() async throws {
        let unmarked = SimulatedApp(authority: try TestCertificateAuthority(leafMarker: false), bundleID: "com.example.game")
        let verifier = SignedDataVerifier(roots: [unmarked.authority.root])
        #expect(
            await code {
                try await verifier.verify(unmarked.signedTransaction(Self.purchase), as: .transaction, expecting: Self.expectation)
            }
                == .untrustedChain)
        let stranger = SimulatedApp(authority: try TestCertificateAuthority(), bundleID: "com.example.game")
        #expect(
            await code {
                try await Self.verifier.verify(stranger.signedTransaction(Self.purchase), as: .transaction, expecting: Self.expectation)
            }
                == .untrustedChain)
    }

    @Test func tamperedTruncatedOversizedAndWrongAlgorithmAreRefused() async throws {
        let jws = try Self.app.signedTransaction(Self.purchase)
        let parts = jws.split(separator: ".").map(String.init)
        var payload = Data(base64URL: parts[1])!
        payload = Data(String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "2001", with: "2002").utf8)
        let tampered = parts[0] + "." + payload.base64URL + "." + parts[2]
        #expect(await code { try await Self.verifier.verify(tampered, as: .transaction, expecting: Self.expectation) } == .invalidSignature)
        #expect(
            await code { try await Self.verifier.verify(String(jws.dropLast(10)), as: .transaction, expecting: Self.expectation) } != nil)
        #expect(
            await code { try await Self.verifier.verify(parts[0] + "." + parts[1], as: .transaction, expecting: Self.expectation) }
                == .malformed)
        let huge = String(repeating: "a", count: SignedDataVerifier.maximumSize + 1)
        #expect(await code { try await Self.verifier.verify(huge, as: .transaction, expecting: Self.expectation) } == .malformed)
        let es384 = try Self.authority.sign(["bundleId": "com.example.game", "environment": "Sandbox"], alg: "ES384")
        #expect(
            await code { try await Self.verifier.verify(es384, as: .transaction, expecting: Self.expectation) } == .unsupportedAlgorithm)
        #expect(
            await code {
                try await Self.verifier.verifyNotification(body: Data("{\"signedPayload\": 5}".utf8), expecting: Self.expectation)
            } == .malformed)
    }

    @Test func productionNotificationsNeedTheAppsAppleID() async throws {
        var production = Self.app
        production.environment = "Production"
        let body = try production.notificationV2("TEST")
        let withoutID = Expectation(bundleID: "com.example.game", environments: [.production])
        #expect(await code { try await Self.verifier.verifyNotification(body: body, expecting: withoutID) } == .appMismatch)
        let withID = Expectation(bundleID: "com.example.game", environments: [.production], appAppleID: 42)
        #expect(try await Self.verifier.verifyNotification(body: body, expecting: withID).notification.notificationType == "TEST")
    }
}
