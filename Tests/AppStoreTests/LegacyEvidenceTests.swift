import AppStore
import Foundation
import LedgerCore
import Testing

/// Real verifyReceipt answers and V1 notifications from ../shared/fixtures/apple/legacy.
enum LegacyFixtures {
    static let folder = AppleVectorTests.fixtures.deletingLastPathComponent().appendingPathComponent("legacy")
    static let available = FileManager.default.fileExists(atPath: folder.appendingPathComponent("verify-receipt/response.json").path)
}

@Suite(.enabled(if: LegacyFixtures.available, "needs ../shared/fixtures/apple/legacy (absent in a clone elsewhere)"))
struct LegacyEvidenceTests {
    static func data(_ path: String) throws -> Data { try Data(contentsOf: LegacyFixtures.folder.appendingPathComponent(path)) }

    @Test(arguments: [
        "response.json", "cancellation_response.json", "inAppPurchaseResponse.json", "bad_response.json",
        "inAppPurchaseInvalidReceiptResponse.json", "status-21006-expired.json",
    ])
    func everyVerifyReceiptSampleDecodes(name: String) throws {
        let response = try ReceiptResponse(json: Self.data("verify-receipt/\(name)"))
        let expected: [String: ReceiptStatus] = [
            "bad_response.json": ReceiptStatus(code: 21003), "inAppPurchaseInvalidReceiptResponse.json": ReceiptStatus(code: 21002),
        ]
        #expect(ReceiptStatus(code: response.status) == (expected[name] ?? .valid))
        if ReceiptStatus(code: response.status) == .valid {
            #expect(!response.transactions.isEmpty, "a valid answer names its transactions")
        }
    }

    @Test func datesComeFromTheMillisecondFieldsAndStringsBecomeValues() throws {
        let response = try ReceiptResponse(json: Self.data("verify-receipt/response.json"))
        #expect(response.environment == .sandbox)
        #expect(response.bundleID == "com.example.app")
        #expect(response.requestDate == Date(timeIntervalSince1970: 1_466_184_881.174))
        let line = try #require(response.inApp.first)
        #expect(line.transactionID == "1000000218147651")
        #expect(line.purchaseDate == Date(timeIntervalSince1970: 1_466_127_148))
        #expect(line.expiresDate == Date(timeIntervalSince1970: 1_466_127_448))
        #expect(line.quantity == 1 && !line.isTrialPeriod)
        #expect(response.latestReceiptInfo.first?.isTrialPeriod == true)
        #expect(!response.pendingRenewalInfo.isEmpty)
    }

    @Test func cancellationsBecomeRefunds() throws {
        let response = try ReceiptResponse(json: Self.data("verify-receipt/cancellation_response.json"))
        let events = EvidenceEvents.events(for: response, environment: .production, statedAt: Date())
        #expect(events.contains { if case .refunded = $0 { true } else { false } })
    }

    @Test func iOS6StyleExpiredReceiptsKeepTheirTransactionAndRenewalState() throws {
        let response = try ReceiptResponse(json: Self.data("verify-receipt/status-21006-expired.json"))
        #expect(response.bundleID == "com.myapp")
        #expect(response.transactions.map(\.transactionID).contains("250003338696952"))
        #expect(response.pendingRenewalInfo.first?.willAutoRenew == false)
    }

    static let notifications = [
        "aporat-did-renew.json", "cancel.json", "did_change_renewal_pref.json", "initial_buy.json",
        "interactive_renewal.json", "laravel-did-change-renewal-status.json", "renewal.json",
        "renewal_with_unified_receipt.json",
    ]

    @Test(arguments: notifications)
    func everyV1NotificationIsAuthenticatedByItsPasswordAndDecodes(name: String) throws {
        let body = try Self.data("notifications-v1/\(name)")
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let password = try #require(object["password"] as? String)
        let bundle =
            (object["bid"] as? String)
            ?? (((object["unified_receipt"] as? [String: Any])?["receipt"] as? [String: Any])?["bundle_id"] as? String)
        let expectation = Expectation(bundleID: bundle ?? "any.app", environments: [.production, .sandbox])
        let verified = try VerifiedNotificationV1(body: body, sharedSecret: password, expecting: expectation, receivedAt: Date())
        #expect(verified.notification.notificationType == object["notification_type"] as? String)
        #expect(verified.environment == (object["environment"] as? String == "PROD" ? .production : .sandbox))
        #expect(EvidenceEvents.events(for: verified).count >= 1)
        #expect(throws: LedgerError.self) {
            try VerifiedNotificationV1(body: body, sharedSecret: password + "x", expecting: expectation, receivedAt: Date())
        }
    }

    @Test func aV1NotificationForAnotherAppOrEnvironmentIsRefused() throws {
        let body = try Self.data("notifications-v1/aporat-did-renew.json")
        func code(_ expectation: AppStore.Expectation) -> LedgerError.Code? {
            do {
                _ = try VerifiedNotificationV1(body: body, sharedSecret: "dummy_shared_secret", expecting: expectation, receivedAt: Date());
                return nil
            } catch let error as LedgerError { return error.code } catch { return nil }
        }
        #expect(code(Expectation(bundleID: "other.app", environments: [.production])) == .bundleMismatch)
        #expect(code(Expectation(bundleID: "my.app", environments: [.sandbox])) == .environmentNotAllowed)
        #expect(code(Expectation(bundleID: "my.app", environments: [.production])) == nil)
    }
}
