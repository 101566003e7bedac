import Foundation
import LedgerFormats

/// `timestamptz` text in both directions. Every connection runs with `TimeZone=UTC` and
/// `DateStyle=ISO` (see `PostgresConnection.connect`), so the server prints
/// `2026-11-21 05:32:10.123456+00` and this needs no general-purpose date parser.
package enum PostgresTimestamp {
    package static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return format(microsecondsSinceEpoch: Int64(micros))
    }

    package static func format(microsecondsSinceEpoch micros: Int64) -> String {
        UTCTimestamp.text(ticks: micros, fractionDigits: 6)
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00` (also with `T` and `Z`). Nil when not in that shape.
    package static func parse(_ text: String) -> Date? {
        parseMicroseconds(text).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    package static func parseMicroseconds(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parseMicroseconds(bytes: $0) }
    }

    static func parseMicroseconds(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            while index < bytes.count, let digit = number(index..<(index + 1)) {
                micros += digit * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard index + 3 <= bytes.count, let hours = number((index + 1)..<(index + 3)) else { return nil }
            var minutes: Int64 = 0
            if index + 6 <= bytes.count, bytes[index + 3] == UInt8(ascii: ":") {
                minutes = number((index + 4)..<(index + 6)) ?? 0
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        }
        let days = UTCTimestamp.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1_000_000 + micros
    }
}
