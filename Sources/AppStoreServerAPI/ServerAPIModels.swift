import Foundation

// Apple's response bodies, with Apple's field names (fixtures/apple/app-store-server-library/models/).
// Every field is optional where Apple may leave it out; enum-like values stay raw strings or
// numbers, because Apple adds values every year.

/// Get Transaction History v2 and Get Refund History v2: one page.
package struct SignedTransactionPage: Decodable, Sendable {
    package var revision: String?
    package var hasMore: Bool?
    package var bundleId: String?
    package var appAppleId: Int64?
    package var environment: String?
    package var signedTransactions: [String]?
}

/// Get Transaction Info.
package struct TransactionInfoResponse: Decodable, Sendable {
    package var signedTransactionInfo: String?
}

/// Get App Transaction Info's answer.
package struct AppTransactionInfoResponse: Decodable, Sendable {
    package var signedAppTransactionInfo: String?
}

/// Get All Subscription Statuses.
package struct StatusResponse: Decodable, Sendable {
    package struct Group: Decodable, Sendable {
        package var subscriptionGroupIdentifier: String?
        package var lastTransactions: [LastTransaction]?
    }
    package struct LastTransaction: Decodable, Sendable {
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        package var status: Int?
        package var originalTransactionId: String?
        package var signedTransactionInfo: String?
        package var signedRenewalInfo: String?
    }
    package var environment: String?
    package var bundleId: String?
    package var appAppleId: Int64?
    package var data: [Group]?
}

/// Look Up Order ID.
package struct OrderLookupResponse: Decodable, Sendable {
    /// 0 valid, 1 invalid.
    package var status: Int
    package var signedTransactions: [String]?
}

/// Get Notification History: one page.
package struct NotificationHistoryPage: Decodable, Sendable {
    package struct Item: Decodable, Sendable {
        package var signedPayload: String?
        package var sendAttempts: [SendAttempt]?
    }
    package var paginationToken: String?
    package var hasMore: Bool?
    package var notificationHistory: [Item]?
}

package struct SendAttempt: Decodable, Sendable {
    package var attemptDate: Int64?
    /// SUCCESS, TIMED_OUT, TLS_ISSUE, CIRCULAR_REDIRECT, NO_RESPONSE, SOCKET_ISSUE,
    /// UNSUPPORTED_CHARSET, INVALID_RESPONSE, PREMATURE_CLOSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, OTHER.
    package var sendAttemptResult: String?
}

/// Request a Test Notification.
package struct TestNotificationToken: Decodable, Sendable {
    package var testNotificationToken: String
}

/// Get Test Notification Status.
package struct TestNotificationStatus: Decodable, Sendable {
    package var signedPayload: String?
    package var sendAttempts: [SendAttempt]?
}

/// Send Consumption Information v2's body: what the developer tells Apple before it decides a
/// refund of a consumable (or other) purchase the customer asked for.
package struct ConsumptionInformation: Codable, Sendable, Equatable {
    package var customerConsented: Bool
    /// Thousandths of a percent consumed, 0…100,000.
    package var consumptionPercentage: Int?
    /// DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE, UNDELIVERED_OTHER.
    package var deliveryStatus: String
    /// DECLINE, GRANT_FULL, GRANT_PRORATED; none: no preference.
    package var refundPreference: String?
    package var sampleContentProvided: Bool

    package init(
        customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: String, refundPreference: String?, sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}
