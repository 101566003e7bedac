import Foundation

/// Google's answer about one purchase: the token it was asked about, what it said, and when.
/// What the answer means in the domain's facts depends on what was asked
/// (`GoogleSubscriptionFacts`, `GoogleProductFacts`).
package struct GooglePurchaseAnswer<Model: Sendable>: Sendable {
    package var token: String
    package var answer: Model
    /// When Google answered: the facts' `signedDate`, as Apple's signature date is for its facts.
    package var answeredAt: Date

    package init(token: String, answer: Model, answeredAt: Date) {
        self.token = token
        self.answer = answer
        self.answeredAt = answeredAt
    }

    package var key: String { GooglePurchaseKey.of(token: token) }
}
