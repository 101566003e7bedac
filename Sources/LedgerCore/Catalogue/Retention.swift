import Foundation

/// What the app answers when Apple asks, in real time, what to show a subscriber about to cancel
/// (Apple's Retention Messaging): rules tried in order, each a condition on the subscriber's
/// history and the answer Apple takes, and a message when none applies. Stored in the app's
/// configuration event, spelled as the API spells it, so the log shows what the app declared.
package struct RetentionSettings: Codable, Sendable, Equatable {
    package var rules: [RetentionRule]
    /// The message when no rule answers (nil: Apple shows the default configured at Apple).
    package var defaultMessage: UUID?
    /// How promotional offers are signed: Apple's JWS (V2), or the legacy signature (V1) for an
    /// app whose key is a subscription offer key from before In-App Purchase keys.
    package var offerSignature: OfferSignatureVersion

    package enum OfferSignatureVersion: String, Codable, Sendable { case v2, v1 }

    package init(rules: [RetentionRule], defaultMessage: UUID? = nil, offerSignature: OfferSignatureVersion = .v2) {
        self.rules = rules
        self.defaultMessage = defaultMessage
        self.offerSignature = offerSignature
    }

    enum CodingKeys: String, CodingKey { case rules, defaultMessage = "default", offerSignature = "offer_signature" }

    private struct Default: Codable { var message: UUID }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rules = try container.decode([RetentionRule].self, forKey: .rules)
        defaultMessage = try container.decodeIfPresent(Default.self, forKey: .defaultMessage)?.message
        offerSignature = try container.decodeIfPresent(OfferSignatureVersion.self, forKey: .offerSignature) ?? .v2
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rules, forKey: .rules)
        try container.encodeIfPresent(defaultMessage.map(Default.init), forKey: .defaultMessage)
        try container.encode(offerSignature, forKey: .offerSignature)
    }
}

package struct RetentionRule: Codable, Sendable, Equatable {
    package var name: String
    package var when: RetentionCondition
    package var answer: RetentionAnswer

    package init(name: String, when: RetentionCondition, answer: RetentionAnswer) {
        self.name = name
        self.when = when
        self.answer = answer
    }
}

/// Every stated part must hold; an empty condition always does. Parts about history hold only
/// for a subscription the ledger knows.
package struct RetentionCondition: Codable, Sendable, Equatable {
    /// The subscription being viewed is one of these products.
    package var product: [String]?
    /// Paid time with this subscription (free trials and refunded periods not counted), in days.
    package var paidDaysAtLeast: Int?
    package var renewalsAtLeast: Int?
    package var inBillingRetry: Bool?
    /// Whether any purchase of the user was ever refunded.
    package var refundedBefore: Bool?
    /// The customer's locale: `en` matches every English locale, `en-US` only itself.
    package var locale: [String]?

    package init(
        product: [String]? = nil, paidDaysAtLeast: Int? = nil, renewalsAtLeast: Int? = nil, inBillingRetry: Bool? = nil,
        refundedBefore: Bool? = nil, locale: [String]? = nil
    ) {
        self.product = product
        self.paidDaysAtLeast = paidDaysAtLeast
        self.renewalsAtLeast = renewalsAtLeast
        self.inBillingRetry = inBillingRetry
        self.refundedBefore = refundedBefore
        self.locale = locale
    }

    enum CodingKeys: String, CodingKey {
        case product, locale
        case paidDaysAtLeast = "paid_days_at_least", renewalsAtLeast = "renewals_at_least", inBillingRetry = "in_billing_retry"
        case refundedBefore = "refunded_before"
    }

    /// `product` and `locale` take one value or a list.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func list(_ key: CodingKeys) throws -> [String]? {
            if let one = try? container.decodeIfPresent(String.self, forKey: key) { return [one] }
            return try container.decodeIfPresent([String].self, forKey: key)
        }
        product = try list(.product)
        locale = try list(.locale)
        paidDaysAtLeast = try container.decodeIfPresent(Int.self, forKey: .paidDaysAtLeast)
        renewalsAtLeast = try container.decodeIfPresent(Int.self, forKey: .renewalsAtLeast)
        inBillingRetry = try container.decodeIfPresent(Bool.self, forKey: .inBillingRetry)
        refundedBefore = try container.decodeIfPresent(Bool.self, forKey: .refundedBefore)
    }

    /// Whether the condition needs the subscriber's history.
    var needsHistory: Bool { paidDaysAtLeast != nil || renewalsAtLeast != nil || inBillingRetry != nil || refundedBefore != nil }
}

