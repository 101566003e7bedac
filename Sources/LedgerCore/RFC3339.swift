import Foundation
import LedgerFormats

/// RFC 3339 UTC times with milliseconds ("2026-11-21T08:00:00.123Z"), the one time format of the
/// API and the exports (written by `UTCTimestamp`: see there why by hand).
package enum RFC3339 {
    package static func string(_ date: Date) -> String {
        UTCTimestamp.text(ticks: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), fractionDigits: 3)
    }

    /// Microseconds, PostgreSQL's precision ("2026-11-21T08:00:00.123456Z"): for `known_at`, which
    /// is compared with the instants facts were recorded at, so it must not round a fact in or out.
    package static func microseconds(_ date: Date) -> String {
        UTCTimestamp.text(ticks: Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down)), fractionDigits: 6)
    }

    /// An instant as people write it in a query or on a command line: RFC 3339, or a plain date
    /// (`2026-10-01`), which means that day's midnight UTC — the month-end close finance types.
    package static func parseInstant(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return parse(text) }
        return parse(text + "T00:00:00Z").flatMap { RFC3339.string($0).hasPrefix(text) ? $0 : nil }  // 2026-02-30 is no date
    }

    /// Accepts RFC 3339 with or without fractional seconds, with any offset. UTC times with up to
    /// six fractional digits are read exactly (Foundation's parser keeps milliseconds).
    package static func parse(_ text: String) -> Date? {
        if let micros = utcMicroseconds(Array(text.utf8)) { return Date(timeIntervalSince1970: Double(micros) / 1_000_000) }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z` as microseconds since 1970, or nil for any other shape.
    static func utcMicroseconds(_ bytes: [UInt8]) -> Int64? {
        guard bytes.count >= 20, bytes.count <= 27, bytes.last == UInt8(ascii: "Z"), bytes[10] == UInt8(ascii: "T") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        var micros: Int64 = 0
        if bytes.count > 20 {
            let digits = bytes.count - 21
            guard bytes[19] == UInt8(ascii: "."), digits >= 1, let fraction = number(20..<(20 + digits)) else { return nil }
            micros = fraction
            for _ in digits..<6 { micros *= 10 }
        }
        let days = UTCTimestamp.daysFromCivil(year: year, month: month, day: day)
        guard UTCTimestamp.civil(fromDays: days) == (year, month, day) else { return nil }  // 2026-02-30 is no date
        return (days * 86_400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micros
    }
}
