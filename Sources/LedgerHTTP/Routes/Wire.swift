import Foundation
import LedgerCore

/// The API's JSON, spelled out: snake_case keys, RFC 3339 UTC times, secrets never included.
/// Kept apart from the domain types so the domain can change without breaking clients.
enum Wire {
    struct UserStateBody: Encodable {
        var user_id: String
        var as_of: String
        var entitlements: [String: EntitlementBody]
        var balances: [String: Int64]
        var subscriptions: [SubscriptionBody]
        var purchases: [PurchaseBody]

        init(_ state: UserState) {
            user_id = state.userID
            as_of = RFC3339.string(state.asOf)
            entitlements = state.entitlements.mapValues(EntitlementBody.init)
            balances = state.balances
            subscriptions = state.subscriptions.map(SubscriptionBody.init)
            purchases = state.purchases.map(PurchaseBody.init)
        }
    }

    struct EntitlementBody: Encodable {
        var active: Bool
        var product_id: String
        var expires_at: String?
        var will_renew: Bool?
        var grace_period_expires_at: String?
        var billing_retry: Bool
        var ownership: String
        var original_transaction_id: String?
        var since: String

        init(_ e: Entitlement) {
            active = e.active
            product_id = e.productID
            expires_at = e.expiresAt.map(RFC3339.string)
            will_renew = e.willRenew
            grace_period_expires_at = e.gracePeriodExpiresAt.map(RFC3339.string)
            billing_retry = e.billingRetry
            ownership = e.ownership.rawValue
            original_transaction_id = e.originalTransactionID
            since = RFC3339.string(e.since)
        }

        // Absent optionals are written as null: clients read a fixed shape.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(active, forKey: .active)
            try c.encode(product_id, forKey: .product_id)
            try c.encode(expires_at, forKey: .expires_at)
            try c.encode(will_renew, forKey: .will_renew)
            try c.encode(grace_period_expires_at, forKey: .grace_period_expires_at)
            try c.encode(billing_retry, forKey: .billing_retry)
            try c.encode(ownership, forKey: .ownership)
            try c.encode(original_transaction_id, forKey: .original_transaction_id)
            try c.encode(since, forKey: .since)
        }
        enum Keys: CodingKey { case active, product_id, expires_at, will_renew, grace_period_expires_at, billing_retry, ownership, original_transaction_id, since }
    }

    struct SubscriptionBody: Encodable {
        var original_transaction_id: String
        var product_id: String
        var status: String
        var expires_at: String?
        var will_renew: Bool?
        var pending_product_id: String?
        var expiration_intent: Int?

        init(_ s: SubscriptionSummary) {
            original_transaction_id = s.originalTransactionID
            product_id = s.productID
            status = s.status.rawValue
            expires_at = s.expiresAt.map(RFC3339.string)
            will_renew = s.willRenew
            pending_product_id = s.pendingProductID
            expiration_intent = s.expirationIntent
        }
    }

    struct PurchaseBody: Encodable {
        var transaction_id: String
        var original_transaction_id: String
        var product_id: String
        var type: String?
        var purchase_date: String
        var quantity: Int
        var revoked_at: String?

        init(_ p: PurchaseSummary) {
            transaction_id = p.transactionID
            original_transaction_id = p.originalTransactionID
            product_id = p.productID
            type = p.type?.rawValue
            purchase_date = RFC3339.string(p.purchaseDate)
            quantity = p.quantity
            revoked_at = p.revokedAt.map(RFC3339.string)
        }
    }

    struct AppBody: Codable {
        var bundle_id: String?
        var environments: [String]?
        var apple_app_id: Int64?
        var restore_policy: String?
        /// Accepted on PUT, never returned.
        var shared_secret: String?
        /// Returned instead of the secret.
        var shared_secret_configured: Bool?
    }

    struct ProductBody: Codable {
        var product_id: String?
        var type: String
        var entitlements: [String]?
        var grants: [String: Int64]?
        var duration: String?

        init(type: String, productID: String?, entitlements: [String], grants: [String: Int64], duration: String?) {
            self.type = type
            self.product_id = productID
            self.entitlements = entitlements
            self.grants = grants
            self.duration = duration
        }

        init(_ d: ProductDefinition) {
            self.init(type: d.type.rawValue, productID: d.productID, entitlements: d.entitlements, grants: d.grants, duration: d.duration?.description)
        }
    }

    struct TransactionRequest: Decodable { var user_id: String; var signed_transaction: String }
    struct ReceiptRequest: Decodable { var user_id: String; var receipt_data: String }
    struct ConsumptionRequest: Decodable { var currency: String; var amount: Int64; var idempotency_key: String }
    struct ConsumptionResponse: Encodable { var balance: Int64; var currency: String; var replayed: Bool }

    struct GrantRequest: Decodable {
        var entitlement: String
        var reason: String
        /// ISO 8601 duration ("P7D"), or
        var duration: String?
        /// an RFC 3339 end; neither: until revoked.
        var until: String?
        var grant_id: String?
    }

    struct GrantBody: Encodable {
        var grant_id: String
        var user_id: String
        var entitlement: String
        var starts_at: String
        var expires_at: String?
        var reason: String
    }

    struct RevokeRequest: Decodable { var reason: String? }

    struct AuditEvent: Encodable {
        var position: Int64
        var type: String
        var occurred_at: String
        var recorded_at: String
        var data: JSONFragment
        var evidence: String?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(position, forKey: .position)
            try c.encode(type, forKey: .type)
            try c.encode(occurred_at, forKey: .occurred_at)
            try c.encode(recorded_at, forKey: .recorded_at)
            try c.encode(data, forKey: .data)
            try c.encode(evidence, forKey: .evidence)
        }
        enum Keys: CodingKey { case position, type, occurred_at, recorded_at, data, evidence }
    }

    struct AuditPage: Encodable {
        var events: [AuditEvent]
        var next: String?
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(events, forKey: .events)
            try c.encode(next, forKey: .next)
        }
        enum Keys: CodingKey { case events, next }
    }
}

/// Any JSON value, decoded and re-encoded as it was (an event's stored data, inside an answer).
enum JSONFragment: Codable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONFragment]), object([String: JSONFragment])

    init(_ data: Data) { self = (try? JSONDecoder().decode(JSONFragment.self, from: data)) ?? .null }

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let value = try? c.decode(Bool.self) { self = .bool(value) }
        else if let value = try? c.decode(Int64.self) { self = .integer(value) }
        else if let value = try? c.decode(Double.self) { self = .number(value) }
        else if let value = try? c.decode(String.self) { self = .string(value) }
        else if let value = try? c.decode([JSONFragment].self) { self = .array(value) }
        else { self = .object(try c.decode([String: JSONFragment].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let value): try c.encode(value)
        case .integer(let value): try c.encode(value)
        case .number(let value): try c.encode(value)
        case .string(let value): try c.encode(value)
        case .array(let value): try c.encode(value)
        case .object(let value): try c.encode(value)
        }
    }
}
