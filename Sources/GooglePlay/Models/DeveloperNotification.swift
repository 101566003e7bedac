import Foundation

/// What Play publishes to the app's Pub/Sub topic (the push's base64 `data`). It only says that a
/// purchase changed: the server asks the Developer API for the purchase itself. Exactly one kind
/// is present; a kind Google adds later is kept by its field name, not refused, so the push is
/// still acknowledged and its `eventTimeMillis` still ordered.
package struct DeveloperNotification: Decodable, Sendable {
    package var version: String?
    package var packageName: String
    /// Milliseconds since 1970; a string on the wire, a number accepted too.
    package var eventTimeMillis: Int64
    package var kind: Kind

    package enum Kind: Sendable, Equatable {
        case subscription(SubscriptionNotification)
        case oneTimeProduct(OneTimeProductNotification)
        case voidedPurchase(VoidedPurchaseNotification)
        case test(version: String?)
        case pendingRefundReview(PendingRefundReviewNotification)
        /// None of the kinds known here: the names of the fields that were there instead.
        case unknown(fields: [String])
    }

    private enum Keys: String, CodingKey {
        case version, packageName, eventTimeMillis
        case subscriptionNotification, oneTimeProductNotification, voidedPurchaseNotification, testNotification
        case pendingRefundReviewNotification
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private struct TestBody: Decodable { var version: String? }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        version = try container.decodeIfPresent(String.self, forKey: .version)
        packageName = try container.decode(String.self, forKey: .packageName)
        eventTimeMillis = try container.decode(Int64Text.self, forKey: .eventTimeMillis).value
        if let body = try container.decodeIfPresent(SubscriptionNotification.self, forKey: .subscriptionNotification) {
            kind = .subscription(body)
        } else if let body = try container.decodeIfPresent(OneTimeProductNotification.self, forKey: .oneTimeProductNotification) {
            kind = .oneTimeProduct(body)
        } else if let body = try container.decodeIfPresent(VoidedPurchaseNotification.self, forKey: .voidedPurchaseNotification) {
            kind = .voidedPurchase(body)
        } else if let body = try container.decodeIfPresent(TestBody.self, forKey: .testNotification) {
            kind = .test(version: body.version)
        } else if let body = try container.decodeIfPresent(
            PendingRefundReviewNotification.self, forKey: .pendingRefundReviewNotification)
        {
            kind = .pendingRefundReview(body)
        } else {
            let known: Set<String> = ["version", "packageName", "eventTimeMillis"]
            let all = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
            kind = .unknown(fields: all.filter { !known.contains($0) }.sorted())
        }
    }

    /// The purchase token the notification is about, when its kind names one.
    package var purchaseToken: String? {
        switch kind {
        case .subscription(let body): body.purchaseToken
        case .oneTimeProduct(let body): body.purchaseToken
        case .voidedPurchase(let body): body.purchaseToken
        case .test, .pendingRefundReview, .unknown: nil
        }
    }
}

package struct SubscriptionNotification: Decodable, Sendable, Equatable {
    package var version: String?
    package var notificationType: SubscriptionNotificationType
    package var purchaseToken: String
    /// Deprecated by Google without replacement; read when an old notification carries it.
    package var subscriptionId: String?
}

/// Play's subscription notification types by number. New numbers keep appearing (20 in 2024, 22
/// in 2025); an unknown one is kept as its number, and the answer to it is the same as to any:
/// fetch the purchase and record what it says.
package struct SubscriptionNotificationType: Decodable, Sendable, Hashable, CustomStringConvertible {
    package var rawValue: Int

    package init(_ rawValue: Int) { self.rawValue = rawValue }

    package init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    package static let recovered = Self(1), renewed = Self(2), canceled = Self(3), purchased = Self(4), onHold = Self(5)
    package static let inGracePeriod = Self(6), restarted = Self(7), priceChangeConfirmed = Self(8), deferred = Self(9)
    package static let paused = Self(10), pauseScheduleChanged = Self(11), revoked = Self(12), expired = Self(13)
    package static let itemsChanged = Self(17), cancellationScheduled = Self(18), priceChangeUpdated = Self(19)
    package static let pendingPurchaseCanceled = Self(20), priceStepUpConsentUpdated = Self(22)

    static let names: [Int: String] = [
        1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD", 7: "RESTARTED",
        8: "PRICE_CHANGE_CONFIRMED", 9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED", 12: "REVOKED", 13: "EXPIRED",
        17: "ITEMS_CHANGED", 18: "CANCELLATION_SCHEDULED", 19: "PRICE_CHANGE_UPDATED", 20: "PENDING_PURCHASE_CANCELED",
        22: "PRICE_STEP_UP_CONSENT_UPDATED",
    ]

    package var isKnown: Bool { Self.names[rawValue] != nil }
    package var description: String { Self.names[rawValue].map { "SUBSCRIPTION_" + $0 } ?? "unknown (\(rawValue))" }
}

package struct OneTimeProductNotification: Decodable, Sendable, Equatable {
    package var version: String?
    /// 1 ONE_TIME_PRODUCT_PURCHASED, 2 ONE_TIME_PRODUCT_CANCELED (a pending purchase canceled).
    package var notificationType: Int
    package var purchaseToken: String
    package var sku: String?
}

/// A refund or chargeback; Google sends it without a `version`.
package struct VoidedPurchaseNotification: Decodable, Sendable, Equatable {
    package var purchaseToken: String
    package var orderId: String?
    /// 1 subscription, 2 one-time product.
    package var productType: Int?
    /// 1 full refund, 2 quantity-based partial refund.
    package var refundType: Int?

    /// A voided purchase the voided purchases list named, as its notification would have said it.
    package init(purchaseToken: String, orderId: String?, productType: Int?, refundType: Int?) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.productType = productType
        self.refundType = refundType
    }
}

/// A chargeback Google asks the developer to weigh in on within 24 hours (`orders.reviewrefund`).
/// The inner field names are those independent implementations agree on; Google's English page
/// does not list them yet, so each is optional.
package struct PendingRefundReviewNotification: Decodable, Sendable, Equatable {
    package var version: String?
    package var pendingRefundToken: String?
    package var orderId: String?
    package var refundReason: Int?
    package var obfuscatedAccountId: String?
    package var obfuscatedProfileId: String?
}
