import Crypto
import Foundation
import LedgerCore

/// A legacy (V1) App Store Server Notification, authenticated by the app's shared secret.
package struct VerifiedNotificationV1: Sendable {
    package var notification: AppleNotification
    package var environment: AppleEnvironment
    /// The `unified_receipt`, shaped like a verifyReceipt answer (absent in the oldest ones).
    package var receipt: ReceiptResponse?
    /// Apple's own time for what the notification states: the change's date when it names one,
    /// else when it arrived (V1 bodies are not signed and carry no signing date).
    package var statedAt: Date

    /// Legacy notification types this ledger knows are V1 (V2 bodies carry `signedPayload`).
    package static func looksLikeV1(_ object: [String: Any]) -> Bool { object["notification_type"] != nil }

    /// Checks the password in constant time, then the environment and app; parses the rest.
    package init(body: Data, sharedSecret: String?, expecting expectation: Expectation, receivedAt: Date) throws {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            throw LedgerError(.malformed, "the notification is not a JSON object")
        }
        let fields = LegacyFields(object)
        guard let type = fields.string("notification_type") else {
            throw LedgerError(.malformed, "a V1 notification names its notification_type")
        }
        guard let sharedSecret else {
            throw LedgerError(.sharedSecretMissing, "V1 notifications need the app's shared secret, and none is configured")
        }
        guard Self.sameSecret(fields.string("password") ?? "", sharedSecret) else {
            throw LedgerError(.sharedSecretMismatch, "the notification's password is not this app's shared secret")
        }
        guard let environment = fields.string("environment").flatMap(AppleEnvironment.init(legacy:)) else {
            throw LedgerError(.malformed, "environment must be PROD or Sandbox")
        }
        guard expectation.environments.contains(environment) else {
            throw LedgerError(.environmentNotAllowed, "\(environment.rawValue) notifications are not accepted for this app")
        }
        var receipt: ReceiptResponse?
        if var unified = LegacyFields(object["unified_receipt"])?.object {
            unified["status"] = unified["status"] ?? 0
            receipt = try ReceiptResponse(LegacyFields(unified))
        }
        let bundleID = fields.string("bid") ?? receipt?.bundleID
        if let bundleID, bundleID != expectation.bundleID {
            throw LedgerError(.bundleMismatch, "the notification is for \(bundleID), not \(expectation.bundleID)")
        }
        self.environment = environment
        self.receipt = receipt
        self.statedAt = fields.date("cancellation_date") ?? fields.date("auto_renew_status_change_date") ?? receivedAt
        let original = fields.string("original_transaction_id") ?? receipt?.latestReceiptInfo.last?.originalTransactionID
        self.notification = AppleNotification(
            version: "1", notificationType: type, environment: environment,
            originalTransactionID: original, signedDate: nil)
    }

    /// Equal-length digests compared in constant time: neither content nor length leaks.
    static func sameSecret(_ given: String, _ expected: String) -> Bool {
        SHA256.hash(data: Data(given.utf8)) == SHA256.hash(data: Data(expected.utf8))
    }
}
