import Foundation
import LedgerCore
import LedgerFormats

/// The shapes of the API's request bodies (`LedgerHTTP`'s wire types, mirrored: strings,
/// 64-bit integers, maps of them, lists, nested objects, optionals), decoded from a parsed body
/// the way the edge decodes them.
enum BodyShapes {
    struct Transaction: Decodable {
        var user_id: String
        var signed_transaction: String?
        var receipt_data: String?
        var app_account_token: String?
    }

    struct Consumption: Decodable {
        var amount: Int64
        var currency: String
        var idempotency_key: String?
        var reason: String?
    }

    struct Product: Decodable {
        var type: String
        var entitlements: [String]?
        var grants: [String: Int64]?
        var duration_days: Int?
        var price: Double?
    }

    struct ServerAPIKey: Decodable {
        var issuer_id: String
        var key_id: String
        var private_key: String
    }

    struct App: Decodable {
        var environments: [String]?
        var apple_app_id: Int64?
        var shared_secret: String?
        var restore_policy: String?
        var app_store_server_api: ServerAPIKey?
        var consumption_policy: [String: Bool]?
    }

    struct Webhook: Decodable {
        var url: String
        var secret: String
        var types: [String]?
    }

    struct Replay: Decodable {
        var from_position: Int64
    }

    struct Nested: Decodable {
        var items: [[String: [Int64?]]]?
        var flag: Bool?
        var children: [Nested]?
    }

    /// Each shape decoded from the tree; true where it decoded.
    static let all: [@Sendable (JSONTree) -> Bool] = [
        { (try? StorageDecoder.decode(Transaction.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(Consumption.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(Product.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(App.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(Webhook.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(Replay.self, from: $0)) != nil },
        { (try? StorageDecoder.decode(Nested.self, from: $0)) != nil },
        { (try? StorageDecoder.decode([String: JSONValueShape].self, from: $0)) != nil },
    ]

    /// Any JSON value, recursively: every branch of the decoder's containers.
    enum JSONValueShape: Decodable {
        case null, bool(Bool), integer(Int64), number(Double), text(String), list([JSONValueShape]), object([String: JSONValueShape])

        init(from decoder: any Decoder) throws {
            if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
                var members: [String: JSONValueShape] = [:]
                for key in keyed.allKeys { members[key.stringValue] = try keyed.decode(JSONValueShape.self, forKey: key) }
                self = .object(members)
            } else if var list = try? decoder.unkeyedContainer() {
                var items: [JSONValueShape] = []
                while !list.isAtEnd { items.append(try list.decode(JSONValueShape.self)) }
                self = .list(items)
            } else {
                let single = try decoder.singleValueContainer()
                if single.decodeNil() {
                    self = .null
                } else if let value = try? single.decode(Bool.self) {
                    self = .bool(value)
                } else if let value = try? single.decode(Int64.self) {
                    self = .integer(value)
                } else if let value = try? single.decode(Double.self) {
                    self = .number(value)
                } else {
                    self = .text(try single.decode(String.self))
                }
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) {
            self.stringValue = String(intValue)
            self.intValue = intValue
        }
    }
}
