import AppStore
import Crypto
import Foundation
import LedgerCore
import Testing

/// Every body a V2 notification can carry, driven by Apple's own model files: each model payload
/// is signed with Apple's test leaf (its nested `signed…Info` placeholders replaced by Apple's
/// model transaction, renewal info and app transaction, signed the same way), then verified and
/// decoded as the ledger would, for its app and against another app.
@Suite(.enabled(if: AppleVectorTests.available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
struct NotificationBodyTests {
    /// A model file as a JSON object.
    static func model(_ name: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(AppleVectorTests.file("models/\(name)").utf8)) as! [String: Any]
    }

    /// `payload` signed with Apple's test leaf, chained to Apple's test root.
    static func sign(_ payload: [String: Any]) throws -> String {
        let chain = try ["testLeaf.pem", "testIntermediate.pem", "testCA.pem"].map {
            Data(try MintedEvidenceTests.der($0)).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": chain])
        let input = header.base64URL + "." + (try JSONSerialization.data(withJSONObject: payload)).base64URL
        let key = try P256.Signing.PrivateKey(pemRepresentation: MintedEvidenceTests.pem("testLeaf.key"))
        return input + "." + (try key.signature(for: Data(input.utf8))).rawRepresentation.base64URL
    }

    /// A model notification with its placeholders signed: the nested payloads take the body's app
    /// and environment (Apple's model files each use other sample ids).
    static func body(_ name: String, edit: (inout [String: Any]) -> Void = { _ in }) throws -> Data {
        var payload = try model(name)
        for key in ["data", "summary", "externalPurchaseToken", "appData"] {
            guard var scope = payload[key] as? [String: Any] else { continue }
            let app: [String: Any] = ["bundleId": scope["bundleId"]!, "appAppleId": scope["appAppleId"]!]
            let environment = scope["environment"] as? String ?? "Sandbox"
            if scope["signedTransactionInfo"] != nil {
                scope["signedTransactionInfo"] = try sign(
                    try model("signedTransaction.json").merging(app) { $1 }.merging(["environment": environment]) { $1 })
            }
            if scope["signedRenewalInfo"] != nil {
                scope["signedRenewalInfo"] = try sign(try model("signedRenewalInfo.json").merging(["environment": environment]) { $1 })
            }
            if scope["signedAppTransactionInfo"] != nil {
                scope["signedAppTransactionInfo"] = try sign(
                    try model("appTransaction.json").merging(app) { $1 }.merging(["receiptType": environment]) { $1 })
            }
            payload[key] = scope
        }
        edit(&payload)
        return try JSONSerialization.data(withJSONObject: ["signedPayload": try sign(payload)])
    }

    /// Each model notification, the app it is for, and what must come out of it.
    struct Shape: Sendable {
        var file: String
        var expectation: AppStore.Expectation
        var check: @Sendable (VerifiedNotificationV2) -> Bool
        init(_ file: String, _ expectation: AppStore.Expectation, _ check: @escaping @Sendable (VerifiedNotificationV2) -> Bool) {
            self.file = file
            self.expectation = expectation
            self.check = check
        }
    }

    static let shapes: [Shape] = [
        Shape(
            "signedNotification.json", AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234),
            { verified in
                let facts = verified.transaction?.facts
                return verified.notification.notificationType == "SUBSCRIBED" && facts?.appTransactionID == "71134"
                    && facts?.offerDiscountType == "PAY_AS_YOU_GO" && facts?.offerPeriod == "P1Y" && facts?.billingPlanType == "MONTHLY"
                    && facts?.commitment
                        == Commitment(
                            billingPeriodNumber: 3, totalBillingPeriods: 12,
                            expiresDate: Date(timeIntervalSince1970: 1_698_150_000), price: 119_880)
                    && verified.renewal?.facts.renewalBillingPlanType == "MONTHLY" && verified.renewal?.facts.offerType == 2
            }),
        Shape(
            "signedConsumptionRequestNotification.json",
            AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234),
            { verified in
                verified.notification.notificationType == "CONSUMPTION_REQUEST"
                    && verified.transaction?.facts.originalTransactionID == "12345"
            }),
        Shape(
            "signedSummaryNotification.json",
            AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234),
            { verified in
                verified.notification.summary
                    == ExtensionSummary(
                        requestIdentifier: "efb27071-45a4-4aca-9854-2a1e9146f265", productID: "com.example.product",
                        storefrontCountryCodes: ["CAN", "USA", "MEX"], succeededCount: 5, failedCount: 2)
                    && verified.notification.subtype == "SUMMARY" && verified.transaction == nil
            }),
        Shape(
            "signedExternalPurchaseTokenNotification.json",
            AppStore.Expectation(bundleID: "com.example", environments: [.production], appAppleID: 55555),
            { verified in
                verified.notification.environment == .production
                    && verified.notification.externalPurchaseToken
                        == ExternalPurchaseToken(
                            externalPurchaseID: "b2158121-7af9-49d4-9561-1f588205523e",
                            tokenCreationDate: Date(timeIntervalSince1970: 1_698_148_950))
            }),
        Shape(
            "signedExternalPurchaseTokenSandboxNotification.json",
            AppStore.Expectation(bundleID: "com.example", environments: [.sandbox], appAppleID: 55555),
            { verified in
                verified.notification.environment == .sandbox
                    && verified.notification.externalPurchaseToken?.externalPurchaseID.hasPrefix("SANDBOX_") == true
            }),
        Shape(
            "signedRescindConsentNotification.json",
            AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234),
            { verified in
                verified.notification.appTransactionID == "71134" && verified.appTransaction?.originalApplicationVersion == "1.1.2"
                    && EvidenceEvents.events(for: verified).contains(
                        .consentRescinded(
                            ConsentRescission(
                                appTransactionID: "71134", environment: .localTesting,
                                rescindedAt: Date(timeIntervalSince1970: 1_698_148_900),
                                notificationUUID: "002e14d5-51f5-4503-b5a8-c3a1af68eb20")))
            }),
    ]

    @Test(arguments: shapes.indices)
    func everyModelBodyVerifiesForItsAppAndIsRefusedForAnother(_ index: Int) async throws {
        let shape = Self.shapes[index]
        let (file, expectation, check) = (shape.file, shape.expectation, shape.check)
        let verifier = try AppleVectorTests.verifier()
        let verified = try await verifier.verifyNotification(body: Self.body(file), expecting: expectation)
        #expect(check(verified), "\(file): \(verified.notification)")
        #expect(
            EvidenceEvents.events(for: verified).first == .appleNotificationReceived(verified.notification),
            "the notification itself is always kept")

        var other = expectation
        other.bundleID = "com.example.other"
        #expect(await code { try await verifier.verifyNotification(body: Self.body(file), expecting: other) } == .bundleMismatch, "\(file)")
        var otherApp = expectation
        otherApp.appAppleID = 1
        #expect(await code { try await verifier.verifyNotification(body: Self.body(file), expecting: otherApp) } == .appMismatch, "\(file)")
    }

    @Test func aBodyInTwoShapesAtOnceIsRefused() async throws {
        let body = try Self.body("signedSummaryNotification.json") { payload in
            payload["externalPurchaseToken"] = ["externalPurchaseId": "x", "bundleId": "com.example", "appAppleId": 41234]
        }
        let expectation = AppStore.Expectation(bundleID: "com.example", environments: [.localTesting, .production], appAppleID: 41234)
        #expect(await code { try await AppleVectorTests.verifier().verifyNotification(body: body, expecting: expectation) } == .malformed)
    }

    @Test func aTypeAndBodyAppleAddsLaterAreCheckedForTheAppAndKept() async throws {
        let expectation = AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234)
        let body = try Self.body("signedSummaryNotification.json") { payload in
            payload["summary"] = nil
            payload["notificationType"] = "SOMETHING_NEW_IN_2027"
            payload["subtype"] = "FIRST_KIND"
            payload["newKindOfBody"] = ["bundleId": "com.example", "appAppleId": 41234, "environment": "LocalTesting", "field": [1, 2]]
        }
        let verified = try await AppleVectorTests.verifier().verifyNotification(body: body, expecting: expectation)
        #expect(verified.notification.notificationType == "SOMETHING_NEW_IN_2027" && verified.notification.subtype == "FIRST_KIND")
        #expect(EvidenceEvents.events(for: verified) == [.appleNotificationReceived(verified.notification)])
        var other = expectation
        other.bundleID = "com.example.other"
        #expect(await code { try await AppleVectorTests.verifier().verifyNotification(body: body, expecting: other) } == .bundleMismatch)
    }

    @Test func aRescissionWhoseAppTransactionIsForAnotherAppIsRefused() async throws {
        var payload = try Self.model("signedRescindConsentNotification.json")
        var appData = payload["appData"] as! [String: Any]
        appData["signedAppTransactionInfo"] = try Self.sign(
            try Self.model("appTransaction.json")
                .merging(["bundleId": "com.example.other", "appAppleId": 41234, "receiptType": "LocalTesting"]) { $1 })
        payload["appData"] = appData
        let body = try JSONSerialization.data(withJSONObject: ["signedPayload": try Self.sign(payload)])
        let expectation = AppStore.Expectation(bundleID: "com.example", environments: [.localTesting], appAppleID: 41234)
        #expect(
            await code { try await AppleVectorTests.verifier().verifyNotification(body: body, expecting: expectation) } == .bundleMismatch)
    }

    func code(_ body: () async throws -> Any) async -> LedgerError.Code? {
        do { _ = try await body(); return nil } catch let error as LedgerError { return error.code } catch { return nil }
    }
}
