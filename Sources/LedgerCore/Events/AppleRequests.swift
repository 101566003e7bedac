import Foundation

/// What the ledger asked Apple to do to a customer's subscription or account, and Apple's answer:
/// kept so support and finance can tell who extended what, why and when. None changes a user's
/// state by itself — Apple's restated transaction (or its RENEWAL_EXTENDED notification) does.

/// One subscription's renewal date moved by `days` at Apple (Extend a Subscription Renewal Date).
package struct RenewalExtension: Codable, Sendable, Equatable {
    package var originalTransactionID: String
    package var days: Int
    /// Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    package var reasonCode: Int
    package var requestID: String
    /// The API key (or console session's key) that asked.
    package var actor: String
    package var requestedAt: Date
    /// When Apple says the new renewal date takes effect.
    package var effectiveDate: Date?
    package var webOrderLineItemID: String?

    package init(
        originalTransactionID: String, days: Int, reasonCode: Int, requestID: String, actor: String, requestedAt: Date,
        effectiveDate: Date?, webOrderLineItemID: String?
    ) {
        self.originalTransactionID = originalTransactionID
        self.days = days
        self.reasonCode = reasonCode
        self.requestID = requestID
        self.actor = actor
        self.requestedAt = requestedAt
        self.effectiveDate = effectiveDate
        self.webOrderLineItemID = webOrderLineItemID
    }

    /// Apple allows two extensions of one subscription in any 365 days.
    package static let perYear = 2
    package static let maximumDays = 90
}

/// Every active subscriber of a product extended at Apple (Extend for All Active Subscribers).
package struct MassRenewalExtension: Codable, Sendable, Equatable {
    package var productID: String
    package var days: Int
    package var reasonCode: Int
    package var requestID: String
    /// ISO 3166-1 alpha-3; empty: every storefront.
    package var storefronts: [String]
    package var environment: AppleEnvironment
    package var actor: String
    package var requestedAt: Date

    package init(
        productID: String, days: Int, reasonCode: Int, requestID: String, storefronts: [String], environment: AppleEnvironment,
        actor: String, requestedAt: Date
    ) {
        self.productID = productID
        self.days = days
        self.reasonCode = reasonCode
        self.requestID = requestID
        self.storefronts = storefronts
        self.environment = environment
        self.actor = actor
        self.requestedAt = requestedAt
    }
}

/// The user's appAccountToken set on a purchase at Apple (Set App Account Token).
package struct AppAccountTokenSent: Codable, Sendable, Equatable {
    package var originalTransactionID: String
    package var appAccountToken: UUID
    package var userID: String
    package var sentAt: Date

    package init(originalTransactionID: String, appAccountToken: UUID, userID: String, sentAt: Date) {
        self.originalTransactionID = originalTransactionID
        self.appAccountToken = appAccountToken
        self.userID = userID
        self.sentAt = sentAt
    }
}
