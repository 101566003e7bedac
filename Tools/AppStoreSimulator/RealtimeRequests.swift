import Foundation

extension SimulatedApp {
    /// A Retention Messaging realtime request as Apple POSTs it to the app's realtime URL:
    /// `{"signedPayload": …}` over a `DecodedRealtimeRequestBody` (every field Apple requires; no
    /// bundle id — the app is named by its Apple app id).
    package func realtimeRequest(
        originalTransactionID: String, productID: String, locale: String = "en-US", requestID: UUID = UUID(),
        appAppleID: Int64? = nil, signedDate: Date = Date()
    ) throws -> Data {
        let payload: [String: Any] = [
            "originalTransactionId": originalTransactionID, "appAppleId": appAppleID ?? self.appAppleID, "productId": productID,
            "userLocale": locale, "requestIdentifier": requestID.uuidString.lowercased(), "environment": environment,
            "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000),
        ]
        return try JSONSerialization.data(withJSONObject: ["signedPayload": try authority.sign(payload)])
    }
}