/// An answer exactly as Apple takes it (`RealtimeResponseBody`'s members).
package enum RetentionAnswer: Codable, Sendable, Equatable {
    case message(UUID)
    /// A switch to another plan of the subscription group; `billingPlanType` BILLED_UPFRONT or MONTHLY.
    case alternateProduct(message: UUID, product: String, billingPlanType: String?)
    /// One of the viewed product's offers declared in the catalogue, signed by the ledger for
    /// this subscriber — given only when the offer's rule makes them eligible.
    case promotionalOffer(message: UUID, offer: String)

    package var message: UUID {
        switch self {
        case .message(let message), .alternateProduct(let message, _, _), .promotionalOffer(let message, _): message
        }
    }

    /// The offer or the plan the answer names, if any.
    package var offerOrProduct: String? {
        switch self {
        case .message: nil
        case .alternateProduct(_, let product, _): product
        case .promotionalOffer(_, let offer): offer
        }
    }

    package var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        }
    }

    private enum Keys: String, CodingKey { case message, alternateProduct = "alternate_product", promotionalOffer = "promotional_offer" }
    private struct Alternate: Codable {
        var message: UUID
        var product: String
        var billing_plan_type: String?
    }
    private struct Offer: Codable {
        var message: UUID
        var offer: String
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "an answer is exactly one of message, alternate_product, promotional_offer"))
        }
        switch key {
        case .message: self = .message(try container.decode(UUID.self, forKey: .message))
        case .alternateProduct:
            let body = try container.decode(Alternate.self, forKey: .alternateProduct)
            self = .alternateProduct(message: body.message, product: body.product, billingPlanType: body.billing_plan_type)
        case .promotionalOffer:
            let body = try container.decode(Offer.self, forKey: .promotionalOffer)
            self = .promotionalOffer(message: body.message, offer: body.offer)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .message(let message): try container.encode(message, forKey: .message)
        case .alternateProduct(let message, let product, let plan):
            try container.encode(Alternate(message: message, product: product, billing_plan_type: plan), forKey: .alternateProduct)
        case .promotionalOffer(let message, let offer):
            try container.encode(Offer(message: message, offer: offer), forKey: .promotionalOffer)
        }
    }
}

extension RetentionSettings {
    /// What is wrong with the rules, said as the operator wrote them, or nil. `catalogue` is the
    /// app's: an offer a rule names for its products must be declared on each of them.
    package func problem(catalogue products: [ProductDefinition]) -> String? {
        guard rules.count <= 100 else { return "at most 100 rules" }
        var names: Set<String> = []
        for (index, rule) in rules.enumerated() {
            let place = "rules[\(index)]"
            guard (1...100).contains(rule.name.unicodeScalars.count) else { return "\(place).name is 1–100 characters" }
            guard names.insert(rule.name).inserted else { return "\(place).name \(rule.name) is used twice" }
            let when = rule.when
            if let products = when.product, products.isEmpty || products.contains(where: { $0.isEmpty || $0.utf8.count > 255 }) {
                return "\(place).when.product names product ids"
            }
            if let locales = when.locale, locales.isEmpty || locales.contains(where: { $0.isEmpty || $0.utf8.count > 35 }) {
                return "\(place).when.locale names locales such as en or en-US"
            }
            if let days = when.paidDaysAtLeast, days < 0 { return "\(place).when.paid_days_at_least is 0 or more" }
            if let renewals = when.renewalsAtLeast, renewals < 0 { return "\(place).when.renewals_at_least is 0 or more" }
            switch rule.answer {
            case .message: break
            case .alternateProduct(_, let product, let plan):
                guard !product.isEmpty, product.utf8.count <= 255 else {
                    return "\(place).answer.alternate_product.product is a product id"
                }
                if let plan, !["BILLED_UPFRONT", "MONTHLY"].contains(plan) {
                    return "\(place).answer.alternate_product.billing_plan_type is BILLED_UPFRONT or MONTHLY"
                }
            case .promotionalOffer(_, let offer):
                guard !offer.isEmpty, offer.utf8.count <= 100 else { return "\(place).answer.promotional_offer.offer is an offer id" }
                for product in when.product ?? [] {
                    let declared = products.first { $0.productID == product }?.offers?[offer] != nil
                    if !declared {
                        return "\(place): product \(product) declares no offer \(offer); declare it in the catalogue first"
                    }
                }
            }
        }
        return nil
    }
}
