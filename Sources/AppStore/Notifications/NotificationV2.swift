import Foundation
import LedgerCore

/// An App Store Server Notification V2 whose signature, and whose nested signed transaction and
/// renewal info, were verified for one app.
package struct VerifiedNotificationV2: Sendable {
    package var notification: AppleNotification
    package var transaction: DecodedTransaction?
    package var renewal: DecodedRenewal?
}

extension SignedDataVerifier {
    /// Verifies a V2 body (`{"signedPayload": "<JWS>"}`) and the JWS nested in its `data`.
    package func verifyNotification(body: Data, expecting expectation: Expectation) async throws -> VerifiedNotificationV2 {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let signedPayload = object["signedPayload"] as? String else {
            throw AppStoreError(.malformed, "a V2 notification is a JSON object with a signedPayload string")
        }
        let verified = try await verify(signedPayload, as: .notification, expecting: expectation)
        guard let fields = SignedFields(verified.tree), let type = fields.text("notificationType") else {
            throw AppStoreError(.malformed, "the notification payload has no notificationType")
        }
        let data = fields.members["data"].flatMap(SignedFields.init)
        var transaction: DecodedTransaction?
        if let signed = data?.text("signedTransactionInfo") {
            let inner = try await verify(signed, as: .transaction, expecting: expectation)
            transaction = try DecodedTransaction(inner.tree, environment: inner.environment, signedDate: inner.signedDate)
        }
        var renewal: DecodedRenewal?
        if let signed = data?.text("signedRenewalInfo") {
            let inner = try await verify(signed, as: .renewalInfo, expecting: expectation)
            renewal = try DecodedRenewal(inner.tree, environment: inner.environment, signedDate: inner.signedDate)
        }
        let notification = AppleNotification(
            version: "2", notificationType: type, subtype: fields.text("subtype"),
            notificationUUID: fields.text("notificationUUID"), environment: verified.environment,
            originalTransactionID: transaction?.facts.originalTransactionID ?? renewal?.facts.originalTransactionID,
            signedDate: verified.signedDate)
        return VerifiedNotificationV2(notification: notification, transaction: transaction, renewal: renewal)
    }
}
