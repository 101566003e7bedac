import Foundation
import LedgerFormats

/// Decodes what the ledger stores (events, timelines) the way `LedgerEvent.decoder` does —
/// dates as milliseconds since 1970 — from a `JSONTree`, several times faster. Types are
/// decoded through their ordinary `Decodable` conformances, so there is one definition of each
/// stored shape; a property test checks this decoder against `JSONDecoder` on random histories.
package enum StorageDecoder {
    package static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: try JSONTree.parse(data))
    }

    package static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try decode(type, from: try JSONTree.parse(text))
    }

    package static func decode<T: Decodable>(_ type: T.Type, from tree: JSONTree) throws -> T {
        try TreeDecoder(tree).unbox(type)
    }
}

/// No coding paths are kept: building one per field was a measurable part of the cost, and a
/// mismatch in stored data names the key and the value it found.
private struct TreeDecoder: Decoder, SingleValueDecodingContainer {
    let tree: JSONTree
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ tree: JSONTree) {
        self.tree = tree
    }

    func mismatch(_ expected: Any.Type) -> DecodingError {
        .typeMismatch(expected, .init(codingPath: [], debugDescription: "expected \(expected), found \(tree)"))
    }

    /// Dates and UUIDs have the representations the ledger's encoder gives them, not their own
    /// `Codable` ones; everything else decodes itself.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self {
            return Date(timeIntervalSince1970: try decode(Double.self) / 1000) as! T
        }
        if T.self == String.self { return try decode(String.self) as! T }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = tree else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = tree else { throw mismatch([Any].self) }
        return UnkeyedContainer(items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { if case .null = tree { true } else { false } }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let value) = tree else { throw mismatch(type) }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let value) = tree else { throw mismatch(type) }
        return value
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let text) = tree, let value = Double(text) else { throw mismatch(type) }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard case .number(let text) = tree else { throw mismatch(type) }
        if let value = I(text) { return value }
        // 1e3 or 1000.0: an integer written as a float, accepted when exact (as JSONDecoder does).
        guard let double = Double(text), let value = I(exactly: double) else { throw mismatch(type) }
        return value
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unbox(type) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [(String, JSONTree)]
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { members.compactMap { Key(stringValue: $0.0) } }

    func value(_ key: Key) -> JSONTree? { JSONTree.member(key.stringValue, of: members) }

    func child(_ key: Key) throws -> TreeDecoder {
        guard let value = value(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "no value for \(key.stringValue)"))
        }
        return TreeDecoder(value)
    }

    /// The value of an optional field: one lookup instead of the default's three.
    func present(_ key: Key) -> TreeDecoder? {
        guard let value = value(key) else { return nil }
        if case .null = value { return nil }
        return TreeDecoder(value)
    }

    func contains(_ key: Key) -> Bool { value(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { present(key) == nil }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.decode(type) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key)?.unbox(type) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).unbox(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { TreeDecoder(.object(members)) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONTree]
    var codingPath: [any CodingKey] { [] }
    var currentIndex = 0

    init(items: [JSONTree]) {
        self.items = items
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func next() throws -> TreeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: [], debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return TreeDecoder(items[currentIndex])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = items[currentIndex] else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().unbox(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

/// Typed fields of a stored JSON object, for the few hot types decoded by hand (see
/// `TransactionFacts.init(stored:)`): the same conversions as `StorageDecoder`, without the
/// Decoder protocol's per-field containers and dynamic casts.
struct StoredObject {
    let members: [(String, JSONTree)]

    init(_ tree: JSONTree) throws {
        guard case .object(let members) = tree else { throw TreeDecoder(tree).mismatch([String: Any].self) }
        self.members = members
    }

    private func present(_ key: String) -> TreeDecoder? {
        guard let value = JSONTree.member(key, of: members) else { return nil }
        if case .null = value { return nil }
        return TreeDecoder(value)
    }

    private func required(_ key: String) throws -> TreeDecoder {
        guard let field = present(key) else {
            throw DecodingError.keyNotFound(AnyKey(key), .init(codingPath: [], debugDescription: "no value for \(key)"))
        }
        return field
    }

    func string(_ key: String) throws -> String { try required(key).decode(String.self) }
    func string(ifPresent key: String) throws -> String? { try present(key)?.decode(String.self) }
    func bool(_ key: String) throws -> Bool { try required(key).decode(Bool.self) }
    func int(ifPresent key: String) throws -> Int? { try present(key)?.decode(Int.self) }
    func int(_ key: String) throws -> Int { try required(key).decode(Int.self) }
    func int64(ifPresent key: String) throws -> Int64? { try present(key)?.decode(Int64.self) }
    func date(_ key: String) throws -> Date { try required(key).unbox(Date.self) }
    func date(ifPresent key: String) throws -> Date? { try present(key)?.unbox(Date.self) }
    func value<T: Decodable>(_ type: T.Type, _ key: String) throws -> T { try required(key).unbox(type) }
    func value<T: Decodable>(_ type: T.Type, ifPresent key: String) throws -> T? { try present(key)?.unbox(type) }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension TransactionFacts {
    /// Decodes what `Codable` wrote, field by field: `Purchased` and `Renewed` are most of a
    /// log, and this is several times faster than the generic path. A test holds every stored
    /// property to it (a fully populated value decodes equal).
    init(stored tree: JSONTree) throws {
        let object = try StoredObject(tree)
        self.init(
            environment: try object.value(AppleEnvironment.self, "environment"), transactionID: try object.string("transactionID"),
            originalTransactionID: try object.string("originalTransactionID"), productID: try object.string("productID"),
            purchaseDate: try object.date("purchaseDate"), originalPurchaseDate: try object.date(ifPresent: "originalPurchaseDate"),
            expiresDate: try object.date(ifPresent: "expiresDate"), quantity: try object.int("quantity"),
            ownership: try object.value(OwnershipType.self, "ownership"), isUpgraded: try object.bool("isUpgraded"),
            price: try object.int64(ifPresent: "price"), currency: try object.string(ifPresent: "currency"),
            storefront: try object.string(ifPresent: "storefront"), webOrderLineItemID: try object.string(ifPresent: "webOrderLineItemID"),
            appAccountToken: try object.value(UUID.self, ifPresent: "appAccountToken"), offerType: try object.int(ifPresent: "offerType"),
            offerIdentifier: try object.string(ifPresent: "offerIdentifier"),
            offerDiscountType: try object.string(ifPresent: "offerDiscountType"), offerPeriod: try object.string(ifPresent: "offerPeriod"),
            appTransactionID: try object.string(ifPresent: "appTransactionID"),
            billingPlanType: try object.string(ifPresent: "billingPlanType"),
            commitment: try object.value(Commitment.self, ifPresent: "commitment"),
            revocationDate: try object.date(ifPresent: "revocationDate"),
            revocationReason: try object.int(ifPresent: "revocationReason"), signedDate: try object.date("signedDate"),
            store: try object.value(Store.self, ifPresent: "store") ?? .appStore)
    }
}
