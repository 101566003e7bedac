import Foundation
import LedgerCore
import LedgerFormats
import LedgerIngestion
import LedgerPrivacy

/// The API's JSON, spelled out: snake_case keys, RFC 3339 UTC times, secrets never included.
/// Kept apart from the domain types so the domain can change without breaking clients.
enum Wire {
    /// A user's state as the API answers it (`UserState` in openapi.json; `UserStateJSON`).
    static func userState(_ state: UserState, knownAt: Date? = nil) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 1024)
        UserStateJSON.write(state, knownAt: knownAt, into: &json)
        return json.bytes
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
        /// How Apple's CONSUMPTION_REQUESTs are answered (absent: never answered).
        var consumption_policy: ConsumptionPolicyBody?
        /// Accepted on PUT, never returned.
        var app_store_server_api: ServerAPIKey?
        /// Returned instead of the key.
        var app_store_server_api_configured: Bool?
        /// What buying the app itself grants (an app that went from paid to free).
        var app_purchase: AppPurchaseBody?
        /// The app on Google Play: its package, the service account the ledger asks Google as
        /// (accepted on PUT, never returned) and the Pub/Sub push it receives notifications by.
        var google_play: GooglePlayBody?
        /// Whether the ledger finishes each recorded purchase at Apple (the app's server grants
        /// content and does not call finish() in the app); default false.
        var server_finishes_transactions: Bool?
    }

    struct GooglePlayBody: Codable {
        var package_name: String
        /// The JSON key file Google issues for the service account, as an object; never returned.
        var service_account: [String: String]?
        /// Returned instead of the key: the account's email.
        var service_account_email: String?
        var pubsub: PubSubBody?
        /// Whether license testers' purchases (Google's test purchases) are accepted; default false.
        var test_purchases: Bool?
    }

    /// The push subscription's authentication: the OIDC token's audience and the service account
    /// Pub/Sub signs as.
    struct PubSubBody: Codable {
        var audience: String
        var service_account_email: String
    }

    /// Users whose original purchase of the app came before a version or a date hold `entitlements`.
    struct AppPurchaseBody: Codable {
        var entitlements: [String]
        var originally_before_version: String?
        /// RFC 3339, or a plain date (midnight UTC).
        var originally_purchased_before: String?
    }

    /// The app's In-App Purchase key for the App Store Server API, from App Store Connect.
    struct ServerAPIKey: Codable {
        var issuer_id: String
        var key_id: String
        /// The PEM text of the `.p8` file.
        var private_key: String
    }

    /// What the app declares for Apple's refund questions.
    struct ConsumptionPolicyBody: Codable {
        /// The app collected its customers' consent to share consumption data; without it nothing is sent.
        var customer_consented: Bool
        /// DECLINE, GRANT_FULL or GRANT_PRORATED; absent: no preference.
        var refund_preference: String?
        var sample_content_provided: Bool?
    }

    struct SyncRequest: Decodable { var transaction_id: String }

    /// Apple's order lookup, and who owns each transaction in this ledger.
    struct OrderBody: Encodable {
        struct Line: Encodable {
            var transaction_id: String
            var original_transaction_id: String
            var product_id: String
            var purchase_date: String
            var quantity: Int
            @ExplicitNull var price: Int64?
            @ExplicitNull var currency: String?
            @ExplicitNull var revoked_at: String?
            /// null: no user of this app has claimed it yet.
            @ExplicitNull var owner_user_id: String?
        }
        var order_id: String
        var environment: String
        var transactions: [Line]

        init(_ order: AppleLookups.Order) {
            order_id = order.orderID
            environment = order.environment.rawValue
            transactions = order.lines.map { line in
                let t = line.transaction
                return Line(
                    transaction_id: t.transactionID, original_transaction_id: t.originalTransactionID, product_id: t.productID,
                    purchase_date: RFC3339.string(t.purchaseDate), quantity: t.quantity, price: t.price, currency: t.currency,
                    revoked_at: line.revokedAt.map(RFC3339.string), owner_user_id: line.owner)
            }
        }
    }

    struct ProductBody: Codable {
        var product_id: String?
        var type: String
        var entitlements: [String]?
        var grants: [String: Int64]?
        var duration: String?
        /// Offer id (App Store Connect's) → who may receive it.
        var offers: [String: OfferBody]?
        /// `app_store` (the default) or `google_play`: the same id in two stores is two products.
        var store: String?
        /// For a subscription: whether trial and offer periods grant too (default: only full-price).
        var grants_on_offers: Bool?

        init(
            type: String, productID: String?, entitlements: [String], grants: [String: Int64], duration: String?,
            offers: [String: OfferBody]? = nil, store: String? = nil, grantsOnOffers: Bool? = nil
        ) {
            self.grants_on_offers = grantsOnOffers
            self.type = type
            self.product_id = productID
            self.entitlements = entitlements
            self.grants = grants
            self.duration = duration
            self.offers = offers
            self.store = store
        }

        init(_ d: ProductDefinition) {
            self.init(
                type: d.type.rawValue, productID: d.productID, entitlements: d.entitlements, grants: d.grants,
                duration: d.duration?.description,
                offers: d.offers?.mapValues { OfferBody(eligible: $0.eligible.rawValue, lapsed_for: $0.lapsedFor?.description) },
                store: (d.store ?? .appStore).rawValue, grantsOnOffers: d.grantsOnOffers)
        }
    }

    /// `anyone`, `new` (never held the product's entitlements), `active` (holds one now) or
    /// `lapsed` (held one, none now, for at least `lapsed_for`).
    struct OfferBody: Codable {
        var eligible: String
        var lapsed_for: String?
    }

    struct TransactionRequest: Decodable { var user_id: String?; var signed_transaction: String }
    struct GooglePurchaseRequest: Decodable { var user_id: String; var product_id: String; var purchase_token: String }
    struct ReceiptRequest: Decodable { var user_id: String; var receipt_data: String }
    struct AppTransactionRequest: Decodable { var user_id: String; var signed_app_transaction: String }
    struct TokenLink: Encodable {
        var app_account_token: String
        var user_id: String
        var status: String?
        /// Each purchase of the user's, and whether Apple now keeps the token on it (absent: the
        /// app has no In-App Purchase key, so nothing was sent).
        var apple: [TokenAtApple]? = nil
    }
    struct TokenAtApple: Encodable { var original_transaction_id: String; var status: String }
    /// `POST …/users/{u}/merge`: the account merged into `u`.
    struct MergeRequest: Decodable { var from: String }

    /// `DELETE …/users/{u}`: what the erasure did, under the pseudonym that now stands for `u`.
    struct Erasure: Encodable {
        var bundle_id: String
        var pseudonym: String
        var erased_at: String
        var app_account_tokens: Int
        var events_rewritten: Int
        var rows_rewritten: Int
        var evidence_shredded: Int
        var streams_rechained: Int

        init(_ report: UserErasures.Report) {
            bundle_id = report.bundleID
            pseudonym = report.pseudonym
            erased_at = RFC3339.string(report.erasedAt)
            app_account_tokens = report.tokens
            events_rewritten = report.eventsRewritten
            rows_rewritten = report.rowsRewritten
            evidence_shredded = report.evidenceShredded
            streams_rechained = report.streamsRechained
        }
    }

    struct ConsumptionRequest: Decodable {
        var currency: String
        var amount: Int64
        var idempotency_key: String
        /// What it bought, in the game's words, and the game's id of it.
        var reason: String?
        var reference: String?
    }
    struct ConsumptionResponse: Encodable { var balance: Int64; var currency: String; var replayed: Bool }

    struct CurrencyBody: Codable {
        var code: String?
        var name: String
        /// ISO 8601 duration: each grant expires this long after it is made.
        var expires_after: String?
        /// RFC 3339: every grant expires by then.
        var expires_at: String?

        init(name: String, code: String? = nil, expiresAfter: String? = nil, expiresAt: String? = nil) {
            self.name = name
            self.code = code
            self.expires_after = expiresAfter
            self.expires_at = expiresAt
        }

        init(_ c: CurrencyDefinition) {
            self.init(name: c.name, code: c.code, expiresAfter: c.expiresAfter?.description, expiresAt: c.expiresAt.map(RFC3339.string))
        }
    }

    struct CurrencyGrantRequest: Decodable {
        var amount: Int64
        var reason: String
        var grant_id: String?
        /// RFC 3339, sooner than the currency's own policy.
        var expires_at: String?
    }

    struct SpendReversalRequest: Decodable { var reason: String }

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
        @ExplicitNull var evidence: String?
    }

    struct AuditPage: Encodable {
        var events: [AuditEvent]
        @ExplicitNull var next: String?
    }
}

/// Any JSON value, decoded and re-encoded as it was (an event's stored data, inside an answer).
enum JSONFragment: Codable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONFragment]), object([String: JSONFragment])

    init(_ data: Data) { self = (try? JSONDecoder().decode(JSONFragment.self, from: data)) ?? .null }

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let value = try? c.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? c.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? c.decode(Double.self) {
            self = .number(value)
        } else if let value = try? c.decode(String.self) {
            self = .string(value)
        } else if let value = try? c.decode([JSONFragment].self) {
            self = .array(value)
        } else {
            self = .object(try c.decode([String: JSONFragment].self))
        }
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
