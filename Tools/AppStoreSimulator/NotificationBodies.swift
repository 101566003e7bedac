import Foundation

/// The body a V2 notification carries, exactly one per notification, as Apple sends them.
package enum NotificationBody: Sendable {
    /// A transaction and its renewal info (most types), signed inside `data`.
    case data(transaction: SimulatedTransaction?, renewal: SimulatedRenewal?)
    /// RENEWAL_EXTENSION / SUMMARY: what a mass extension did.
    case summary(productID: String, requestIdentifier: String, storefronts: [String] = [], succeeded: Int, failed: Int)
    /// EXTERNAL_PURCHASE_TOKEN: a purchase made outside the App Store (sandbox ids start `SANDBOX_`).
    case externalPurchaseToken(id: String, created: Date)
    /// RESCIND_CONSENT: the app's own purchase, signed inside `appData`.
    case appData(SimulatedAppTransaction)
    /// A body Apple has not added yet: the app named in an object under `key` (what next year may bring).
    case future(key: String)
}

/// The app's own purchase on one Apple account (StoreKit's AppTransaction).
package struct SimulatedAppTransaction: Sendable {
    package var appTransactionID: String
    package var originalApplicationVersion: String
    package var applicationVersion: String
    package var originalPurchaseDate: Date
    package var originalPlatform = "iOS"
    package var preorderDate: Date?

    package init(
        appTransactionID: String, originalApplicationVersion: String = "1.0", applicationVersion: String = "2.1",
        originalPurchaseDate: Date
    ) {
        self.appTransactionID = appTransactionID
        self.originalApplicationVersion = originalApplicationVersion
        self.applicationVersion = applicationVersion
        self.originalPurchaseDate = originalPurchaseDate
    }

    /// Signed as of its receipt's creation, its environment named as `receiptType`.
    func payload(bundleID: String, appAppleID: Int64, environment: String, signedDate: Date) -> [String: Any] {
        var fields: [String: Any] = [
            "receiptType": environment, "appAppleId": appAppleID, "bundleId": bundleID, "applicationVersion": applicationVersion,
            "versionExternalIdentifier": 0, "receiptCreationDate": ms(signedDate), "originalPurchaseDate": ms(originalPurchaseDate),
            "originalApplicationVersion": originalApplicationVersion, "appTransactionId": appTransactionID,
            "originalPlatform": originalPlatform,
            "deviceVerification": Data("device".utf8).base64EncodedString(), "deviceVerificationNonce": UUID().uuidString.lowercased(),
        ]
        fields["preorderDate"] = preorderDate.map(ms)
        return fields
    }
}

extension SimulatedApp {
    package func signedAppTransaction(_ appTransaction: SimulatedAppTransaction, signedDate: Date = Date()) throws -> String {
        try authority.sign(
            appTransaction.payload(bundleID: bundleID, appAppleID: appAppleID, environment: environment, signedDate: signedDate))
    }

    /// A V2 notification body, `{"signedPayload": …}`, carrying `body` under Apple's key for it.
    package func notificationV2(
        _ type: String, subtype: String? = nil, body: NotificationBody, uuid: UUID = UUID(),
        signedDate: Date = Date()
    ) throws -> Data {
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid.uuidString.lowercased(),
            "version": "2.0", "signedDate": ms(signedDate),
        ]
        payload["subtype"] = subtype
        switch body {
        case .data(let transaction, let renewal):
            var data: [String: Any] = ["bundleId": bundleID, "appAppleId": appAppleID, "environment": environment, "bundleVersion": "1.0"]
            if let transaction {
                data["signedTransactionInfo"] = try signedTransaction(transaction, signedDate: signedDate)
                data["status"] = transaction.revocationDate == nil ? 1 : 5
            }
            if let renewal { data["signedRenewalInfo"] = try signedRenewal(renewal, signedDate: signedDate) }
            payload["data"] = data
        case .summary(let productID, let request, let storefronts, let succeeded, let failed):
            payload["summary"] =
                [
                    "environment": environment, "appAppleId": appAppleID, "bundleId": bundleID, "productId": productID,
                    "requestIdentifier": request, "storefrontCountryCodes": storefronts,
                    "succeededCount": succeeded, "failedCount": failed,
                ] as [String: Any]
        case .externalPurchaseToken(let id, let created):
            // No environment: Apple's libraries read it from the id.
            payload["externalPurchaseToken"] =
                [
                    "externalPurchaseId": id, "tokenCreationDate": ms(created),
                    "appAppleId": appAppleID, "bundleId": bundleID,
                ] as [String: Any]
        case .appData(let appTransaction):
            payload["appData"] =
                [
                    "appAppleId": appAppleID, "bundleId": bundleID, "environment": environment,
                    "signedAppTransactionInfo": try signedAppTransaction(appTransaction, signedDate: signedDate),
                ] as [String: Any]
        case .future(let key):
            payload[key] = ["appAppleId": appAppleID, "bundleId": bundleID, "environment": environment] as [String: Any]
        }
        return try JSONSerialization.data(withJSONObject: ["signedPayload": try authority.sign(payload)])
    }

    /// The body Apple sends with `type`: the transaction's where it has one, otherwise the body the
    /// type is documented with (a summary, an external token, the app's own purchase).
    package func documentedBody(
        for type: String, subtype: String?, transaction: SimulatedTransaction?, renewal: SimulatedRenewal?,
        appTransactionID: String = "704000000000001"
    ) -> NotificationBody {
        switch (type, subtype) {
        case ("RENEWAL_EXTENSION", "SUMMARY"?):
            .summary(
                productID: transaction?.productID ?? "pro.monthly", requestIdentifier: UUID().uuidString.lowercased(),
                storefronts: ["USA", "CAN"], succeeded: 12, failed: 1)
        case ("EXTERNAL_PURCHASE_TOKEN", _):
            .externalPurchaseToken(id: (environment == "Production" ? "" : "SANDBOX_") + UUID().uuidString.lowercased(), created: Date())
        case ("RESCIND_CONSENT", _):
            .appData(SimulatedAppTransaction(appTransactionID: appTransactionID, originalPurchaseDate: Date(timeIntervalSinceNow: -86_400)))
        default:
            .data(transaction: transaction, renewal: renewal)
        }
    }
}
