import Foundation

// Apple's response bodies, with Apple's field names (fixtures/apple/app-store-server-library/models/).
// Every field is optional where Apple may leave it out; enum-like values stay raw strings or
// numbers, because Apple adds values every year.

/// Get Transaction History v2 and Get Refund History v2: one page.
public struct SignedTransactionPage: Decodable, Sendable {
    public var revision: String?
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: String?
    public var signedTransactions: [String]?
}

/// Get Transaction Info.
public struct TransactionInfoResponse: Decodable, Sendable {
    public var signedTransactionInfo: String?
}

/// Get All Subscription Statuses.
public struct StatusResponse: Decodable, Sendable {
    public struct Group: Decodable, Sendable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]?
    }
    public struct LastTransaction: Decodable, Sendable {
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
    }
    public var environment: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]?
}

/// Look Up Order ID.
public struct OrderLookupResponse: Decodable, Sendable {
    /// 0 valid, 1 invalid.
    public var status: Int
    public var signedTransactions: [String]?
}

/// Get Notification History: one page.
public struct NotificationHistoryPage: Decodable, Sendable {
    public struct Item: Decodable, Sendable {
        public var signedPayload: String?
        public var sendAttempts: [SendAttempt]?
    }
    public var paginationToken: String?
    public var hasMore: Bool?
    public var notificationHistory: [Item]?
}

public struct SendAttempt: Decodable, Sendable {
    public var attemptDate: Int64?
    /// SUCCESS, TIMED_OUT, TLS_ISSUE, CIRCULAR_REDIRECT, NO_RESPONSE, SOCKET_ISSUE,
    /// UNSUPPORTED_CHARSET, INVALID_RESPONSE, PREMATURE_CLOSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, OTHER.
    public var sendAttemptResult: String?
}

/// Request a Test Notification.
public struct TestNotificationToken: Decodable, Sendable {
    public var testNotificationToken: String
}

/// Get Test Notification Status.
public struct TestNotificationStatus: Decodable, Sendable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]?
}

/// Send Consumption Information v2's body: what the developer tells Apple before it decides a
/// refund of a consumable (or other) purchase the customer asked for.
public struct ConsumptionInformation: Codable, Sendable, Equatable {
    public var customerConsented: Bool
    /// Thousandths of a percent consumed, 0…100,000.
    public var consumptionPercentage: Int?
    /// DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE, UNDELIVERED_OTHER.
    public var deliveryStatus: String
    /// DECLINE, GRANT_FULL, GRANT_PRORATED; none: no preference.
    public var refundPreference: String?
    public var sampleContentProvided: Bool

    public init(customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: String, refundPreference: String?, sampleContentProvided: Bool) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}
