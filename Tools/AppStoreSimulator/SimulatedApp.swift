import Foundation

/// One app as the App Store sees it: signs its StoreKit 2 evidence and builds its notifications.
package struct SimulatedApp: Sendable {
    package let authority: TestCertificateAuthority
    package var bundleID: String
    package var appAppleID: Int64
    /// "Production" or "Sandbox".
    package var environment: String

    package init(authority: TestCertificateAuthority, bundleID: String, appAppleID: Int64 = 1_234_567_890, environment: String = "Sandbox")
    {
        self.authority = authority
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
    }

    package func signedTransaction(_ transaction: SimulatedTransaction, signedDate: Date = Date()) throws -> String {
        try authority.sign(transaction.payload(bundleID: bundleID, environment: environment, signedDate: signedDate))
    }

    package func signedRenewal(_ renewal: SimulatedRenewal, signedDate: Date = Date()) throws -> String {
        try authority.sign(renewal.payload(environment: environment, signedDate: signedDate))
    }

    /// A V2 notification body, `{"signedPayload": …}`, with the transaction and renewal nested in `data`.
    package func notificationV2(
        _ type: String, subtype: String? = nil, transaction: SimulatedTransaction? = nil,
        renewal: SimulatedRenewal? = nil, uuid: UUID = UUID(), signedDate: Date = Date()
    ) throws -> Data {
        try notificationV2(
            type, subtype: subtype, body: .data(transaction: transaction, renewal: renewal), uuid: uuid, signedDate: signedDate)
    }

    /// A verifyReceipt answer for these transactions (what `VerifyReceiptServer` returns).
    package func receiptAnswer(
        _ transactions: [SimulatedTransaction], renewals: [SimulatedRenewal] = [], status: Int = 0,
        requestDate: Date = Date()
    ) -> [String: Any] {
        [
            "status": status,
            "environment": environment,
            "receipt": [
                "bundle_id": bundleID, "application_version": "1",
                "receipt_type": environment == "Production" ? "Production" : "ProductionSandbox",
                "request_date_ms": String(ms(requestDate)), "request_date": SimulatedTransaction.legacyDate(requestDate),
                "in_app": transactions.map { $0.legacyLine() },
            ] as [String: Any],
            "latest_receipt_info": transactions.filter { $0.type == "Auto-Renewable Subscription" }.map { $0.legacyLine() },
            "pending_renewal_info": renewals.map { $0.legacy() },
            "latest_receipt": Data("simulated".utf8).base64EncodedString(),
        ]
    }

    /// A V1 notification body: the shared secret as `password`, "PROD"/"Sandbox", a unified receipt.
    package func notificationV1(
        _ type: String, password: String, transactions: [SimulatedTransaction],
        renewals: [SimulatedRenewal] = [], autoRenewStatus: Bool = true
    ) throws -> Data {
        var unified = receiptAnswer(transactions, renewals: renewals)
        unified["receipt"] = nil
        let body: [String: Any] = [
            "notification_type": type, "password": password, "environment": environment == "Production" ? "PROD" : "Sandbox",
            "bid": bundleID, "bvrs": "1", "auto_renew_status": autoRenewStatus ? "true" : "false",
            "auto_renew_product_id": transactions.last?.productID ?? "", "unified_receipt": unified,
        ]
        return try JSONSerialization.data(withJSONObject: body)
    }
}
