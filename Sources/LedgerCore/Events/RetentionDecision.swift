import Foundation

/// What the ledger answered Apple when one of the user's subscribers opened the page where they
/// may cancel (a Retention Messaging realtime request): kept on the user's stream so support sees
/// what was shown and why, and the app can count which rules saved a subscription.
package struct RetentionDecision: Codable, Sendable, Equatable {
    package var userID: String
    /// Apple's `requestIdentifier`: one decision per request, however often Apple sends it.
    package var requestID: String
    package var originalTransactionID: String
    package var productID: String
    package var locale: String
    package var environment: AppleEnvironment
    /// The rule that answered; nil for the app's default message.
    package var rule: String?
    /// `message`, `alternate_product` or `promotional_offer`.
    package var answer: String
    package var messageID: String
    package var alternateProductID: String?
    package var offerID: String?
    /// Rules passed over before the answer, each with why (an offer the user was not eligible for).
    package var skipped: [String]
    package var decidedAt: Date

    package init(
        userID: String, requestID: String, originalTransactionID: String, productID: String, locale: String,
        environment: AppleEnvironment, rule: String?, answer: String, messageID: String, alternateProductID: String?,
        offerID: String?, skipped: [String], decidedAt: Date
    ) {
        self.userID = userID
        self.requestID = requestID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.locale = locale
        self.environment = environment
        self.rule = rule
        self.answer = answer
        self.messageID = messageID
        self.alternateProductID = alternateProductID
        self.offerID = offerID
        self.skipped = skipped
        self.decidedAt = decidedAt
    }
}
