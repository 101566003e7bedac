/// An int64 of Google's JSON. The discovery document writes int64 fields as strings
/// (`purchaseTimeMillis`, `Money.units`), and `eventTimeMillis` — documented as a long — is a
/// string in every example and on the wire; a library that switched it to a number had to switch
/// back. Both spellings are read, so neither a documented nor an observed shape is refused.
package struct Int64Text: Decodable, Sendable, Hashable, CustomStringConvertible {
    package var value: Int64

    package init(_ value: Int64) { self.value = value }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
        } else {
            let text = try container.decode(String.self)
            guard let number = Int64(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected an int64, as a number or a string")
            }
            value = number
        }
    }

    package var description: String { String(value) }
}

/// An enum of Google's written as its name (`SUBSCRIPTION_STATE_ACTIVE`): a value Google adds next
/// year is kept as it came, not refused, so a purchase in a new state still decodes and the
/// caller decides what an unknown state means.
package protocol GoogleEnumName: RawRepresentable, Decodable, Sendable, Hashable where RawValue == String {
    init(rawValue: String)
}

extension GoogleEnumName {
    package init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
}

/// An empty JSON object Google uses as a marker (`testPurchase: {}`, `freeTrial: {}`): present or not.
package struct Marker: Decodable, Sendable, Hashable {
    package init() {}
    package init(from decoder: any Decoder) throws {}
}
