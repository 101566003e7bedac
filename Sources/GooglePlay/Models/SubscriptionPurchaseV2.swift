/// `purchases.subscriptionsv2.get`'s answer: the subscription's state now, its items and their
/// expiry. Every field Google may leave out is optional, and enums are kept by name, so a state
/// or field added next year decodes (the raw bytes beside it keep the rest).
package struct SubscriptionPurchaseV2: Decodable, Sendable {
    package var kind: String?
    package var regionCode: String?
    /// Absent while the purchase is pending.
    package var startTime: String?
    package var subscriptionState: SubscriptionState?
    /// Deprecated by Google for `lineItems[].latestSuccessfulOrderId`; read while it is sent.
    package var latestOrderId: String?
    /// The token this one replaces (upgrade, downgrade, re-signup, prepaid top-up): its
    /// entitlement is to be revoked, or two accounts own one subscription.
    package var linkedPurchaseToken: String?
    package var pausedStateContext: PausedStateContext?
    package var canceledStateContext: CanceledStateContext?
    /// Present, empty, on test purchases only.
    package var testPurchase: Marker?
    package var acknowledgementState: AcknowledgementState?
    package var externalAccountIdentifiers: ExternalAccountIdentifiers?
    package var outOfAppPurchaseContext: OutOfAppPurchaseContext?
    package var lineItems: [LineItem]?
    package var etag: String?

    package struct SubscriptionState: GoogleEnumName {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package static let pending = Self(rawValue: "SUBSCRIPTION_STATE_PENDING")
        package static let active = Self(rawValue: "SUBSCRIPTION_STATE_ACTIVE")
        package static let paused = Self(rawValue: "SUBSCRIPTION_STATE_PAUSED")
        package static let inGracePeriod = Self(rawValue: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
        package static let onHold = Self(rawValue: "SUBSCRIPTION_STATE_ON_HOLD")
        package static let canceled = Self(rawValue: "SUBSCRIPTION_STATE_CANCELED")
        package static let expired = Self(rawValue: "SUBSCRIPTION_STATE_EXPIRED")
        package static let pendingPurchaseCanceled = Self(rawValue: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")
        package static let known: Set<Self> = [
            .pending, .active, .paused, .inGracePeriod, .onHold, .canceled, .expired, .pendingPurchaseCanceled,
        ]
    }

    package struct AcknowledgementState: GoogleEnumName {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package static let pending = Self(rawValue: "ACKNOWLEDGEMENT_STATE_PENDING")
        package static let acknowledged = Self(rawValue: "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
    }

    package struct PausedStateContext: Decodable, Sendable {
        package var autoResumeTime: String?
    }

    /// Which side ended the subscription; set only while CANCELED or EXPIRED.
    package struct CanceledStateContext: Decodable, Sendable {
        package var userInitiatedCancellation: UserInitiatedCancellation?
        package var systemInitiatedCancellation: Marker?
        package var developerInitiatedCancellation: Marker?
        package var replacementCancellation: Marker?

        package struct UserInitiatedCancellation: Decodable, Sendable {
            package var cancelTime: String?
            package var cancelSurveyResult: CancelSurveyResult?
        }

        package struct CancelSurveyResult: Decodable, Sendable {
            package var reason: String?
            package var reasonUserInput: String?
        }
    }

    package struct ExternalAccountIdentifiers: Decodable, Sendable {
        package var externalAccountId: String?
        package var obfuscatedExternalAccountId: String?
        package var obfuscatedExternalProfileId: String?
    }

    /// A resubscription made in the Play Store, before it is acknowledged: what it continues.
    package struct OutOfAppPurchaseContext: Decodable, Sendable {
        package var expiredExternalAccountIdentifiers: ExternalAccountIdentifiers?
        package var expiredPurchaseToken: String?
    }

    package struct LineItem: Decodable, Sendable {
        package var productId: String
        package var expiryTime: String?
        package var autoRenewingPlan: AutoRenewingPlan?
        package var prepaidPlan: PrepaidPlan?
        package var offerDetails: OfferDetails?
        package var offerPhase: OfferPhase?
        package var latestSuccessfulOrderId: String?
    }

    package struct AutoRenewingPlan: Decodable, Sendable {
        package var autoRenewEnabled: Bool?
        package var recurringPrice: Money?
        package var priceChangeDetails: PriceChangeDetails?
    }

    package struct PriceChangeDetails: Decodable, Sendable {
        package var newPrice: Money?
        package var priceChangeMode: String?
        package var priceChangeState: String?
        package var expectedNewPriceChargeTime: String?
    }

    package struct PrepaidPlan: Decodable, Sendable {
        package var allowExtendAfterTime: String?
    }

    package struct OfferDetails: Decodable, Sendable {
        package var basePlanId: String?
        package var offerId: String?
        package var offerTags: [String]?
    }

    /// Which phase the item is in; one member is present. A free trial is not a payment.
    package struct OfferPhase: Decodable, Sendable {
        package var basePrice: Marker?
        package var freeTrial: Marker?
        package var introductoryPrice: Marker?
        package var prorationPeriod: Marker?
    }
}

/// Google's `Money`: whole units as an int64 string, and nanos (billionths) as a number.
package struct Money: Decodable, Sendable, Equatable {
    package var currencyCode: String
    package var units: Int64
    package var nanos: Int32

    enum Keys: String, CodingKey { case currencyCode, units, nanos }

    package init(currencyCode: String, units: Int64, nanos: Int32) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        currencyCode = try container.decode(String.self, forKey: .currencyCode)
        units = try container.decodeIfPresent(Int64Text.self, forKey: .units)?.value ?? 0
        nanos = try container.decodeIfPresent(Int32.self, forKey: .nanos) ?? 0
    }
}
