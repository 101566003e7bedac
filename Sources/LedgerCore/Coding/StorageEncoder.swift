import Foundation

/// Encodes values for storage the way `LedgerEvent.encoder` does (dates as milliseconds
/// since 1970, nil fields left out), through a `JSONTree`, several times faster. Keys keep the
/// order the type encodes them in, not sorted: use it where the text is not hashed — timelines
/// go into `jsonb`, which orders keys itself. Event ids and hashes keep `encodedData()`.
public enum StorageEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        var out: [UInt8] = []
        try encode(value, into: &out)
        return out
    }

    /// Appends the JSON text of `value` to `out` (a COPY writer builds its rows in one buffer).
    public static func encode<T: Encodable>(_ value: T, into out: inout [UInt8]) throws {
        try Slot.box(value).write(into: &out)
    }
}

/// A value being built. Containers are reference storage because Codable hands out a container
/// and lets the caller fill it after it was attached to its parent.
private enum Slot {
    case value(JSONTree)
    case object(ObjectStorage)
    case array(ArrayStorage)

    /// Written straight from the containers, without building a `JSONTree` of them first.
    func write(into out: inout [UInt8]) {
        switch self {
        case .value(let tree): tree.write(into: &out)
        case .object(let storage):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in storage.members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONTree.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let storage):
            out.append(UInt8(ascii: "["))
            for (index, item) in storage.items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    static func box<T: Encodable>(_ value: T) throws -> Slot {
        switch value {
        case let string as String: return .value(.string(string))
        case let date as Date: return .value(try number(1000.0 * date.timeIntervalSince1970))
        default:
            let encoder = TreeEncoder()
            try value.encode(to: encoder)
            return encoder.slot ?? .object(ObjectStorage())
        }
    }

    static func number(_ value: Double) throws -> JSONTree {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "JSON has no \(value)"))
        }
        return .number(JSONTree.numberText(value))
    }
}

private final class ObjectStorage {
    var members: [(String, Slot)] = []
}

private final class ArrayStorage {
    var items: [Slot] = []
}

private final class TreeEncoder: Encoder, SingleValueEncodingContainer {
    var slot: Slot?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object(let storage) = slot { return KeyedEncodingContainer(KeyedContainer<Key>(storage: storage)) }
        let storage = ObjectStorage()
        slot = .object(storage)
        return KeyedEncodingContainer(KeyedContainer<Key>(storage: storage))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array(let storage) = slot { return UnkeyedContainer(storage: storage) }
        let storage = ArrayStorage()
        slot = .array(storage)
        return UnkeyedContainer(storage: storage)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() { slot = .value(.null) }
    func encode(_ value: Bool) { slot = .value(.bool(value)) }
    func encode(_ value: String) { slot = .value(.string(value)) }
    func encode(_ value: Double) throws { slot = .value(try Slot.number(value)) }
    func encode(_ value: Float) throws { slot = .value(try Slot.number(Double(value))) }
    func encode(_ value: Int) { slot = .value(.number(String(value))) }
    func encode(_ value: Int8) { slot = .value(.number(String(value))) }
    func encode(_ value: Int16) { slot = .value(.number(String(value))) }
    func encode(_ value: Int32) { slot = .value(.number(String(value))) }
    func encode(_ value: Int64) { slot = .value(.number(String(value))) }
    func encode(_ value: UInt) { slot = .value(.number(String(value))) }
    func encode(_ value: UInt8) { slot = .value(.number(String(value))) }
    func encode(_ value: UInt16) { slot = .value(.number(String(value))) }
    func encode(_ value: UInt32) { slot = .value(.number(String(value))) }
    func encode(_ value: UInt64) { slot = .value(.number(String(value))) }
    func encode<T: Encodable>(_ value: T) throws { slot = try Slot.box(value) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: ObjectStorage
    var codingPath: [any CodingKey] { [] }

    func add(_ key: Key, _ slot: Slot) { storage.members.append((key.stringValue, slot)) }

    mutating func encodeNil(forKey key: Key) { add(key, .value(.null)) }
    mutating func encode(_ value: Bool, forKey key: Key) { add(key, .value(.bool(value))) }
    mutating func encode(_ value: String, forKey key: Key) { add(key, .value(.string(value))) }
    mutating func encode(_ value: Int, forKey key: Key) { add(key, .value(.number(String(value)))) }
    mutating func encode(_ value: Int64, forKey key: Key) { add(key, .value(.number(String(value)))) }
    mutating func encode(_ value: Double, forKey key: Key) throws { add(key, .value(try Slot.number(value))) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { add(key, try Slot.box(value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectStorage()
        add(key, .object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(storage: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayStorage()
        add(key, .array(nested))
        return UnkeyedContainer(storage: nested)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

    private func superEncoder(named name: String) -> any Encoder {
        let encoder = TreeEncoder()
        let nested = ObjectStorage()
        encoder.slot = .object(nested)
        storage.members.append((name, .object(nested)))
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let storage: ArrayStorage
    var codingPath: [any CodingKey] { [] }
    var count: Int { storage.items.count }

    mutating func encodeNil() { storage.items.append(.value(.null)) }
    mutating func encode(_ value: String) { storage.items.append(.value(.string(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { storage.items.append(try Slot.box(value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectStorage()
        storage.items.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(storage: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayStorage()
        storage.items.append(.array(nested))
        return UnkeyedContainer(storage: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = TreeEncoder()
        let nested = ObjectStorage()
        encoder.slot = .object(nested)
        storage.items.append(.object(nested))
        return encoder
    }
}
