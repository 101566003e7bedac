import Foundation

/// A one-time product purchase as the simulated Google keeps it, rendered as v1 `ProductPurchase`
/// and as `ProductPurchaseV2`.
package struct SimulatedProduct: Sendable {
    package var token: String
    package var packageName: String
    package var productID: String
    package var orderID: String
    /// 0 purchased, 1 canceled, 2 pending (v1's numbers).
    package var purchaseState: Int
    package var quantity: Int
    package var refundableQuantity: Int
    package var consumed: Bool
    package var acknowledged: Bool
    package var purchased: Date
    package var accountID: String?
    package var test: Bool

    func v1() -> [String: Any] {
        var answer: [String: Any] = [
            "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": String(Int64(purchased.timeIntervalSince1970 * 1000)),
            "purchaseState": purchaseState, "consumptionState": consumed ? 1 : 0, "developerPayload": "", "orderId": orderID,
            "acknowledgementState": acknowledged ? 1 : 0, "productId": productID, "purchaseToken": token, "regionCode": "US",
            "quantity": quantity, "refundableQuantity": refundableQuantity,
        ]
        if let accountID { answer["obfuscatedExternalAccountId"] = accountID }
        if test { answer["purchaseType"] = 0 }
        return answer
    }

    func v2() -> [String: Any] {
        let state = ["PURCHASED", "CANCELLED", "PENDING"][purchaseState]
        var answer: [String: Any] = [
            "kind": "androidpublisher#productPurchaseV2",
            "productLineItem": [
                [
                    "productId": productID,
                    "productOfferDetails": [
                        "purchaseOptionId": "legacy-base", "quantity": quantity, "refundableQuantity": refundableQuantity,
                        "consumptionState": consumed ? "CONSUMPTION_STATE_CONSUMED" : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED",
                    ],
                ]
            ],
            "purchaseStateContext": ["purchaseState": state], "orderId": orderID, "regionCode": "US",
            "acknowledgementState": acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
        ]
        if purchaseState == 0 { answer["purchaseCompletionTime"] = GoogleTime.text(purchased) }
        if let accountID { answer["obfuscatedExternalAccountId"] = accountID }
        if test { answer["testPurchaseContext"] = ["fopType": "TEST"] }
        return answer
    }
}

/// A voided purchase as `voidedpurchases.list` shows it.
package struct SimulatedVoided: Sendable {
    package var packageName: String
    package var token: String
    package var orderID: String
    package var purchased: Date
    package var voided: Date
    package var source: Int
    package var reason: Int
    /// Set for a quantity-based partial refund only.
    package var quantity: Int?
    package var isSubscription: Bool

    func json() -> [String: Any] {
        var row: [String: Any] = [
            "kind": "androidpublisher#voidedPurchase", "purchaseToken": token, "orderId": orderID,
            "purchaseTimeMillis": String(Int64(purchased.timeIntervalSince1970 * 1000)),
            "voidedTimeMillis": String(Int64(voided.timeIntervalSince1970 * 1000)), "voidedSource": source, "voidedReason": reason,
        ]
        if let quantity { row["voidedQuantity"] = quantity }
        return row
    }
}
