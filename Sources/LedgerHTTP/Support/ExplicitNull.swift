/// An optional member of an answer written as `null` when absent: the synthesized `Encodable`
/// leaves such a key out, and clients read a fixed shape.
@propertyWrapper
struct ExplicitNull<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value = wrappedValue { try container.encode(value) } else { try container.encodeNil() }
    }
}

extension ExplicitNull: Sendable where Value: Sendable {}
