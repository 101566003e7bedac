import Foundation

/// A virtual currency of one app ("gems", "tickets"), as its economy designer sets it up: what
/// products and the game server grant, kept in lots, spent soonest-expiring first.
package struct CurrencyDefinition: Codable, Sendable, Equatable {
    package var code: String
    package var name: String
    /// Each grant expires this long after it is made (event currencies: "a week after the pack").
    package var expiresAfter: ISODuration?
    /// Every grant expires at this instant at the latest (a season: "tickets end on Sunday").
    package var expiresAt: Date?

    package init(code: String, name: String, expiresAfter: ISODuration? = nil, expiresAt: Date? = nil) {
        self.code = code
        self.name = name
        self.expiresAfter = expiresAfter
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case code, name, expiresAfter = "expires_after", expiresAt = "expires_at"
    }

    /// When a grant made at `date` expires by this policy (nil: never); a grant's own instant, if
    /// it names one, is kept when sooner.
    package func expiry(ofGrantAt date: Date, own: Date? = nil) -> Date? {
        [expiresAfter.map { $0.added(to: date) }, expiresAt, own].compactMap { $0 }.min()
    }
}

/// An amount of a currency the game server gave a user (a reward, a compensation), with its
/// reason; idempotent by its id.
package struct CurrencyGrant: Codable, Sendable, Equatable {
    package var grantID: String
    package var userID: String
    package var currency: String
    package var amount: Int64
    package var reason: String
    /// Sooner than the currency's own policy, if the game says so.
    package var expiresAt: Date?
    /// The API key's name.
    package var actor: String?

    package init(
        grantID: String, userID: String, currency: String, amount: Int64, reason: String, expiresAt: Date? = nil, actor: String? = nil
    ) {
        self.grantID = grantID
        self.userID = userID
        self.currency = currency
        self.amount = amount
        self.reason = reason
        self.expiresAt = expiresAt
        self.actor = actor
    }
}

/// A spend the game server takes back (the item it bought was refunded in the game): what the
/// spend drew goes back to the lots it came from.
package struct SpendReversal: Codable, Sendable, Equatable {
    package var userID: String
    /// The spend's idempotency key.
    package var idempotencyKey: String
    package var reason: String
    package var actor: String?

    package init(userID: String, idempotencyKey: String, reason: String, actor: String? = nil) {
        self.userID = userID
        self.idempotencyKey = idempotencyKey
        self.reason = reason
        self.actor = actor
    }
}
