/// `purchases.products.get`'s answer (v1). Its int64 fields are strings; its states are numbers:
/// `purchaseState` 0 purchased, 1 canceled, 2 pending; `consumptionState` and
/// `acknowledgementState` 0 not yet, 1 done; `purchaseType` only outside the standard flow
/// (0 test, 1 promo, 2 rewarded). `quantity` absent means one.
package struct ProductPurchase: Decodable, Sendable {
    package var kind: String?
    package var purchaseTimeMillis: Int64Text?
    package var purchaseState: Int?
    package var consumptionState: Int?
    package var acknowledgementState: Int?
    package var developerPayload: String?
    package var orderId: String?
    /// "May not be present", Google says of both.
    package var productId: String?
    package var purchaseToken: String?
    package var purchaseType: Int?
    package var obfuscatedExternalAccountId: String?
    package var obfuscatedExternalProfileId: String?
    package var regionCode: String?
    package var quantity: Int?
    package var refundableQuantity: Int?

    package var isPending: Bool { purchaseState == 2 }
    package var isAcknowledged: Bool { acknowledgementState == 1 }
}

/// `purchases.productsv2.getproductpurchasev2`'s answer: the one-time purchase Google's lifecycle
/// now points to, with line items and states by name.
package struct ProductPurchaseV2: Decodable, Sendable {
    package var kind: String?
    package var productLineItem: [LineItem]?
    package var purchaseStateContext: PurchaseStateContext?
    package var testPurchaseContext: TestPurchaseContext?
    /// Absent until paid.
    package var purchaseCompletionTime: String?
    /// May be unset (promo codes).
    package var orderId: String?
    package var acknowledgementState: SubscriptionPurchaseV2.AcknowledgementState?
    package var obfuscatedExternalAccountId: String?
    package var obfuscatedExternalProfileId: String?
    package var regionCode: String?

    package struct LineItem: Decodable, Sendable {
        package var productId: String
        package var productOfferDetails: OfferDetails?
    }

    package struct OfferDetails: Decodable, Sendable {
        package var purchaseOptionId: String?
        package var offerId: String?
        package var offerTags: [String]?
        package var offerToken: String?
        package var quantity: Int?
        package var refundableQuantity: Int?
        package var consumptionState: String?
    }

    package struct PurchaseStateContext: Decodable, Sendable {
        /// PURCHASED, CANCELLED or PENDING; kept as sent.
        package var purchaseState: String?
    }

    package struct TestPurchaseContext: Decodable, Sendable {
        package var fopType: String?
    }
}
