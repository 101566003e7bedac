import Foundation

/// An ISO 8601 duration such as `P30D`, `P1M`, `P1Y2M`, `PT12H` or `P1W`, added in UTC calendar
/// arithmetic (so `P1M` from 31 January is the end of February, as Apple's own periods behave).
package struct ISODuration: Codable, Sendable, Hashable, CustomStringConvertible {
    package var years = 0, months = 0, weeks = 0, days = 0, hours = 0, minutes = 0, seconds = 0
    package let description: String

    package init?(_ text: String) {
        description = text
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return nil }
        rest = rest.dropFirst()
        var inTime = false
        var number = ""
        var sawComponent = false
        for char in rest {
            if char == "T" { guard !inTime, number.isEmpty else { return nil }; inTime = true; continue }
            if char.isASCII, char.isNumber { number.append(char); continue }
            guard let value = Int(number), value >= 0 else { return nil }
            number = ""
            sawComponent = true
            switch (inTime, char) {
            case (false, "Y"): years = value
            case (false, "M"): months = value
            case (false, "W"): weeks = value
            case (false, "D"): days = value
            case (true, "H"): hours = value
            case (true, "M"): minutes = value
            case (true, "S"): seconds = value
            default: return nil
            }
        }
        guard number.isEmpty, sawComponent else { return nil }
    }

    package func added(to date: Date) -> Date {
        var components = DateComponents()
        components.year = years
        components.month = months
        components.day = days + weeks * 7
        components.hour = hours
        components.minute = minutes
        components.second = seconds
        return Self.calendar.date(byAdding: components, to: date) ?? date
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = ISODuration(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 duration: \(text)"))
        }
        self = parsed
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
