import Foundation
import LedgerCore
import LedgerFormats

/// An App Store Server Notification V2 whose signature, and every JWS nested in its body, were
/// verified for one app.
package struct VerifiedNotificationV2: Sendable {
    package var notification: AppleNotification
    package var transaction: DecodedTransaction?
    package var renewal: DecodedRenewal?
    /// The app's own purchase an `appData` body carries (RESCIND_CONSENT).
    package var appTransaction: DecodedAppTransaction?
}

extension SignedDataVerifier {
    /// Verifies a V2 body (`{"signedPayload": "<JWS>"}`) and the JWS nested in whichever body it
    /// carries: `data` (a transaction and its renewal info), `appData` (the app's own purchase),
    /// `summary` and `externalPurchaseToken` (nothing signed inside). A type or body Apple adds
    /// later is verified the same way and kept as it is.
    package func verifyNotification(body: Data, expecting expectation: Expectation) async throws -> VerifiedNotificationV2 {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let signedPayload = object["signedPayload"] as? String
        else {
            throw LedgerError(.malformed, "a V2 notification is a JSON object with a signedPayload string")
        }
        let verified = try await verify(signedPayload, as: .notification, expecting: expectation)
        guard let fields = SignedFields(verified.tree), let type = fields.text("notificationType") else {
            throw LedgerError(.malformed, "the notification payload has no notificationType")
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
        var appTransaction: DecodedAppTransaction?
        if let signed = fields.members["appData"].flatMap(SignedFields.init)?.text("signedAppTransactionInfo") {
            appTransaction = try await verifyAppTransaction(signed, expecting: expectation)
        }
        let notification = AppleNotification(
            version: "2", notificationType: type, subtype: fields.text("subtype"),
            notificationUUID: fields.text("notificationUUID"), environment: verified.environment,
            originalTransactionID: transaction?.facts.originalTransactionID ?? renewal?.facts.originalTransactionID,
            signedDate: verified.signedDate, appTransactionID: appTransaction?.appTransactionID,
            summary: fields.members["summary"].flatMap(SignedFields.init).flatMap(Self.summary),
            externalPurchaseToken: fields.members["externalPurchaseToken"].flatMap(SignedFields.init).flatMap(Self.externalPurchaseToken))
        return VerifiedNotificationV2(
            notification: notification, transaction: transaction, renewal: renewal, appTransaction: appTransaction)
    }

    /// A RENEWAL_EXTENSION summary: what a mass extension achieved. Nil without its request id.
    static func summary(_ fields: SignedFields) -> ExtensionSummary? {
        guard let request = fields.string("requestIdentifier") else { return nil }
        var storefronts: [String] = []
        if case .array(let codes)? = fields.members["storefrontCountryCodes"] {
            storefronts = codes.compactMap { if case .string(let code) = $0 { code } else { nil } }
        }
        return ExtensionSummary(
            requestIdentifier: request, productID: fields.string("productId"), storefrontCountryCodes: storefronts,
            succeededCount: fields.int64("succeededCount"), failedCount: fields.int64("failedCount"))
    }

    static func externalPurchaseToken(_ fields: SignedFields) -> ExternalPurchaseToken? {
        guard let id = fields.string("externalPurchaseId") else { return nil }
        return ExternalPurchaseToken(externalPurchaseID: id, tokenCreationDate: fields.date("tokenCreationDate"))
    }
}
