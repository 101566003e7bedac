import Foundation

/// A subscription purchase as the simulated Google keeps it, and its lifecycle as Google's
/// documentation tells it: each change returns the RTDN `notificationType` Play would send.
package struct SimulatedSubscription: Sendable {
    package var token: String
    package var packageName: String
    package var productID: String
    package var basePlanID: String
    package var state: String
    package var start: Date?
    package var expiry: Date
    package var autoRenew: Bool
    package var acknowledged: Bool
    package var accountID: String?
    package var linkedPurchaseToken: String?
    /// "user", "system", "developer" or "replacement" once canceled or expired.
    package var canceledBy: String?
    package var autoResume: Date?
    package var orderIDs: [String]
    package var test: Bool
    /// Expired more than 60 days ago: Google answers 410 from then on.
    package var gone: Bool = false
    package var etag: Int = 1
    package var period: TimeInterval

    /// What the simulator can make happen to a subscription.
    package enum Change: Sendable, Equatable {
        case renew, enterGracePeriod, hold, recover, cancel, restart, revoke, expire, completePending, cancelPending
        case pause(until: Date)
        case deferBy(seconds: Int)
        /// 60 days after its end: Google keeps it no more (410).
        case forget
    }

    static func state(_ name: String) -> String { "SUBSCRIPTION_STATE_" + name }

    /// Applies `change` at `now`; the RTDN type Play sends for it, nil for none.
    mutating func apply(_ change: Change, now: Date) -> Int? {
        etag += 1
        switch change {
        case .renew:
            expiry = max(expiry, now).addingTimeInterval(period)
            orderIDs.append(orderIDs[0] + "..\(orderIDs.count - 1)")
            state = Self.state("ACTIVE")
            return 2
        case .enterGracePeriod:
            state = Self.state("IN_GRACE_PERIOD")
            expiry = now.addingTimeInterval(3 * 86_400)
            return 6
        case .hold:
            state = Self.state("ON_HOLD")
            expiry = now.addingTimeInterval(-1)
            return 5
        case .recover:
            state = Self.state("ACTIVE")
            expiry = now.addingTimeInterval(period)
            autoResume = nil
            orderIDs.append(orderIDs[0] + "..\(orderIDs.count - 1)")
            return 1
        case .pause(let until):
            state = Self.state("PAUSED")
            autoResume = until
            expiry = now
            return 10
        case .cancel:
            state = Self.state("CANCELED")
            autoRenew = false
            canceledBy = "user"
            return 3
        case .restart:
            state = Self.state("ACTIVE")
            autoRenew = true
            canceledBy = nil
            return 7
        case .revoke:
            state = Self.state("EXPIRED")
            autoRenew = false
            expiry = now
            canceledBy = canceledBy ?? "developer"
            return 12
        case .expire:
            state = Self.state("EXPIRED")
            autoRenew = false
            expiry = min(expiry, now)
            canceledBy = canceledBy ?? "system"
            return 13
        case .deferBy(let seconds):
            expiry = expiry.addingTimeInterval(TimeInterval(seconds))
            return 9
        case .completePending:
            state = Self.state("ACTIVE")
            start = now
            return 4
        case .cancelPending:
            state = Self.state("PENDING_PURCHASE_CANCELED")
            autoRenew = false
            return 20
        case .forget:
            gone = true
            return nil
        }
    }

    /// The purchase in `SubscriptionPurchaseV2`'s shape.
    func json() -> [String: Any] {
        var item: [String: Any] = [
            "productId": productID, "expiryTime": GoogleTime.text(expiry), "offerDetails": ["basePlanId": basePlanID, "offerTags": []],
            "autoRenewingPlan": [
                "autoRenewEnabled": autoRenew, "recurringPrice": ["currencyCode": "USD", "units": "9", "nanos": 990_000_000],
            ],
            "offerPhase": ["basePrice": [String: Any]()],
        ]
        if state != Self.state("PENDING") { item["latestSuccessfulOrderId"] = orderIDs.last }
        var purchase: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "subscriptionState": state,
            "acknowledgementState": acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            "lineItems": [item], "etag": "etag-\(etag)",
        ]
        if let start { purchase["startTime"] = GoogleTime.text(start) }
        if let order = orderIDs.last, state != Self.state("PENDING") { purchase["latestOrderId"] = order }
        if let accountID { purchase["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": accountID] }
        if let linkedPurchaseToken { purchase["linkedPurchaseToken"] = linkedPurchaseToken }
        if test { purchase["testPurchase"] = [String: Any]() }
        if let autoResume, state == Self.state("PAUSED") {
            purchase["pausedStateContext"] = ["autoResumeTime": GoogleTime.text(autoResume)]
        }
        if let canceledBy, [Self.state("CANCELED"), Self.state("EXPIRED")].contains(state) {
            let context: [String: Any] =
                switch canceledBy {
                case "user":
                    [
                        "userInitiatedCancellation": [
                            "cancelTime": GoogleTime.text(expiry), "cancelSurveyResult": ["reason": "CANCEL_SURVEY_REASON_OTHERS"],
                        ]
                    ]
                case "replacement": ["replacementCancellation": [String: Any]()]
                case "developer": ["developerInitiatedCancellation": [String: Any]()]
                default: ["systemInitiatedCancellation": [String: Any]()]
                }
            purchase["canceledStateContext"] = context
        }
        return purchase
    }
}

/// Google's `google-datetime`: RFC 3339 in UTC with milliseconds.
enum GoogleTime {
    static func text(_ date: Date) -> String {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format.string(from: date)
    }
}
